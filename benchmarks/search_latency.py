"""Search latency and HNSW recall at scale: p50/p95 of hybrid search including the query embedding.

Embedding 100k chunks would take ~40 minutes here, so a pool of distinct passages (SQuAD
paragraphs and RAMDocs documents) is embedded once and cached; scale chunks are mixtures of two
pool passages (text: one passage plus the start of another; vector: the normalised weighted sum
of their vectors), so every chunk is distinct in both text and vector. The built database is
cached under benchmarks/.cache/ between runs.

For each size: the full `HybridRetriever.run` path (embed the query, the full-text and the dense
statement, fusion) over SQuAD questions, after a warm-up on 200 other questions; p50/p95 per run,
median over runs; the query embedding alone is timed in the same run as the baseline. Recall@10 of the HNSW
dense side against an exact scan, and hit@5 at scale (the answerable questions' gold paragraphs).

    python benchmarks/search_latency.py [--sizes 10000,100000] [--queries 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, REPO, load_squad, median, percentile
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import load_settings
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor
from rag.store.postgres import ChunkRow, DocumentRow
from rag.store.queries import index_sql

RAMDOCS = REPO.parent / "shared" / "data" / "ramdocs" / "RAMDocs_test.jsonl"
PER_DOCUMENT = 100
DENSE_ONLY = "SELECT id, text FROM chunks ORDER BY embedding <=> %s LIMIT 5"


def pool_texts() -> list[str]:
    paragraphs, _ = load_squad()
    seen: dict[str, None] = {" ".join(p.text.split()): None for p in paragraphs}
    for line in RAMDOCS.read_text(encoding="utf-8").splitlines():
        for doc in json.loads(line)["documents"]:
            text = " ".join(doc["text"].replace("\x00", "").split())
            if len(text) >= 200:
                seen.setdefault(text[:900])
    return list(seen)


def pool(embedder: SentenceTransformerEmbedder) -> tuple[list[str], np.ndarray]:
    texts = pool_texts()
    cache = CACHE / f"pool-{len(texts)}.npy"
    if cache.exists():
        return texts, np.load(cache)
    print(f"embedding a pool of {len(texts)} passages once (cached in {cache})", flush=True)
    vectors = np.asarray(embedder._load().encode(texts, batch_size=32, normalize_embeddings=True), dtype=np.float32)
    np.save(cache, vectors)
    return texts, vectors


def mixture_rows(pairs: Sequence[Sequence[int]], texts: list[str], vectors: np.ndarray, tag: str) -> list[ChunkRow]:
    """A document's scale chunks, one per pair of pool passages (i, j): the text of i and the start
    of j, and the normalised weighted sum of their vectors."""
    rows = []
    for position, (i, j) in enumerate(pairs):
        vec = 0.8 * vectors[i] + 0.6 * vectors[j]
        vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        text = texts[i] + " " + texts[j][:200]
        rows.append(ChunkRow(position, ["Scale", f"Section {position}"], text, f"{tag}-{position}", vec))
    return rows


async def build(candor: Candor, size: int, texts: list[str], vectors: np.ndarray) -> None:
    kb = await candor.knowledge_base(f"scale{size}", create=True)
    assert kb is not None
    have = await candor.store.counts(kb)
    if have["chunks"] >= size:
        return
    print(f"building {size} chunks (cached afterwards)", flush=True)
    rng = np.random.default_rng(size)
    async with candor.store.engine.begin() as conn:
        raw = await conn.get_raw_connection()
        for name, _ in index_sql(kb.id):  # loaded without them, indexed afterwards
            await raw.driver_connection.execute(f"DROP INDEX IF EXISTS {name}")
    start = time.perf_counter()
    for d in range(size // PER_DOCUMENT):
        pairs = [rng.integers(0, len(texts), size=2) for _ in range(PER_DOCUMENT)]
        rows = mixture_rows(pairs, texts, vectors, f"s{size}-{d}")
        doc = DocumentRow(
            kb_id=kb.id,
            source=f"scale://{size}/{d}",
            title=f"Scale document {d}",
            format="txt",
            content_hash=str(d),
            options_hash="bench",
        )
        await candor.store.write_document(doc, rows)
    print(f"  loaded in {time.perf_counter() - start:.0f}s; building the HNSW index", flush=True)
    start = time.perf_counter()
    async with candor.store.engine.begin() as conn:
        raw = await conn.get_raw_connection()
        await raw.driver_connection.execute("SET maintenance_work_mem = '2GB'")
        for _, statement in index_sql(kb.id):
            await raw.driver_connection.execute(statement)
        await raw.driver_connection.execute("ANALYZE chunks")
    print(f"  index built in {time.perf_counter() - start:.0f}s", flush=True)


async def recall_at_10(candor: Candor, kb_name: str, queries: np.ndarray) -> float:
    """HNSW's top 10 against an exact scan. Never prepared: a cached plan would keep using the index
    after `enable_indexscan = off` (psycopg prepares a statement after 5 runs), comparing the index
    with itself. That made the recall reported before 2026-11-30 look like 0.99 at 100k."""
    found = 0
    async with candor.store.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        kb_id = (await (await raw.execute("SELECT id FROM knowledge_bases WHERE name = %s", (kb_name,))).fetchone())[0]
        sql = "SELECT id FROM chunks WHERE kb_id = %s ORDER BY embedding <=> %s LIMIT 10"
        for vec in queries:
            approx = {r[0] for r in await (await raw.execute(sql, (kb_id, vec), prepare=False)).fetchall()}
            await raw.execute("SET enable_indexscan = off")
            exact = {r[0] for r in await (await raw.execute(sql, (kb_id, vec), prepare=False)).fetchall()}
            await raw.execute("SET enable_indexscan = on")
            found += len(approx & exact)
        await raw.rollback()
    return found / (10 * len(queries))


async def hit_at_5(candor: Candor, scope: AccessScope, answerable: list[tuple[str, str]]) -> int:
    """Retrieval quality at scale, to weigh a latency change against: a hit is a chunk among the
    top 5 whose main passage is the question's gold SQuAD paragraph (each paragraph is the main
    passage of ~35 chunks at 100k)."""
    found = 0
    for question, paragraph in answerable:
        passages = await candor.retriever.run(question, scope, k=5)
        found += any(p.text.startswith(paragraph) for p in passages)
    return found


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=200, help="questions asked first, not measured")
    args = parser.parse_args()
    paragraphs, questions = load_squad()
    asked = [q.question for q in questions[: args.queries]]
    gold = {p.paragraph_id: " ".join(p.text.split()) for p in paragraphs}
    answerable = [(q.question, gold[q.paragraph_id]) for q in questions[: args.queries] if q.answerable]
    for size in (int(s) for s in args.sizes.split(",")):
        home = CACHE / f"scale-home-{size}"  # one database per size: other sizes' rows would share the graph
        home.mkdir(parents=True, exist_ok=True)
        settings = load_settings(home=home, database_url=None)
        async with open_candor(settings) as candor:
            embedder = candor.embedder
            assert isinstance(embedder, SentenceTransformerEmbedder)
            texts, vectors = pool(embedder)
            await build(candor, size, texts, vectors)
            scope = AccessScope(knowledge_bases=frozenset([f"scale{size}"]))
            # warm-up on other questions than the measured ones (about the same paragraphs): the
            # server's caches, the prepared statements and their cached plans settle first
            warm = [q.question for q in questions[args.queries : args.queries + args.warmup]]
            for q in warm:
                await candor.retriever.run(q, scope, k=5)
            p50s, p95s, embed_p50s, embed_p95s, dense_p50s, dense_p95s = [], [], [], [], [], []
            async with candor.store.engine.connect() as conn:
                driver = (await conn.get_raw_connection()).driver_connection
                for _ in range(args.runs):
                    times, embed_times, dense_times = [], [], []
                    for q in asked:
                        start = time.perf_counter()
                        await embedder.embed([q])
                        embed_times.append((time.perf_counter() - start) * 1000)
                        start = time.perf_counter()
                        vec = (await embedder.embed([q]))[0]
                        await (await driver.execute(DENSE_ONLY, (vec,))).fetchall()
                        dense_times.append((time.perf_counter() - start) * 1000)
                        start = time.perf_counter()
                        await candor.retriever.run(q, scope, k=5)
                        times.append((time.perf_counter() - start) * 1000)
                    p50s.append(percentile(times, 50))
                    p95s.append(percentile(times, 95))
                    embed_p50s.append(percentile(embed_times, 50))
                    embed_p95s.append(percentile(embed_times, 95))
                    dense_p50s.append(percentile(dense_times, 50))
                    dense_p95s.append(percentile(dense_times, 95))
                await driver.rollback()
            hits = await hit_at_5(candor, scope, answerable)
            query_vectors = await embedder.embed(asked[: args.recall_queries])
            recall = await recall_at_10(candor, f"scale{size}", query_vectors)
            print(
                f"{size:>7} chunks: hybrid search incl. query embedding p50 {median(p50s):.1f} ms, "
                f"p95 {median(p95s):.1f} ms (median of {args.runs} runs x {len(asked)} queries; per-run p95 "
                f"{', '.join(f'{v:.1f}' for v in p95s)}) | query embedding alone p50 {median(embed_p50s):.1f} ms, "
                f"p95 {median(embed_p95s):.1f} ms | dense-only search incl. embedding p50 {median(dense_p50s):.1f} ms, "
                f"p95 {median(dense_p95s):.1f} ms | HNSW recall@10 {recall:.3f} ({args.recall_queries} queries, "
                f"ef_search {settings.hnsw_ef_search}) | hit@5 at this size {hits}/{len(answerable)}",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
