"""End-to-end answers on RAMDocs: conflicting, misleading and noisy documents per question.

RAMDocs (../shared/data/ramdocs, Wang et al. 2025) gives every question its own 2-8 Wikipedia
documents, each typed `correct`, `misinfo` (a planted wrong answer) or `noise`, with the question's
`gold_answers` (1-3 valid: same-named entities make some questions ambiguous) and `wrong_answers`.
The first `--questions` lines of the file (default 150, in file order: deterministic) each become
one knowledge base, `ramdocs-<line index>`, holding that question's documents as Markdown files
titled "Document k"; each question is asked through `Candor.answer` with an access scope reading
its own knowledge base only, with the settings as configured (rag/calibration.json unless CANDOR_*
variables say otherwise).

Every document is written with `effective_date: 2020-01-01` in its front matter. RAMDocs documents
carry no dates, and without the front matter the effective date would come from the file's
modification time, which differs by write order: a conflict would then be "decided" by whichever
file happened to be written last. With one date for all, dates never decide and a conflict note
prefers nothing (all documents also share one authority).

Measured per subset (questions with at least one `misinfo` document, the rest, all), with counts:

- answered / low_confidence / abstained (the route);
- names the gold answer: any gold answer appears (case-insensitive) in the answer text;
- states a wrong answer as fact: a wrong answer appears in the answer's asserted sentences (not in
  its conflict notes, nor in a sentence marked `disputed`: one side of a disagreement neither
  source's date nor authority settles, given beside the other side and asserting neither). Wrong
  answers equal to a gold answer are ignored, and gold-answer occurrences are blanked before
  matching ("Football" is wrong but inside "American football", which is gold);
- also in any sentence, disputed or not (the measure before answers gave both sides);
- also in the text at all (sentences or notes), and whether a `misinfo` document is cited;
- surfaces the disagreement: `answer.conflicts` non-empty; for misinfo questions also whether one
  conflict's values include both a gold and a wrong answer;
- misinfo questions by what the planted wrong answer is: a value the offline contradiction
  detector compares (an amount, a duration, a count with a unit: `rag.text.facts.values`), a date or a
  bare number, or a name (a person, a place, a title: anything else);
- p50/p95 of `timings_ms["total"]`.

Then five answers that stated a wrong answer as fact. Matching is by string: "3,559" in an answer
does not match the gold "3,559 people", so "names the gold" is a lower bound.

The built Candor home is cached under benchmarks/.cache/ramdocs-home/ (one fingerprint per
knowledge base: the question's documents and the embedder); reruns reuse it, a larger
`--questions` ingests only the new ones; `--rebuild` starts over.

    HF_HUB_OFFLINE=1 python benchmarks/ramdocs_answers.py [--questions 150] [--json] [--rebuild]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, RAMDOCS, cached_home, percentile
from benchmarks.squad_kb import code_version
from rag.config import load_settings
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor
from rag.text.facts import values

HOME = CACHE / "ramdocs-home"
"""Cached Candor home (embedded Postgres) and corpus; delete it, or pass --rebuild, to start over."""

COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/ramdocs_answers.py"
CORPUS_FORMAT = 1
"""Bump when the Markdown written per document changes."""

REPORTED = 150
"""The first 150 questions are the reported set; the rest of the file (350) is development data."""
COMPARED_KINDS = "amount, duration or count (a unit)"
DATE_OR_NUMBER = "date or bare number"
NAME = "name or other"


@dataclass(frozen=True, slots=True)
class Item:
    index: int
    question: str
    documents: tuple[tuple[str, str, str], ...]
    """(text, type, answer) per document, in file order."""
    gold: tuple[str, ...]
    wrong: tuple[str, ...]

    @property
    def kb(self) -> str:
        return f"ramdocs-{self.index}"

    @property
    def misinfo(self) -> bool:
        return any(kind == "misinfo" for _, kind, _ in self.documents)


def load_items(n: int, path: Path = RAMDOCS, *, development: bool = False) -> list[Item]:
    """The first `n` questions of the file (the reported ones), or with `development` the questions
    after the first REPORTED, never reported: the ones rules may be read and tried on."""
    items = []
    lines = path.read_text(encoding="utf-8").splitlines()
    chosen = range(REPORTED, len(lines)) if development else range(min(n, len(lines)))
    for index in chosen:
        row = json.loads(lines[index])
        docs = tuple((d["text"], d["type"], str(d.get("answer", ""))) for d in row["documents"])
        items.append(Item(index, row["question"], docs, tuple(row["gold_answers"]), tuple(row["wrong_answers"])))
    return items


def document_file(k: int) -> str:
    return f"document-{k}.md"


def write_kb(folder: Path, item: Item) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for k, (text, _, _) in enumerate(item.documents, 1):
        body = " ".join(text.split())
        (folder / document_file(k)).write_text(
            f'---\ntitle: "Document {k}"\neffective_date: 2020-01-01\n---\n\n{body}\n', encoding="utf-8"
        )


def fingerprint(item: Item, embedder: str) -> str:
    digest = hashlib.sha1(f"{CORPUS_FORMAT}\t{embedder}\t{item.kb}\n".encode())
    for text, _, _ in item.documents:
        digest.update(hashlib.sha1(text.encode()).digest())
    return digest.hexdigest()[:16]


def prepare_home(rebuild: bool = False) -> Path:
    return cached_home(HOME, rebuild)


async def ensure_knowledge_bases(
    candor: Candor, items: Sequence[Item], progress: Callable[[str], None]
) -> tuple[float, list[list[str]]]:
    """Ingest every question's documents into its own knowledge base unless already built.

    Returns the seconds this run spent ingesting and the files the ingestor skipped among `items`
    ([kb, file, document type, reason]: a few RAMDocs documents are scraped binary, which the
    ingestor rejects as a real deployment would)."""
    stamp = HOME / "built.json"
    built = json.loads(stamp.read_text(encoding="utf-8")) if stamp.exists() else {}
    kbs: dict[str, str] = built.get("kbs", {})
    skipped: dict[str, list[list[str]]] = built.get("skipped", {})
    todo = [item for item in items if kbs.get(item.kb) != fingerprint(item, candor.embedder.name)]
    wanted = {item.kb for item in items}

    def skipped_here() -> list[list[str]]:
        return [[kb, *row] for kb, rows in sorted(skipped.items()) if kb in wanted for row in rows]

    if not todo and built.get("analyzed"):
        progress(f"reusing the cached knowledge bases in {HOME} ({len(items)} questions)")
        return 0.0, skipped_here()
    start = time.perf_counter()
    progress(f"ingesting {len(todo)} questions' documents, one knowledge base each (cached in {HOME})")
    chunks = 0
    for i, item in enumerate(todo, 1):
        folder = HOME / "corpus" / item.kb
        write_kb(folder, item)
        kb = await candor.knowledge_base(item.kb, create=True)
        assert kb is not None
        report = await candor.ingestor().ingest([folder], kb=kb, prune=True)
        types = {document_file(k): kind for k, (_, kind, _) in enumerate(item.documents, 1)}
        skipped.pop(item.kb, None)
        for path, reason in report.skipped:
            skipped.setdefault(item.kb, []).append([Path(path).name, types.get(Path(path).name, "?"), reason])
            progress(f"  {item.kb}: the ingestor skipped {Path(path).name} ({types.get(Path(path).name)}): {reason}")
        chunks += report.chunks
        kbs[item.kb] = fingerprint(item, candor.embedder.name)
        stamp.write_text(json.dumps({"kbs": kbs, "skipped": skipped, "analyzed": False}), encoding="utf-8")
        if i % 25 == 0:
            progress(f"  {i}/{len(todo)} knowledge bases, {time.perf_counter() - start:.0f}s")
    await candor.store.analyze()
    counts = await candor.store.counts()
    stamp.write_text(
        json.dumps({"kbs": kbs, "skipped": skipped, "analyzed": True, "embedder": candor.embedder.name, **counts})
    )
    seconds = time.perf_counter() - start
    progress(f"ingested in {seconds:.0f}s: {counts} (this run added {chunks} chunks)")
    return seconds, skipped_here()


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _contains(hay: str, needle: str) -> bool:
    """`needle` in `hay`, case-insensitive, not inside a longer word."""
    needle = _norm(needle)
    if not needle:
        return False
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", _norm(hay)) is not None


def effective_wrong(item: Item) -> list[str]:
    """The wrong answers that are not also gold (RAMDocs lists a few answers as both)."""
    gold = {_norm(g) for g in item.gold}
    return sorted({w for w in item.wrong if _norm(w) and _norm(w) not in gold}, key=str.lower)


def wrong_in(text: str, item: Item) -> list[str]:
    """The wrong answers `text` states, after blanking the gold answers it contains."""
    hay = _norm(text)
    for g in sorted(item.gold, key=len, reverse=True):
        if _norm(g):
            hay = re.sub(rf"(?<!\w){re.escape(_norm(g))}(?!\w)", " ", hay)
    return [w for w in effective_wrong(item) if _contains(hay, w)]


def value_matches(value: str, answer: str) -> bool:
    """A conflict value names an answer: one contains the other as whole words ("3,559" ~ "3,559 people")."""
    v, a = _norm(value), _norm(answer)
    if not v or not a:
        return False
    return _contains(a, v) if len(v) >= 2 else v == a or _contains(v, a)


def wrong_kind(item: Item) -> str:
    """What the planted answer is, as the offline contradiction detector would see it."""
    kinds = {v.kind for w in effective_wrong(item) for v in values(w)}
    if kinds - {"date", "number"}:
        return COMPARED_KINDS
    if kinds:
        return DATE_OR_NUMBER
    return NAME


@dataclass(frozen=True, slots=True)
class Record:
    index: int
    question: str
    misinfo: bool
    wrong_kind: str | None
    gold: tuple[str, ...]
    wrong: tuple[str, ...]
    route: str
    text: str
    gold_in_text: bool
    wrong_in_sentences: tuple[str, ...]
    """In the asserted sentences (not disputed)."""
    wrong_in_any_sentence: tuple[str, ...]
    wrong_in_text: tuple[str, ...]
    cites_misinfo: bool
    cited_types: tuple[str, ...]
    conflicts: tuple[tuple[str, ...], ...]
    """The values of every conflict note."""
    conflict_gold_vs_wrong: bool
    total_ms: float

    @property
    def delivered(self) -> bool:
        return self.route != "abstained"


def record_of(item: Item, answer: Answer) -> Record:
    delivered = answer.route != "abstained"
    sentences = " ".join(s.text for s in answer.sentences) if delivered else ""
    asserted = " ".join(s.text for s in answer.sentences if not s.disputed) if delivered else ""
    text = answer.text if delivered else ""
    types = {document_file(k): kind for k, (_, kind, _) in enumerate(item.documents, 1)}
    cited = tuple(types.get(Path(s.document).name, "?") for s in answer.sources) if delivered else ()
    wrong = effective_wrong(item)
    gold_vs_wrong = any(
        any(value_matches(v, g) for v in c.values for g in item.gold)
        and any(value_matches(v, w) for v in c.values for w in wrong)
        for c in answer.conflicts
    )
    return Record(
        index=item.index,
        question=item.question,
        misinfo=item.misinfo,
        wrong_kind=wrong_kind(item) if item.misinfo else None,
        gold=item.gold,
        wrong=tuple(wrong),
        route=answer.route,
        text=answer.text,
        gold_in_text=any(_contains(text, g) for g in item.gold),
        wrong_in_sentences=tuple(wrong_in(asserted, item)),
        wrong_in_any_sentence=tuple(wrong_in(sentences, item)),
        wrong_in_text=tuple(wrong_in(text, item)),
        cites_misinfo="misinfo" in cited,
        cited_types=cited,
        conflicts=tuple(tuple(c.values) for c in answer.conflicts),
        conflict_gold_vs_wrong=gold_vs_wrong,
        total_ms=answer.timings_ms.get("total", 0.0),
    )


async def ask_all(candor: Candor, items: Sequence[Item], progress: Callable[[str], None]) -> list[Record]:
    records: list[Record] = []
    start = time.perf_counter()
    for i, item in enumerate(items, 1):
        scope = AccessScope(frozenset(), frozenset({item.kb}))
        answer = await candor.answer(Question(item.question, scope=scope, platform="eval"))
        records.append(record_of(item, answer))
        if i % 25 == 0 or i == len(items):
            ms = [r.total_ms for r in records]
            progress(
                f"  {i}/{len(items)} questions, {time.perf_counter() - start:.0f}s, "
                f"p50 {percentile(ms, 50):.0f} ms, p95 {percentile(ms, 95):.0f} ms"
            )
    return records


def share(n: int, total: int) -> dict[str, Any]:
    return {"n": n, "of": total, "pct": round(100 * n / total, 1) if total else None}


def summarise(records: Sequence[Record]) -> dict[str, Any]:
    delivered = [r for r in records if r.delivered]
    misinfo = [r for r in records if r.misinfo]
    ms = [r.total_ms for r in records]
    result: dict[str, Any] = {
        "questions": len(records),
        "answered": share(sum(r.route == "answered" for r in records), len(records)),
        "low_confidence": share(sum(r.route == "low_confidence" for r in records), len(records)),
        "abstained": share(sum(not r.delivered for r in records), len(records)),
        "gold_in_text": share(sum(r.gold_in_text for r in delivered), len(delivered)),
        "wrong_stated_as_fact": share(sum(bool(r.wrong_in_sentences) for r in delivered), len(delivered)),
        "wrong_in_any_sentence": share(sum(bool(r.wrong_in_any_sentence) for r in delivered), len(delivered)),
        "wrong_in_text": share(sum(bool(r.wrong_in_text) for r in delivered), len(delivered)),
        "cites_misinfo": share(sum(r.cites_misinfo for r in delivered), len(delivered)),
        "conflict_surfaced": share(sum(bool(r.conflicts) for r in delivered), len(delivered)),
        "total_ms": {"p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1)},
    }
    if misinfo:
        result["conflict_gold_vs_wrong"] = share(
            sum(r.conflict_gold_vs_wrong for r in delivered if r.misinfo), sum(r.delivered for r in misinfo)
        )
        by_kind = {}
        for kind in (COMPARED_KINDS, DATE_OR_NUMBER, NAME):
            group = [r for r in misinfo if r.wrong_kind == kind]
            answered = [r for r in group if r.delivered]
            by_kind[kind] = {
                "questions": len(group),
                "delivered": len(answered),
                "conflict_surfaced": share(sum(bool(r.conflicts) for r in answered), len(answered)),
                "wrong_stated_as_fact": share(sum(bool(r.wrong_in_sentences) for r in answered), len(answered)),
            }
        result["misinfo_by_wrong_kind"] = by_kind
    return result


def fmt(s: dict[str, Any]) -> str:
    return f"{s['n']}/{s['of']} ({s['pct']}%)" if s["of"] else "0/0"


def print_table(results: dict[str, dict[str, Any]]) -> None:
    labels = list(results)
    rows = [
        ("answered", "answered"),
        ("low_confidence", "low confidence"),
        ("abstained", "abstained"),
        ("gold_in_text", "names a gold answer*"),
        ("wrong_stated_as_fact", "states a wrong answer as fact*"),
        ("wrong_in_any_sentence", "wrong in a sentence, disputed too*"),
        ("wrong_in_text", "wrong answer anywhere in text*"),
        ("cites_misinfo", "cites a misinfo document*"),
        ("conflict_surfaced", "conflict note*"),
        ("conflict_gold_vs_wrong", "conflict note gold vs wrong*"),
    ]
    width = 32
    print(f"{'':{width}}" + "".join(f"{label:>24}" for label in labels))
    for key, name in rows:
        cells = [fmt(results[label][key]) if key in results[label] else "-" for label in labels]
        print(f"{name:{width}}" + "".join(f"{c:>24}" for c in cells))
    cells = [f"{results[label]['total_ms']['p50']:.0f} / {results[label]['total_ms']['p95']:.0f}" for label in labels]
    print(f"{'total ms p50 / p95':{width}}" + "".join(f"{c:>24}" for c in cells))
    print("* of delivered answers (answered + low confidence)")
    by_kind = next((r["misinfo_by_wrong_kind"] for r in results.values() if "misinfo_by_wrong_kind" in r), None)
    if by_kind:
        print("\nmisinfo questions by what the planted wrong answer is (of delivered answers):")
        for kind, s in by_kind.items():
            print(
                f"  {kind:38} {s['questions']:3} questions, {s['delivered']:3} delivered: "
                f"conflict note {fmt(s['conflict_surfaced'])}, wrong stated as fact {fmt(s['wrong_stated_as_fact'])}"
            )


def examples(records: Sequence[Record], n: int = 5) -> list[Record]:
    """Up to `n` answers that stated a wrong answer as fact: misinfo questions first, one per kind in turn."""
    wrong = [r for r in records if r.delivered and r.wrong_in_sentences]
    wrong.sort(key=lambda r: (not r.misinfo, r.index))
    picked: list[Record] = []
    kinds = [COMPARED_KINDS, DATE_OR_NUMBER, NAME, None]
    while len(picked) < min(n, len(wrong)):
        for kind in kinds:
            candidate = next((r for r in wrong if r.wrong_kind == kind and r not in picked), None)
            if candidate is not None and len(picked) < n:
                picked.append(candidate)
    return picked


def print_examples(picked: Sequence[Record]) -> None:
    print(f"\n{len(picked)} answers that state a wrong answer as fact:")
    for r in picked:
        text = " ".join(r.text.split())
        print(f"\n[{r.index}] {r.question}  ({'misinfo' if r.misinfo else 'no misinfo'}; {r.wrong_kind or '-'})")
        print(f"  answer: {text[:500]}{'...' if len(text) > 500 else ''}")
        print(f"  gold {list(r.gold)}; wrong {list(r.wrong)}; stated {list(r.wrong_in_sentences)}")
        print(f"  cited document types {list(r.cited_types)}; conflicts {[list(c) for c in r.conflicts]}")


async def run(n: int, rebuild: bool, quiet: bool, development: bool = False) -> tuple[dict[str, Any], list[Record]]:
    items = load_items(n, development=development)
    settings = load_settings(home=prepare_home(rebuild), database_url=None)

    def log(line: str) -> None:
        print(line, file=sys.stderr if quiet else sys.stdout, flush=True)

    start = time.perf_counter()
    async with open_candor(settings) as candor:
        ingest_seconds, skipped = await ensure_knowledge_bases(candor, items, log)
        log(
            f"asking {len(items)} questions: retrieval_threshold {settings.retrieval_threshold}, "
            f"answer_threshold {settings.answer_threshold}, retry {settings.retry}"
        )
        records = await ask_all(candor, items, log)
        embedder = candor.embedder.name
    config = {
        "questions": n,
        "retrieval_threshold": settings.retrieval_threshold,
        "answer_threshold": settings.answer_threshold,
        "retry": settings.retry,
        "embedder": embedder,
        "code": code_version(),
        "ingest_seconds": round(ingest_seconds, 1),
        "skipped_documents": skipped,
        "seconds": round(time.perf_counter() - start, 1),
    }
    return config, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=150, help="the first N questions of the file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached home from scratch")
    parser.add_argument(
        "--development",
        action="store_true",
        help=f"the questions after the first {REPORTED} instead (development data: never reported)",
    )
    args = parser.parse_args()

    config, records = asyncio.run(run(args.questions, args.rebuild, quiet=args.json, development=args.development))
    subsets = {
        "with misinfo": [r for r in records if r.misinfo],
        "without misinfo": [r for r in records if not r.misinfo],
        "all": records,
    }
    results = {label: summarise(rs) for label, rs in subsets.items()}
    picked = examples(records)
    command = COMMAND + (
        " --development" if args.development else "" if args.questions == REPORTED else f" --questions {args.questions}"
    )
    if args.json:
        payload = {
            "command": command,
            "config": config,
            "results": results,
            "examples": [asdict(r) for r in picked],
            "records": [asdict(r) for r in records],
        }
        print(json.dumps(payload, indent=2))
        return
    print(
        f"\n{config['questions']} RAMDocs questions; thresholds: retrieval {config['retrieval_threshold']}, "
        f"answer {config['answer_threshold']}; retry {config['retry']}; embedder {config['embedder']}; "
        f"code {config['code']}; ingest {config['ingest_seconds'] or 'cached, 0'}s, total {config['seconds']}s"
    )
    for kb, name, kind, reason in config["skipped_documents"]:
        print(f"the ingestor skipped {kb}/{name} ({kind}): {reason}")
    print()
    print_table(results)
    print_examples(picked)
    print(f"\nreproduce: {command}")


if __name__ == "__main__":
    main()
