"""Candor at a million chunks: filtered hybrid search and the whole offline answer path.

The database: 1,000,000 chunks in 20 knowledge bases of 50,000 (`kb00` ... `kb19`), documents
of 100 chunks, every fifth document restricted to the access group `staff` (a fifth of the
chunks). Chunks are built as `search_latency.py` builds them (mixtures of two passages from an
embedded pool, text and vector), so nothing is embedded but the pool. The database is cached
under benchmarks/.cache/scale-home-1000000 (building it once takes about an hour here; most of
it is the HNSW index).

Measured, after a warm-up on other questions:
- filtered hybrid search including the query embedding: each SQuAD question asked in one
  knowledge base (rotating through the 20), half of them by a reader holding `staff`, half by
  one who does not; p50/p95 per run, median over runs; the query embedding alone beside it;
- hit@5 in the knowledge base `kb00` (a hit: a top-5 chunk whose main passage is the gold
  paragraph), and that no restricted chunk reaches the reader without `staff`;
- the whole offline answer path (`Candor.answer`) in `kb00`, whose chunks are given sentence
  rows once (as `answer.py` does at 100k: each sentence its chunk's vector plus noise).

    python benchmarks/scale.py [--queries 200] [--runs 3] [--answer-queries 100]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.answer import add_sentences, measure
from benchmarks.common import CACHE, load_squad, median, percentile
from benchmarks.search_latency import PER_DOCUMENT, mixture_rows, pool
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import load_settings
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor
from rag.store.postgres import DocumentRow
from rag.store.queries import index_sql

SIZE = 1_000_000
KNOWLEDGE_BASES = 20
GROUP = "staff"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scale.py"


def kb_name(i: int) -> str:
    return f"kb{i:02d}"


async def chunk_count(candor: Candor) -> int:
    async with candor.store.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        row = await (await raw.execute("SELECT count(*) FROM chunks")).fetchone()
        await raw.rollback()
    return int(row[0])


async def build(candor: Candor, texts: list[str], vectors: np.ndarray) -> None:
    """Load the million chunks (idempotent per document: a killed build resumes), then index them."""
    per_kb = SIZE // KNOWLEDGE_BASES
    async with candor.store.engine.begin() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        listed = "SELECT indexname FROM pg_indexes WHERE indexname ~ '^chunks_(embedding_hnsw|tsv_gin)_kb'"
        indexes = [r[0] for r in await (await raw.execute(listed)).fetchall()]
    if len(indexes) >= 2 * KNOWLEDGE_BASES and await chunk_count(candor) >= SIZE:
        return
    print(f"building {SIZE} chunks in {KNOWLEDGE_BASES} knowledge bases (cached afterwards)", flush=True)
    async with candor.store.engine.begin() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        for index in indexes:  # loaded without them, indexed afterwards: much faster
            await raw.execute(f'DROP INDEX IF EXISTS "{index}"')
    start = time.perf_counter()
    for k in range(KNOWLEDGE_BASES):
        kb = await candor.knowledge_base(kb_name(k), create=True)
        assert kb is not None
        async with candor.store.engine.begin() as conn:  # creating the base gave it its indexes
            raw = (await conn.get_raw_connection()).driver_connection
            for name, _ in index_sql(kb.id):
                await raw.execute(f"DROP INDEX IF EXISTS {name}")
        have = (await candor.store.counts(kb))["documents"]
        rng = np.random.default_rng(1000 + k)
        for d in range(per_kb // PER_DOCUMENT):
            # drawn even for the documents already stored, so that a resumed build makes the same rows
            pairs = rng.integers(0, len(texts), size=(PER_DOCUMENT, 2))
            if d < have:
                continue
            rows = mixture_rows(pairs, texts, vectors, f"{k}-{d}")
            doc = DocumentRow(
                kb_id=kb.id,
                source=f"scale://{kb_name(k)}/{d:05d}",
                title=f"Scale document {k}/{d}",
                format="txt",
                content_hash=f"{k}-{d}",
                options_hash="bench",
                access_groups=[GROUP] if d % 5 == 0 else [],
            )
            await candor.store.write_document(doc, rows)
        print(f"  {kb_name(k)} loaded ({time.perf_counter() - start:.0f}s so far)", flush=True)
    print("building the indexes, a vector and a full-text one per knowledge base", flush=True)
    start = time.perf_counter()
    async with candor.store.engine.begin() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        await raw.execute("SET maintenance_work_mem = '2GB'")
        await raw.execute("SET max_parallel_maintenance_workers = 2")
        for kb_id in await candor.store.every_knowledge_base_id():
            for _, statement in index_sql(kb_id):
                await raw.execute(statement)
        await raw.execute("ANALYZE")
    print(f"  indexes built in {time.perf_counter() - start:.0f}s", flush=True)


async def restricted_leaks(candor: Candor, questions: list[str]) -> tuple[int, int]:
    """(restricted chunks returned to a reader without the group, chunks returned in all)."""
    leaks = returned = 0
    for n, q in enumerate(questions):
        scope = AccessScope(knowledge_bases=frozenset([kb_name(n % KNOWLEDGE_BASES)]))
        for passage in await candor.retriever.run(q, scope, k=5):
            returned += 1
            leaks += bool(passage.access_groups)
    return leaks, returned


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--answer-queries", type=int, default=100)
    parser.add_argument("--answer-runs", type=int, default=1)
    parser.add_argument("--build-only", action="store_true")

    args = parser.parse_args()
    paragraphs, questions = load_squad()
    asked = [q.question for q in questions[: args.queries]]
    gold = {p.paragraph_id: " ".join(p.text.split()) for p in paragraphs}
    answerable = [(q.question, gold[q.paragraph_id]) for q in questions[: args.queries] if q.answerable]
    home = CACHE / f"scale-home-{SIZE}"
    home.mkdir(parents=True, exist_ok=True)
    settings = load_settings(home=home, database_url=None)
    async with open_candor(settings) as candor:
        embedder = candor.embedder
        assert isinstance(embedder, SentenceTransformerEmbedder)
        texts, vectors = pool(embedder)
        await build(candor, texts, vectors)
        await add_sentences(candor, kb_name(0))
        if args.build_only:
            return

        def scope_of(n: int) -> AccessScope:
            groups = frozenset([GROUP]) if n % 2 else frozenset()
            return AccessScope(groups=groups, knowledge_bases=frozenset([kb_name(n % KNOWLEDGE_BASES)]))

        warm = [q.question for q in questions[args.queries : args.queries + args.warmup]]
        for n, q in enumerate(warm):
            await candor.retriever.run(q, scope_of(n), k=5)
        p50s, p95s, embed_p50s, embed_p95s = [], [], [], []
        for _ in range(args.runs):
            times, embed_times = [], []
            for n, q in enumerate(asked):
                start = time.perf_counter()
                await embedder.embed([q])
                embed_times.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                await candor.retriever.run(q, scope_of(n), k=5)
                times.append((time.perf_counter() - start) * 1000)
            p50s.append(percentile(times, 50))
            p95s.append(percentile(times, 95))
            embed_p50s.append(percentile(embed_times, 50))
            embed_p95s.append(percentile(embed_times, 95))
        hits = 0
        kb0 = AccessScope(groups=frozenset([GROUP]), knowledge_bases=frozenset([kb_name(0)]))
        for question, paragraph in answerable:
            hits += any(p.text.startswith(paragraph) for p in await candor.retriever.run(question, kb0, k=5))
        leaks, returned = await restricted_leaks(candor, asked)
        print(
            f"{SIZE} chunks in {KNOWLEDGE_BASES} knowledge bases, a fifth restricted: filtered hybrid search "
            f"incl. query embedding p50 {median(p50s):.1f} ms, p95 {median(p95s):.1f} ms (median of {args.runs} "
            f"runs x {len(asked)} queries, one knowledge base each, half with the group; per-run p95 "
            f"{', '.join(f'{v:.1f}' for v in p95s)}) | query embedding alone p50 {median(embed_p50s):.1f} ms, "
            f"p95 {median(embed_p95s):.1f} ms | hit@5 in {kb_name(0)} {hits}/{len(answerable)} | restricted "
            f"chunks shown to a reader without the group {leaks}/{returned}",
            flush=True,
        )
        result = await measure(candor, kb_name(0), asked[: args.answer_queries], args.answer_runs)
        print(
            f"whole offline answer path in {kb_name(0)} (of {SIZE}): p50 {result['p50']:.0f} ms, p95 "
            f"{result['p95']:.0f} ms, p95 of answers through the critic {result['p95_through_critic']:.0f} ms; "
            f"hybrid search in the same run p50 {result['search_p50']:.1f} ms, p95 {result['search_p95']:.1f} ms; "
            f"routes {result['routes']}, retried {result['retried']}/{result['asked']}",
            flush=True,
        )
    print(f"reproduce: {COMMAND}")


if __name__ == "__main__":
    asyncio.run(main())
