"""Choose `CANDOR_HNSW_EF_SEARCH` on calibration questions: HNSW recall@10, hit@5 and dense time per value.

Runs on the cached scale database that `benchmarks/search_latency.py` builds (run that first), over
SQuAD questions 200-1000: the latency benchmark reports on questions 0-200, so the value chosen
here is not tuned on the set it is reported on. For each ef_search: recall@10 of the HNSW dense
side against an exact scan, hit@5 of the full hybrid search (a chunk among the top 5 whose main
passage is the question's gold paragraph) and the median time of the HNSW query alone, for as many
rows as the search asks (`CANDOR_CANDIDATES`; recall is read from its first 10).

    python benchmarks/ef_search_sweep.py [--size 100000] [--values 32,40,48,56,64]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, load_squad, median
from rag.config import load_settings
from rag.model.types import AccessScope
from rag.runtime import open_candor

CALIBRATION = slice(200, 1000)
TOP = "SELECT id FROM chunks WHERE kb_id = %s ORDER BY embedding <=> %s LIMIT {}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--values", default="32,40,48,56,64")
    args = parser.parse_args()
    home = CACHE / f"scale-home-{args.size}"
    if not home.exists():
        sys.exit(f"no cached database at {home}: run benchmarks/search_latency.py --sizes {args.size} first")
    paragraphs, questions = load_squad()
    calibration = questions[CALIBRATION]
    gold = {p.paragraph_id: " ".join(p.text.split()) for p in paragraphs}
    settings = load_settings(home=home, database_url=None)
    async with open_candor(settings) as candor:
        store = candor.store
        kb_name = f"scale{args.size}"
        (kb_id,) = await store.knowledge_base_ids([kb_name])
        scope = AccessScope(knowledge_bases=frozenset([kb_name]))
        vectors = await candor.embedder.embed([q.question for q in calibration])
        searching = store.searching

        @contextlib.asynccontextmanager
        async def with_ef(ef: int) -> AsyncIterator[Any]:
            async with searching() as driver:
                await driver.execute(f"SET hnsw.ef_search = {ef}")
                yield driver

        top = TOP.format(max(10, settings.candidates))
        async with store.engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            await raw.execute("SET enable_indexscan = off")  # never prepared: a cached plan would keep the index
            exact = [
                {r[0] for r in await (await raw.execute(TOP.format(10), (kb_id, v), prepare=False)).fetchall()}
                for v in vectors
            ]
            await raw.execute("SET enable_indexscan = on")
            print(f"{len(calibration)} calibration questions (SQuAD 200-1000), {args.size} chunks")
            for ef in (int(v) for v in args.values.split(",")):
                await raw.execute(f"SET hnsw.ef_search = {ef}")
                found, times = 0, []
                for v, truth in zip(vectors, exact, strict=True):
                    start = time.perf_counter()
                    rows = await (await raw.execute(top, (kb_id, v), prepare=False)).fetchall()
                    times.append((time.perf_counter() - start) * 1000)
                    found += len({r[0] for r in rows[:10]} & truth)
                store.searching = lambda ef=ef: with_ef(ef)  # type: ignore[method-assign]
                hits = answerable = 0
                for q in calibration:
                    if not q.answerable:
                        continue
                    answerable += 1
                    passages = await candor.retriever.run(q.question, scope, k=5)
                    hits += any(p.text.startswith(gold[q.paragraph_id]) for p in passages)
                store.searching = searching  # type: ignore[method-assign]
                print(
                    f"ef_search {ef:4d}: recall@10 {found / (10 * len(vectors)):.3f}   hit@5 {hits}/{answerable}   "
                    f"HNSW top-{max(10, settings.candidates)} p50 {median(times):.2f} ms"
                )
            await raw.rollback()


if __name__ == "__main__":
    asyncio.run(main())
