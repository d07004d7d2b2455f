"""Calibrate the two gate thresholds on the SQuAD 2.0 subset and write rag/calibration.json.

Every paragraph is its own knowledge base and every question is asked of its own paragraph only
(benchmarks/squad_kb.py). Each question runs once with both thresholds at -1 and no retry, so no
threshold gates anything, and the gate log gives, per question: the best dense cosine (what the
retrieval threshold gates), the best sentence's rerank score over the question's parts (what the
answer threshold gates), and whether the premise gate passed. A question is "answered" at
thresholds (r, a) when it was delivered with the gates open, its premise passed, its cosine
reaches r and its sentence score reaches a.

Thresholds are chosen on the calibration half (article titles at even positions, see
`split_by_title`) and only reported on the other half:

- retrieval_threshold: the largest r (0.01 steps) at which the retrieval gate blocks at most 2% of
  the answerable calibration questions: a coarse off-topic filter that almost never blocks an
  answerable question;
- answer_threshold: with r fixed, the a (0.01 steps) maximising answerable-answered % minus
  unanswerable-answered %, subject to answering at least 90% of the answerable questions (at most
  10% wrong abstention, the product target); the largest such a on ties.

    python benchmarks/calibrate.py              # runs the questions, writes rag/calibration.json
    python benchmarks/calibrate.py --dry-run    # prints the JSON without writing it
    python benchmarks/calibrate.py --reuse      # threshold maths on the cached per-question records
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, load_squad, split_by_title
from benchmarks.squad_kb import (
    Record,
    ask_all,
    code_version,
    ensure_knowledge_bases,
    load_records,
    prepare_home,
    save_records,
)
from rag.config import CALIBRATION, load_settings
from rag.runtime import open_candor

RECORDS = CACHE / "calibration-records.json"
MAX_RETRIEVAL_BLOCK = 0.02
MIN_ANSWERABLE_ANSWERED = 0.90
STEP = 0.01
CURVE_ROWS = 15

Gate = Callable[[Record, float], bool]


def retrieval_passes(r: Record, tau: float) -> bool:
    return r.retrieval_score >= tau


def answered(r: Record, retrieval: float, answer: float) -> bool:
    """Would the pipeline deliver this answer at these thresholds (simulated from the open-gate run)?"""
    return r.delivered and r.premise_passed and r.retrieval_score >= retrieval and r.sentence_score >= answer


def rate(n: int, total: int) -> float:
    return n / total if total else float("nan")


def tally(records: Sequence[Record], retrieval: float, answer: float) -> dict[str, Any]:
    yes = [r for r in records if r.answerable]
    no = [r for r in records if not r.answerable]
    a = sum(answered(r, retrieval, answer) for r in yes)
    u = sum(answered(r, retrieval, answer) for r in no)
    return {
        "answerable_answered": a,
        "answerable": len(yes),
        "answerable_answered_pct": round(100 * rate(a, len(yes)), 1),
        "unanswerable_answered": u,
        "unanswerable": len(no),
        "unanswerable_answered_pct": round(100 * rate(u, len(no)), 1),
    }


def grid(lo: float, hi: float) -> list[float]:
    """Thresholds on a 0.01 grid covering [lo, hi]."""
    start, stop = math.floor(lo / STEP), math.ceil(hi / STEP)
    return [round(i * STEP, 2) for i in range(start, stop + 1)]


def curve_points(values: Sequence[float]) -> list[float]:
    """About CURVE_ROWS thresholds, evenly spaced from the smallest to the largest observed value."""
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        return [round(lo, 3)]
    return [round(lo + (hi - lo) * i / (CURVE_ROWS - 1), 3) for i in range(CURVE_ROWS)]


def curve(
    records: Sequence[Record], points: Sequence[float], row: Callable[[float], tuple[float, float]]
) -> list[dict[str, Any]]:
    return [{"tau": tau, **tally(records, *row(tau))} for tau in points]


def choose_retrieval(records: Sequence[Record]) -> float:
    """The largest threshold at which the retrieval gate blocks ≤ 2% of the answerable questions."""
    scores = [r.retrieval_score for r in records if r.answerable]
    allowed = math.floor(MAX_RETRIEVAL_BLOCK * len(scores))
    ok = [tau for tau in grid(min(scores), max(scores)) if sum(s < tau for s in scores) <= allowed]
    return max(ok)


def choose_answer(records: Sequence[Record], retrieval: float, floor: float = MIN_ANSWERABLE_ANSWERED) -> float | None:
    """The answer threshold maximising the answer-rate gap among those answering ≥ `floor` of the
    answerable questions (the largest on ties); None when no threshold answers that many."""
    scores = [r.sentence_score for r in records]
    best: tuple[float, float] | None = None
    for tau in grid(min(scores), max(scores)):
        t = tally(records, retrieval, tau)
        share = rate(t["answerable_answered"], t["answerable"])
        gap = share - rate(t["unanswerable_answered"], t["unanswerable"])
        if share >= floor - 1e-12 and (best is None or (gap, tau) >= best):
            best = (gap, tau)
    return None if best is None else best[1]


def most_answering(records: Sequence[Record], retrieval: float) -> float:
    """The largest answer threshold that still answers as many answerable questions as any."""
    scores = [r.sentence_score for r in records]
    taus = grid(min(scores), max(scores))
    counts = [tally(records, retrieval, tau)["answerable_answered"] for tau in taus]
    return max(tau for tau, n in zip(taus, counts, strict=True) if n == max(counts))


def blocked_by_retrieval(records: Sequence[Record], tau: float) -> tuple[int, int]:
    yes = [r for r in records if r.answerable]
    return sum(not retrieval_passes(r, tau) for r in yes), len(yes)


def print_curve(title: str, rows: Sequence[dict[str, Any]], extra: Callable[[float], str] | None = None) -> None:
    print(f"\n{title}")
    head = f"  {'tau':>7}  {'answerable answered':>22}  {'unanswerable answered':>22}"
    print(head + ("  retrieval gate blocks (answerable)" if extra else ""))
    for row in rows:
        line = (
            f"  {row['tau']:>7.3f}  "
            f"{row['answerable_answered']:>4}/{row['answerable']:<4} {row['answerable_answered_pct']:>6.1f}%       "
            f"{row['unanswerable_answered']:>4}/{row['unanswerable']:<4} {row['unanswerable_answered_pct']:>6.1f}%"
        )
        print(line + (f"       {extra(row['tau'])}" if extra else ""))


def describe(t: dict[str, Any]) -> str:
    return (
        f"answerable answered {t['answerable_answered']}/{t['answerable']} ({t['answerable_answered_pct']}%), "
        f"wrong abstention {t['answerable'] - t['answerable_answered']}/{t['answerable']} "
        f"({round(100 - t['answerable_answered_pct'], 1)}%); "
        f"unanswerable answered {t['unanswerable_answered']}/{t['unanswerable']} ({t['unanswerable_answered_pct']}%)"
    )


async def collect(rebuild: bool) -> tuple[dict[str, Any], list[Record]]:
    paragraphs, questions = load_squad()
    home = prepare_home(rebuild)
    settings = load_settings(home=home, database_url=None, retrieval_threshold=-1.0, answer_threshold=-1.0, retry=False)
    start = time.perf_counter()
    async with open_candor(settings) as candor:
        await ensure_knowledge_bases(candor, paragraphs, progress=lambda line: print(line, flush=True))
        print(f"asking {len(questions)} questions with both thresholds at -1 and no retry", flush=True)
        records = await ask_all(candor, questions, progress=lambda line: print(line, flush=True))
        embedder = candor.embedder.name
    meta = {
        "code": code_version(),
        "questions": len(records),
        "embedder": embedder,
        "seconds": round(time.perf_counter() - start, 1),
        "date": date.today().isoformat(),
    }
    save_records(RECORDS, meta, records)
    print(f"per-question records cached in {RECORDS} ({meta['seconds']}s)")
    return meta, records


def dump(value: Any, indent: str = "") -> str:
    """JSON with one line per curve row: nested objects indented, objects of scalars on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return "[\n" + ",\n".join(f"{inner}{dump(v, inner)}" for v in value) + f"\n{indent}]"
    return json.dumps(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print rag/calibration.json without writing it")
    parser.add_argument("--reuse", action="store_true", help=f"reuse the per-question records in {RECORDS}")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached knowledge bases")
    args = parser.parse_args()

    if args.reuse and RECORDS.exists():
        meta, records = load_records(RECORDS)
        print(f"reusing {len(records)} per-question records from {RECORDS} (collected {meta.get('date')})")
    else:
        if args.reuse:
            print(f"no cached records in {RECORDS}: running the questions")
        meta, records = asyncio.run(collect(args.rebuild))

    by_question = {(r.question, r.paragraph_id): r for r in records}
    _, questions = load_squad()
    calib_q, report_q = split_by_title(questions)
    calib = [by_question[(q.question, q.paragraph_id)] for q in calib_q]
    report = [by_question[(q.question, q.paragraph_id)] for q in report_q]
    print(
        f"calibration half: {len(calib)} questions ({sum(r.answerable for r in calib)} answerable); "
        f"report half: {len(report)} ({sum(r.answerable for r in report)} answerable)"
    )
    open_gates = [r for r in calib if r.answerable and not (r.delivered and r.premise_passed)]
    premise = sum(not r.premise_passed for r in calib if r.answerable)
    print(
        f"answerable calibration questions not delivered even with the thresholds open: {len(open_gates)} "
        f"({premise} by the premise gate, {len(open_gates) - premise} by the critic)"
    )

    retrieval_rows = curve(calib, curve_points([r.retrieval_score for r in calib]), lambda tau: (tau, -1.0))
    print_curve(
        "retrieval threshold (best dense cosine), answer threshold open -- calibration half",
        retrieval_rows,
        lambda tau: "{}/{}".format(*blocked_by_retrieval(calib, tau)),
    )
    retrieval = choose_retrieval(calib)
    blocked, n_yes = blocked_by_retrieval(calib, retrieval)
    answer_rows = curve(calib, curve_points([r.sentence_score for r in calib]), lambda tau: (retrieval, tau))
    print_curve(
        f"answer threshold (best sentence rerank score), retrieval threshold {retrieval} -- calibration half",
        answer_rows,
    )
    constrained = choose_answer(calib, retrieval)
    answer = constrained if constrained is not None else most_answering(calib, retrieval)
    unconstrained = choose_answer(calib, retrieval, floor=0.0)
    assert unconstrained is not None
    ceiling = tally(calib, retrieval, -1.0)
    not_delivered = sum(
        r.answerable and retrieval_passes(r, retrieval) and not (r.delivered and r.premise_passed) for r in calib
    )
    note = None
    if constrained is None:
        note = (
            f"answering >= 90% of the answerable calibration questions is out of reach at any answer threshold: "
            f"with it open {ceiling['answerable_answered']}/{ceiling['answerable']} are answered "
            f"({blocked} blocked by the retrieval gate, {not_delivered} more abstained by the premise gate or the "
            f"critic whatever the thresholds); "
            f"the answer threshold is the largest that answers as many as the open gate"
        )

    calib_t, report_t, all_t = (tally(x, retrieval, answer) for x in (calib, report, records))
    print(f"\nchosen retrieval_threshold = {retrieval}: blocks {blocked}/{n_yes} answerable calibration questions")
    if note is None:
        print(f"chosen answer_threshold = {answer}: the largest answer-rate gap with >= 90% of answerable answered")
    else:
        print(f"chosen answer_threshold = {answer}: {note}")
    t = tally(calib, retrieval, unconstrained)
    print(
        f"  (for reference, the largest gap without the 90% floor is at {unconstrained}: "
        f"{t['answerable_answered_pct']}% vs {t['unanswerable_answered_pct']}% answered)"
    )
    print(f"  calibration half: {describe(calib_t)}")
    print(f"  report half:      {describe(report_t)}")
    print(f"  all {len(records)}:          {describe(all_t)}")

    n_calib = len(calib)
    out = {
        "retrieval_threshold": retrieval,
        "answer_threshold": answer,
        "calibrated_on": f"squad2-1000 calibration half (titles at even positions), {n_calib} questions",
        "date": meta.get("date", date.today().isoformat()),
        "command": "python benchmarks/calibrate.py",
        "embedder": meta.get("embedder"),
        "code": meta.get("code"),
        "rule": {
            "retrieval_threshold": "largest tau (0.01 grid) blocking <= 2% of answerable calibration questions",
            "answer_threshold": (
                "tau (0.01 grid) maximising answerable% - unanswerable% with answerable answered >= 90% "
                "(largest on ties); when no tau reaches 90%, the largest tau answering as many as the open gate"
            ),
        },
        **({"note": note} if note else {}),
        "curves": {"retrieval_threshold": retrieval_rows, "answer_threshold": answer_rows},
        "calibration_half": calib_t,
        "report_half": {"questions": len(report), **report_t},
    }
    text = dump(out)
    print(f"\n{CALIBRATION}{' (dry run, not written)' if args.dry_run else ''}:\n{text}")
    if not args.dry_run:
        CALIBRATION.write_text(text + "\n", encoding="utf-8")
        print(f"written {CALIBRATION}")


if __name__ == "__main__":
    main()
