"""The sample handbook as a cached Candor home, and golden-file questions asked of it.

`sample/handbook/` is ingested into the knowledge base "handbook" of a Candor home cached under
benchmarks/.cache/handbook-home/ (the home itself is `handbook-home/home`, so `CANDOR_HOME` can
point `candor eval` at the very same database). Ingest is incremental (content and options
hashes), so it runs every time and only does work when the handbook or the ingest pipeline
changed; `--rebuild` empties the home first.

Each golden-file question (sample/dev.yaml, sample/golden.yaml) is asked like `candor eval --kb
handbook` asks it: scope = its `required_access` groups over the knowledge base "handbook", and
recorded as the same per-question `Record` as a SQuAD question (benchmarks/squad_kb.py);
`gold_in_answer` is "every keyword is in the answer", as `candor eval` scores it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.common import CACHE, REPO, SquadQuestion, cached_home, percentile
from benchmarks.squad_kb import Record, record_of
from rag.insights.evaluation.golden import GoldenItem
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor

HOME = CACHE / "handbook-home"
HANDBOOK = REPO / "sample" / "handbook"
KB = "handbook"


def prepare_home(rebuild: bool = False) -> Path:
    return cached_home(HOME, rebuild)


async def ensure_handbook(candor: Candor, progress: Callable[[str], None] = print) -> None:
    """Ingest sample/handbook into the knowledge base "handbook" (incremental, pruning removed files)."""
    start = time.perf_counter()
    kb = await candor.knowledge_base(KB, create=True)
    assert kb is not None
    report = await candor.ingestor().ingest([HANDBOOK], kb=kb, prune=True)
    if report.skipped:
        raise SystemExit(f"handbook files were skipped: {report.skipped}")
    progress(
        f"handbook in {HOME / 'home'} (kb {KB!r}): {report.added} added, {report.updated} updated, "
        f"{report.unchanged} unchanged, {report.pruned} pruned ({time.perf_counter() - start:.1f}s)"
    )


def scope_for(item: GoldenItem, kb: str = KB) -> AccessScope:
    return AccessScope(frozenset(item.required_access), frozenset({kb}))


def record_for(item: GoldenItem, record: Record) -> Record:
    delivered = record.delivered
    keywords_ok = all(k in record.text for k in item.keywords) if item.answerable and delivered else None
    return dataclasses.replace(record, gold_in_answer=keywords_ok)


async def ask_items(
    candor: Candor, items: Sequence[GoldenItem], progress: Callable[[str], None] = print, *, kb: str = KB
) -> list[Record]:
    """Every item through `Candor.answer` with its own scope over `kb`; `paragraph_id` holds the item id."""
    records: list[Record] = []
    start = time.perf_counter()
    for item in items:
        q = SquadQuestion(item.question, item.answer or "No answer", item.id, ",".join(item.sources), item.answerable)
        answer = await candor.answer(Question(item.question, scope=scope_for(item, kb), platform="eval"))
        records.append(record_for(item, record_of(q, answer)))
    ms = [r.total_ms for r in records]
    progress(
        f"  {len(records)} questions, {time.perf_counter() - start:.0f}s, "
        f"p50 {percentile(ms, 50):.0f} ms, p95 {percentile(ms, 95):.0f} ms"
    )
    return records
