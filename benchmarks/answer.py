"""Latency of the whole offline answer pipeline at 10k and 100k chunks: p50/p95 of `Candor.answer`.

The path measured is everything a question costs: understand, query embedding, hybrid retrieval,
retrieval gate, premise gate, sentence-level rerank (stored sentence vectors), extractive
synthesis, the critic (which embeds the drafted sentence and its evidence sentences), the
contradiction check, the retry when the faithfulness gate fails, and writing the trace with its
gate rows to Postgres in one transaction.

It reuses the scale databases of `search_latency.py` (built there and cached under
benchmarks/.cache/). Those chunks have no sentence rows; this script adds them once: each chunk's
text split into sentences, each sentence given its chunk's vector plus noise (normalised), so the
database holds as many sentence rows and vectors as a real ingest would without embedding 600k
sentences (hours here). Latency depends on the rows read and the arithmetic, not on the values;
quality is measured elsewhere (`candor eval`, `squad_answers.py`).

Questions are SQuAD questions asked against the scale knowledge base. Routes are printed with the
latencies, and the p95 of the questions that went all the way through the critic is printed apart,
so a run that abstains early everywhere cannot pass for a fast one. The hybrid search alone is
timed in the same run as the baseline.

    python benchmarks/answer.py [--sizes 10000,100000] [--queries 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, load_squad, median, percentile
from benchmarks.search_latency import build, pool
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import load_settings
from rag.ingest.sentences import split_sentences
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor
from rag.store.postgres import as_vector

BATCH = 2000


async def add_sentences(candor: Candor, kb_name: str) -> None:
    async with candor.store.engine.begin() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        kb_id = (await (await raw.execute("SELECT id FROM knowledge_bases WHERE name = %s", (kb_name,))).fetchone())[0]
        have = await (
            await raw.execute(
                "SELECT EXISTS (SELECT 1 FROM sentences s JOIN chunks c ON c.id = s.chunk_id WHERE c.kb_id = %s)",
                (kb_id,),
            )
        ).fetchone()
    if have[0]:
        return
    print(f"adding sentence rows to {kb_name} (once; cached with the database)", flush=True)
    rng = np.random.default_rng(7)
    start = time.perf_counter()
    last = 0
    total = 0
    async with candor.store.engine.begin() as conn:  # one transaction: a killed build leaves nothing half done
        raw = (await conn.get_raw_connection()).driver_connection
        while True:
            rows = await (
                await raw.execute(
                    "SELECT id, text, embedding FROM chunks WHERE kb_id = %s AND id > %s ORDER BY id LIMIT %s",
                    (kb_id, last, BATCH),
                    binary=True,
                )
            ).fetchall()
            if not rows:
                break
            async with raw.cursor().copy(
                "COPY sentences (chunk_id, position, text, text_hash, embedding) FROM STDIN"
            ) as copy:
                for chunk_id, text, embedding in rows:
                    base = as_vector(embedding)
                    for position, sentence in enumerate(split_sentences(text)):
                        vec = base + 0.5 * rng.standard_normal(base.shape).astype(np.float32) / np.sqrt(base.size)
                        vec /= np.linalg.norm(vec)
                        literal = "[" + ",".join(f"{x:.6f}" for x in vec) + "]"
                        await copy.write_row((chunk_id, position, sentence, f"b{chunk_id}-{position}", literal))
                        total += 1
            last = rows[-1][0]
    async with candor.store.engine.begin() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        await raw.execute("ANALYZE sentences")
    print(f"  {total} sentence rows in {time.perf_counter() - start:.0f}s", flush=True)


async def measure(candor: Candor, kb_name: str, asked: list[str], runs: int) -> dict[str, object]:
    scope = AccessScope(knowledge_bases=frozenset([kb_name]))
    for q in asked[:20]:  # warm-up: models, caches, connections
        await candor.answer(Question(q, scope=scope, platform="eval"))
    p50s, p95s, critic_p95s, search_p50s, search_p95s = [], [], [], [], []
    stages: dict[str, list[float]] = {}
    routes: Counter[str] = Counter()
    retried = 0
    for _ in range(runs):
        totals, through_critic, searches = [], [], []
        for q in asked:
            start = time.perf_counter()
            await candor.retriever.run(q, scope, k=candor.settings.shortlist)
            searches.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            answer = await candor.answer(Question(q, scope=scope, platform="eval"))
            elapsed = (time.perf_counter() - start) * 1000
            totals.append(elapsed)
            if "critic" in answer.timings_ms:
                through_critic.append(elapsed)
            for stage, ms in answer.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
            routes[answer.route] += 1
            retried += any(g.attempt == 2 for g in answer.gates)
        p50s.append(percentile(totals, 50))
        p95s.append(percentile(totals, 95))
        critic_p95s.append(percentile(through_critic, 95) if through_critic else float("nan"))
        search_p50s.append(percentile(searches, 50))
        search_p95s.append(percentile(searches, 95))
    return {
        "p50": median(p50s),
        "p95": median(p95s),
        "per_run_p95": p95s,
        "p95_through_critic": median(critic_p95s),
        "search_p50": median(search_p50s),
        "search_p95": median(search_p95s),
        "stages_p50": {stage: percentile(values, 50) for stage, values in stages.items()},
        "routes": dict(routes),
        "retried": retried,
        "asked": runs * len(asked),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    _, questions = load_squad()
    asked = [q.question for q in questions[: args.queries]]
    for size in (int(s) for s in args.sizes.split(",")):
        home = CACHE / f"scale-home-{size}"
        home.mkdir(parents=True, exist_ok=True)
        settings = load_settings(home=home, database_url=None)
        async with open_candor(settings) as candor:
            embedder = candor.embedder
            assert isinstance(embedder, SentenceTransformerEmbedder)
            texts, vectors = pool(embedder)
            await build(candor, size, texts, vectors)
            await add_sentences(candor, f"scale{size}")
            result = await measure(candor, f"scale{size}", asked, args.runs)
        stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(result["stages_p50"].items()))  # type: ignore[attr-defined]
        print(
            f"{size:>7} chunks: answer p50 {result['p50']:.1f} ms, p95 {result['p95']:.1f} ms "
            f"(median of {args.runs} runs x {len(asked)} questions; per-run p95 "
            f"{', '.join(f'{v:.1f}' for v in result['per_run_p95'])}) | p95 of answers that reached the "  # type: ignore[attr-defined]
            f"critic {result['p95_through_critic']:.1f} ms | hybrid search alone p50 {result['search_p50']:.1f}, "
            f"p95 {result['search_p95']:.1f} ms | stage p50s (ms): {stages} | routes {result['routes']}, "
            f"retried {result['retried']}/{result['asked']}",
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
