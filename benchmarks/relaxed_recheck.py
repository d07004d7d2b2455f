"""Calibrate and measure the relaxed re-check (rag/insights/relaxed.py) that `candor gaps` labels clusters with.

Every question is re-checked once with the threshold open (`recheck(..., threshold=-inf)`), which
records its relaxed score (the best readable sentence's rerank score over the question and its
content-words form, shortlist three times CANDOR_SHORTLIST) and the names it uses that no passage of
that shortlist mentions; a question is labelled `possibly_answerable` at threshold tau when its score
reaches tau and it names nothing unknown, `true_gap` otherwise. The score
does not depend on what the pipeline did with the question, so every question counts, not only those
the pipeline abstained on.

Calibration sets (the threshold is chosen on these only):

- sample/dev.yaml over the cached handbook home (benchmarks/handbook_kb.py), each question with its
  own `required_access` groups over the knowledge base "handbook";
- the SQuAD 2.0 calibration half (titles at even positions, `split_by_title`), each question over
  its own paragraph's knowledge base (benchmarks/squad_kb.py).

Rule: the largest tau (0.01 grid) at which at most 5% of the answerable questions of EACH calibration
set are labelled `true_gap` (a "true gap" must be reliable, and "possibly answerable" must catch
most answerable questions), and strictly below the pipeline's answer threshold (a relaxed check
must never be stricter than the pipeline it second-guesses).

Report set (measured, never used to choose): sample/golden.yaml through the same handbook home: of
its unanswerable questions how many are labelled true_gap, of its answerable questions how many
possibly_answerable (with the top evidence's document among the item's sources), and the same per
part for its multi-part questions (each part re-checked alone, as `candor gaps` re-checks an
unanswered part).

    python benchmarks/relaxed_recheck.py             # re-check, choose, write relaxed_threshold
    python benchmarks/relaxed_recheck.py --dry-run   # print, do not write rag/calibration.json
    python benchmarks/relaxed_recheck.py --reuse     # threshold maths on the cached scores
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb, squad_kb
from benchmarks.calibrate import dump
from benchmarks.common import CACHE, REPO, load_squad, split_by_title
from rag.calibration import CALIBRATION, calibrated
from rag.config import load_settings
from rag.insights.evaluation.golden import load_golden
from rag.insights.relaxed import recheck
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor

RECORDS = CACHE / "relaxed-recheck-records.json"
DEV = REPO / "sample" / "dev.yaml"
GOLDEN = REPO / "sample" / "golden.yaml"
MAX_MISSED = 0.05
STEP = 0.01
CURVE_STEP = 0.05
EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Scored:
    id: str
    text: str
    answerable: bool
    score: float
    top_document: str
    sources: tuple[str, ...]
    part: bool = False
    unknown: tuple[str, ...] = ()

    def possibly(self, tau: float) -> bool:
        """`recheck`'s label at threshold tau."""
        return self.score >= tau - EPS and not self.unknown

    @property
    def right_document(self) -> bool:
        stem = Path(self.top_document).stem
        return bool(self.sources) and stem in self.sources


async def score(candor: Candor, id_: str, text: str, scope: AccessScope, answerable: bool, **extra: Any) -> Scored:
    k = 3 * candor.settings.shortlist
    found = await recheck(candor, text, scope, threshold=-math.inf, k=k)
    top = found.evidence[0].document if found.evidence else ""
    sources, part = tuple(extra.get("sources", ())), extra.get("part", False)
    return Scored(id_, text, answerable, found.score, top, sources, part, found.unknown_names)


async def collect_handbook() -> dict[str, list[Scored]]:
    settings = load_settings(home=handbook_kb.prepare_home(), database_url=None)
    out: dict[str, list[Scored]] = {"dev": [], "golden": [], "golden_parts": []}
    async with open_candor(settings) as candor:
        await handbook_kb.ensure_handbook(candor)
        for key, path in (("dev", DEV), ("golden", GOLDEN)):
            for item in load_golden(path):
                scope = handbook_kb.scope_for(item)
                out[key].append(
                    await score(candor, item.id, item.question, scope, item.answerable, sources=item.sources)
                )
                if key == "golden":
                    for n, part in enumerate(item.parts, 1):
                        sources = item.sources if part.answerable else ()
                        made = await score(candor, f"{item.id}#{n}", part.text, scope, part.answerable, sources=sources)
                        out["golden_parts"].append(made)
    return out


async def collect_squad() -> list[Scored]:
    paragraphs, questions = load_squad()
    calibration, _ = split_by_title(questions)
    settings = load_settings(home=squad_kb.prepare_home(), database_url=None)
    out = []
    start = time.perf_counter()
    async with open_candor(settings) as candor:
        await squad_kb.ensure_knowledge_bases(candor, paragraphs)
        for i, q in enumerate(calibration, 1):
            out.append(await score(candor, q.paragraph_id, q.question, squad_kb.scope_for(q), q.answerable))
            if i % 100 == 0:
                print(f"  squad {i}/{len(calibration)} ({time.perf_counter() - start:.0f}s)", flush=True)
    return out


def tally(records: Sequence[Scored], tau: float) -> dict[str, Any]:
    yes = [r for r in records if r.answerable]
    no = [r for r in records if not r.answerable]
    caught = sum(r.possibly(tau) for r in yes)
    gaps = sum(not r.possibly(tau) for r in no)
    return {
        "answerable_possibly": caught,
        "answerable": len(yes),
        "answerable_possibly_pct": pct(caught, len(yes)),
        "unanswerable_true_gap": gaps,
        "unanswerable": len(no),
        "unanswerable_true_gap_pct": pct(gaps, len(no)),
    }


def pct(n: int, total: int) -> float | None:
    return round(100 * n / total, 1) if total else None


def grid(lo: float, hi: float, step: float = STEP) -> list[float]:
    return [round(i * step, 2) for i in range(math.floor(lo / step + EPS), math.ceil(hi / step - EPS) + 1)]


def choose(sets: Sequence[Sequence[Scored]], ceiling: float) -> float:
    """The largest tau below `ceiling` labelling <= 5% of each set's answerable questions true_gap."""

    def ok(tau: float) -> bool:
        for records in sets:
            yes = [r for r in records if r.answerable]
            if sum(not r.possibly(tau) for r in yes) > math.floor(MAX_MISSED * len(yes)):
                return False
        return True

    scores = [r.score for s in sets for r in s]
    return max(t for t in grid(min(scores), ceiling - STEP) if ok(t))


def describe(t: dict[str, Any]) -> str:
    return (
        f"answerable labelled possibly_answerable {t['answerable_possibly']}/{t['answerable']} "
        f"({t['answerable_possibly_pct']}%); unanswerable labelled true_gap "
        f"{t['unanswerable_true_gap']}/{t['unanswerable']} ({t['unanswerable_true_gap_pct']}%)"
    )


def curve(records: Sequence[Scored], chosen: float) -> list[dict[str, Any]]:
    scores = [r.score for r in records]
    points = sorted(set(grid(min(scores), max(scores), CURVE_STEP)) | {chosen})
    return [{"tau": tau, **tally(records, tau)} for tau in points]


def with_keys(text: str, added: dict[str, Any]) -> str:
    """rag/calibration.json with `added` set: existing keys keep their place, new ones go last, and the
    rest of the text is unchanged (the file is `dump`'s output, which this checks)."""
    data = json.loads(text)
    if dump(data) + "\n" != text:
        raise SystemExit(f"{CALIBRATION} is not in benchmarks/calibrate.py's layout: not rewriting it")
    return dump({**data, **added}) + "\n"


def print_questions(label: str, records: Sequence[Scored], tau: float) -> None:
    print(f"\nper question, {label} (* = possibly_answerable at {tau})")
    for r in sorted(records, key=lambda r: (not r.answerable, r.score)):
        yes = r.possibly(tau)
        verdict = ("ok" if yes else "MISSED") if r.answerable else ("ok" if not yes else "possibly")
        where = Path(r.top_document).name
        right = "" if not r.answerable else (" right document" if r.right_document else " OTHER document")
        kind = "A" if r.answerable else "U"
        unknown = f"  names no document: {', '.join(r.unknown)}" if r.unknown else ""
        print(f"  {'*' if yes else ' '} {r.id:<34} {kind} {r.score:.3f} {verdict:<8} {where}{right}{unknown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print, do not write rag/calibration.json")
    parser.add_argument("--reuse", action="store_true", help="reuse the cached per-question scores")
    args = parser.parse_args()

    if args.reuse and RECORDS.exists():
        data = json.loads(RECORDS.read_text(encoding="utf-8"))
        sets = {
            k: [Scored(**{**r, "sources": tuple(r["sources"]), "unknown": tuple(r.get("unknown", ()))}) for r in v]
            for k, v in data["sets"].items()
        }
        print(f"reusing the scores in {RECORDS} ({data['date']})")
    else:
        start = time.perf_counter()
        sets = asyncio.run(collect_handbook())
        sets["squad"] = asyncio.run(collect_squad())
        payload = {"date": date.today().isoformat(), "sets": {k: [asdict(r) for r in v] for k, v in sets.items()}}
        RECORDS.parent.mkdir(parents=True, exist_ok=True)
        RECORDS.write_text(json.dumps(payload), encoding="utf-8")
        print(f"scores cached in {RECORDS} ({time.perf_counter() - start:.0f}s)")

    answer_threshold = calibrated("answer_threshold", 0.5)
    tau = choose([sets["dev"], sets["squad"]], answer_threshold)
    labels = {
        "dev": f"sample/dev.yaml ({len(sets['dev'])} questions)",
        "squad": f"squad2-1000 calibration half ({len(sets['squad'])} questions)",
        "golden": f"sample/golden.yaml ({len(sets['golden'])} questions)",
        "golden_parts": f"sample/golden.yaml parts of multi-part questions ({len(sets['golden_parts'])} parts)",
    }
    print(
        f"\nrelaxed threshold {tau} (answer threshold {answer_threshold}); rule: largest tau (0.01 grid) below "
        f"the answer threshold labelling <= {MAX_MISSED:.0%} of each calibration set's answerable questions true_gap"
    )
    print("\ncurve, calibration sets:")
    for key in ("dev", "squad"):
        for row in curve(sets[key], tau):
            mark = "*" if row["tau"] == tau else " "
            print(f" {mark} {key:<6} tau {row['tau']:.2f}  {describe(row)}")
    print("\ncalibration sets at the chosen threshold:")
    for key in ("dev", "squad"):
        print(f"  {labels[key]}: {describe(tally(sets[key], tau))}")
    print("report set (measured only, nothing chosen on it):")
    for key in ("golden", "golden_parts"):
        records = sets[key]
        caught = [r for r in records if r.answerable and r.possibly(tau)]
        print(
            f"  {labels[key]}: {describe(tally(records, tau))}; top evidence from a gold source "
            f"{sum(r.right_document for r in caught)}/{len(caught)} of those caught"
        )
    for key in ("dev", "golden", "golden_parts"):
        print_questions(labels[key], sets[key], tau)

    added = {
        "relaxed_threshold": tau,
        "relaxed_recheck": {
            "command": "python benchmarks/relaxed_recheck.py",
            "date": date.today().isoformat(),
            "score": "best readable sentence rerank score over the question and retry_query(question), "
            "shortlist 3 x CANDOR_SHORTLIST (rag/insights/relaxed.py); a question naming something no passage of that "
            "shortlist mentions is a true gap whatever its score",
            "rule": f"largest tau (0.01 grid) strictly below answer_threshold ({answer_threshold}) at which at most "
            f"{MAX_MISSED:.0%} of the answerable questions of each calibration set are labelled true_gap",
            "calibrated_on": [labels["dev"], labels["squad"]],
            "reported_on": [labels["golden"], labels["golden_parts"]],
            "curves": {key: curve(sets[key], tau) for key in ("dev", "squad")},
            "calibration": {key: tally(sets[key], tau) for key in ("dev", "squad")},
            "report_check": {key: tally(sets[key], tau) for key in ("golden", "golden_parts")},
        },
    }
    text = with_keys(CALIBRATION.read_text(encoding="utf-8"), added)
    json.loads(text)
    if args.dry_run:
        print(f"\n{CALIBRATION} (dry run, not written): relaxed_threshold {tau}")
        return
    CALIBRATION.write_text(text, encoding="utf-8")
    print(f"\nwritten relaxed_threshold {tau} to {CALIBRATION}")


if __name__ == "__main__":
    main()
