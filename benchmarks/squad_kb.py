"""The SQuAD subset as one knowledge base per paragraph, and the per-question gate record.

Each of the 124 paragraphs is ingested into its own knowledge base (`squad-<paragraph id>`), and
each question is asked with an access scope reading only its own paragraph's knowledge base: the
question "does this paragraph answer it?" in isolation, which is what SQuAD 2.0 labels. The built
Candor home is cached under benchmarks/.cache/ and reused while the paragraphs and the embedder
are unchanged.

Titles are written as a person would title the page ("New York City", not the Wikipedia slug
"New_York_City" that `write_squad_corpus` keeps): the premise gate looks for the question's names
in titles too, and a slug hides them.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import CACHE, REPO, SquadParagraph, SquadQuestion, cached_home, percentile
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.text.facts import MONTH_NAMES

HOME = CACHE / "squad-per-paragraph"
"""Cached Candor home (embedded Postgres) and corpus; delete it, or pass --rebuild, to start over."""


def code_version() -> str:
    """The commit the answers came from, "+dirty" when rag/ has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "rag"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    changed = [line for line in dirty.splitlines() if not line.endswith("rag/calibration.json")]
    return head + ("+dirty" if changed else "")


def kb_name(paragraph_id: str) -> str:
    return f"squad-{paragraph_id}"


def scope_for(q: SquadQuestion) -> AccessScope:
    return AccessScope(frozenset(), frozenset({kb_name(q.paragraph_id)}))


def title_of(p: SquadParagraph) -> str:
    return p.title.replace("_", " ").replace('"', "'")


def write_corpus(folder: Path, paragraphs: Sequence[SquadParagraph]) -> dict[str, Path]:
    """One Markdown file per paragraph, titled in words; paragraph id → file."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for p in paragraphs:
        path = folder / f"{p.paragraph_id}.md"
        path.write_text(f'---\ntitle: "{title_of(p)}"\neffective_date: 2020-01-01\n---\n\n{p.text}\n', encoding="utf-8")
        files[p.paragraph_id] = path
    return files


def fingerprint(paragraphs: Sequence[SquadParagraph], embedder: str) -> str:
    digest = hashlib.sha1(embedder.encode())
    for p in paragraphs:
        digest.update(f"{p.paragraph_id}\t{title_of(p)}\n".encode())
    return digest.hexdigest()[:16]


def prepare_home(rebuild: bool = False) -> Path:
    return cached_home(HOME, rebuild)


async def ensure_knowledge_bases(
    candor: Candor, paragraphs: Sequence[SquadParagraph], progress: Callable[[str], None] = print
) -> None:
    """Ingest every paragraph into its own knowledge base, unless the cached home already has them."""
    stamp = HOME / "built.json"
    key = fingerprint(paragraphs, candor.embedder.name)
    if stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")).get("fingerprint") == key:
        progress(f"reusing the cached knowledge bases in {HOME}")
        return
    start = time.perf_counter()
    progress(f"ingesting {len(paragraphs)} paragraphs, one knowledge base each (cached in {HOME})")
    corpus = HOME / "corpus"
    by_id = write_corpus(corpus, paragraphs)
    chunks = 0
    for p in paragraphs:
        kb = await candor.knowledge_base(kb_name(p.paragraph_id), create=True)
        assert kb is not None
        report = await candor.ingestor().ingest([by_id[p.paragraph_id]], kb=kb)
        if report.skipped:
            raise SystemExit(f"paragraph {p.paragraph_id} was skipped: {report.skipped}")
        chunks += report.chunks
    await candor.store.analyze()
    counts = await candor.store.counts()
    stamp.write_text(json.dumps({"fingerprint": key, "embedder": candor.embedder.name, **counts}), encoding="utf-8")
    progress(f"ingested in {time.perf_counter() - start:.0f}s: {counts} (this run added {chunks} chunks)")


@dataclass(frozen=True, slots=True)
class Record:
    """What one answer's gate log says about one SQuAD question (attempt 1 scores)."""

    question: str
    gold: str
    title: str
    paragraph_id: str
    answerable: bool
    route: str
    retrieval_score: float
    """Best dense cosine: what the retrieval threshold gates."""
    sentence_score: float
    """Best readable sentence's rerank score over the question's parts (leaving out parts the premise
    gate stopped, unless all were): what the answer threshold gates."""
    premise_passed: bool
    unknown_names: tuple[str, ...]
    """The names and codes the premise gate found in no passage."""
    gold_in_answer: bool | None
    """Answerable and delivered: does the answer text contain the gold answer (case-insensitive)?"""
    attempts: int
    total_ms: float
    text: str
    focus_shift: float = 1.0
    """The focus check's least word shift (rag/pipeline/focus.py), the highest over the answered parts: the
    question loses its answer to the focus threshold when every answered part does."""

    @property
    def delivered(self) -> bool:
        return self.route != "abstained"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


MONTHS = {m[:3]: m for m in MONTH_NAMES}
SPREADSHEET_DATE = re.compile(r"^(\d{1,2})-([A-Za-z]{3})(?:-(\d{2}))?$")
"""The CSV's dates went through a spreadsheet: "May 7, 2009" is "7-May-09", "January 2003" is "3-Jan"."""


def contains_gold(text: str, gold: str) -> bool:
    """Whether the answer contains the gold answer, case-insensitively (spreadsheet-mangled dates
    match by month name plus the day or the year they came from)."""
    hay = " ".join(text.lower().split())
    if " ".join(gold.lower().split()) in hay:
        return True
    m = SPREADSHEET_DATE.match(gold.strip())
    month = MONTHS.get(m.group(2).lower()) if m else None
    if m is None or month is None or not re.search(rf"\b{month}\b", hay):
        return False
    number, year = int(m.group(1)), m.group(3)
    day = re.search(rf"\b{number}(?:st|nd|rd|th)?\b", hay) is not None
    if year is not None:
        return day and re.search(rf"\b\d\d{year}\b", hay) is not None
    return day or re.search(rf"\b\d\d{number:02d}\b", hay) is not None


def record_of(q: SquadQuestion, answer: Answer) -> Record:
    first = [g for g in answer.gates if g.attempt == 1]
    retrieval = next((g for g in first if g.gate == "retrieval_score"), None)
    premise = next((g for g in first if g.gate == "premise"), None)
    complete = next((g for g in first if g.gate == "completeness"), None)
    parts = complete.details.get("parts", []) if complete is not None else []
    premise_parts = premise.details.get("parts", []) if premise is not None else []
    unknown = {str(p["part"]) for p in premise_parts if p["unknown"]}
    # A part naming something no passage mentions is never answered, whatever the threshold: its
    # sentence score says nothing about the answer threshold unless every part is such a part.
    known = [p for p in parts if str(p["part"]) not in unknown] or parts
    sentence = max((float(p["best_sentence_score"]) for p in known), default=-1.0)
    delivered = answer.route != "abstained"
    shifts = [float(p["focus_shift"]) for p in parts if "focus_shift" in p]
    return Record(
        question=q.question,
        gold=q.answer,
        title=q.title,
        paragraph_id=q.paragraph_id,
        answerable=q.answerable,
        route=answer.route,
        retrieval_score=retrieval.score if retrieval is not None else -1.0,
        sentence_score=sentence,
        premise_passed=premise.passed if premise is not None else True,
        unknown_names=tuple(
            str(n) for p in (premise.details.get("parts", []) if premise is not None else []) for n in p["unknown"]
        ),
        gold_in_answer=contains_gold(answer.text, q.answer) if q.answerable and delivered else None,
        attempts=max((g.attempt for g in answer.gates), default=1),
        total_ms=answer.timings_ms.get("total", 0.0),
        text=answer.text,
        focus_shift=max(shifts, default=1.0),
    )


async def ask_all(
    candor: Candor, questions: Sequence[SquadQuestion], progress: Callable[[str], None] = print
) -> list[Record]:
    """Every question through `Candor.answer`, scoped to its own paragraph; one progress line per 100."""
    records: list[Record] = []
    start = time.perf_counter()
    for i, q in enumerate(questions, 1):
        answer = await candor.answer(Question(q.question, scope=scope_for(q), platform="eval"))
        records.append(record_of(q, answer))
        if i % 100 == 0 or i == len(questions):
            ms = [r.total_ms for r in records]
            progress(
                f"  {i}/{len(questions)} questions, {time.perf_counter() - start:.0f}s, "
                f"p50 {percentile(ms, 50):.0f} ms, p95 {percentile(ms, 95):.0f} ms"
            )
    return records


def load_records(path: Path) -> tuple[dict[str, Any], list[Record]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    records = [Record(**{**r, "unknown_names": tuple(r["unknown_names"])}) for r in data["records"]]
    return data["meta"], records


def save_records(path: Path, meta: dict[str, Any], records: Sequence[Record]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "records": [r.as_json() for r in records]}
    path.write_text(json.dumps(payload), encoding="utf-8")
