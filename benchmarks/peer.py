"""Candor's hybrid search beside the peer's dense search, at 100k chunks, on one Postgres server.

The 100k scale database of `search_latency.py` (cached) is opened; its chunks (texts and vectors)
are exported once and loaded by the peer, LangChain's `PGVectorStore` (benchmarks/langchain_baseline.py,
run from its own virtual environment), into a table of its own on the same server, with an HNSW
index of the library's defaults. Then, in one sitting, after a warm-up each:

    Candor (half the runs) → the peer (all its runs) → Candor (the other half)

each run timing the same SQuAD questions one after another, query embedding included (Candor:
`HybridRetriever.run`, ONNX int8 embedder, the default; the peer: `similarity_search`, its model
on torch through langchain-huggingface). Reported: p50/p95 per side (median over runs), the ratio
of the p95s (target ≤ 0.8), and hit@5 on the answerable questions (target: at least the peer's).

    python benchmarks/peer.py --langchain-python /tmp/lc/bin/python [--queries 200] [--runs 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, load_squad, median, percentile
from benchmarks.search_latency import build, pool
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import load_settings
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor

SIZE = 100_000
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/peer.py --langchain-python /tmp/lc/bin/python"


async def export(candor: Candor, path: Path) -> None:
    if await asyncio.to_thread(path.exists):
        return
    async with candor.store.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        rows = await (await raw.execute("SELECT text, embedding FROM chunks ORDER BY id", binary=True)).fetchall()
        await raw.rollback()
    texts = np.array([r[0] for r in rows])
    vectors = np.stack([np.asarray(getattr(r[1], "to_numpy", lambda v=r[1]: v)(), dtype=np.float32) for r in rows])
    np.savez(path, texts=texts, vectors=vectors)
    print(f"exported {len(texts)} chunks for the peer to {path}", flush=True)


async def candor_runs(candor: Candor, scope: AccessScope, asked: list[str], runs: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(runs):
        times = []
        for q in asked:
            start = time.perf_counter()
            await candor.retriever.run(q, scope, k=5)
            times.append((time.perf_counter() - start) * 1000)
        out.append((percentile(times, 50), percentile(times, 95)))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langchain-python", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    paragraphs, questions = load_squad()
    asked = [q.question for q in questions[: args.queries]]
    warm = [q.question for q in questions[args.queries : args.queries + args.warmup]]
    gold = {p.paragraph_id: " ".join(p.text.split()) for p in paragraphs}
    answerable = [(q.question, gold[q.paragraph_id]) for q in questions[: args.queries] if q.answerable]
    asked_file = CACHE / "peer-questions.json"
    asked_file.write_text(json.dumps({"questions": asked, "warmup": warm, "answerable": answerable}), encoding="utf-8")
    home = CACHE / f"scale-home-{SIZE}"
    home.mkdir(parents=True, exist_ok=True)
    async with open_candor(load_settings(home=home, database_url=None)) as candor:
        embedder = candor.embedder
        assert isinstance(embedder, SentenceTransformerEmbedder)
        texts, vectors = pool(embedder)
        await build(candor, SIZE, texts, vectors)
        exported = CACHE / f"peer-export-{SIZE}.npz"
        await export(candor, exported)
        url = candor.store.engine.url.render_as_string(hide_password=False)
        scope = AccessScope(knowledge_bases=frozenset([f"scale{SIZE}"]))
        for q in warm:
            await candor.retriever.run(q, scope, k=5)
        first = await candor_runs(candor, scope, asked, args.runs // 2)
        print(f"candor, first {len(first)} runs: {first}", flush=True)
        done = await asyncio.to_thread(
            subprocess.run,
            [
                args.langchain_python,
                str(Path(__file__).with_name("langchain_baseline.py")),
                "search",
                "--url",
                url,
                "--export",
                str(exported),
                "--questions",
                str(asked_file),
                "--runs",
                str(args.runs),
                "--warmup",
                str(args.warmup),
            ],
            capture_output=True,
            text=True,
            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        )
        if done.returncode != 0:
            raise SystemExit(f"the peer failed:\n{done.stderr[-3000:]}")
        peer = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"peer: {peer}", flush=True)
        for q in warm[:50]:
            await candor.retriever.run(q, scope, k=5)
        second = await candor_runs(candor, scope, asked, args.runs - args.runs // 2)
        print(f"candor, last {len(second)} runs: {second}", flush=True)
        hits = 0
        for question, paragraph in answerable:
            hits += any(p.text.startswith(paragraph) for p in await candor.retriever.run(question, scope, k=5))
    runs = first + second
    candor_p50, candor_p95 = median([r[0] for r in runs]), median([r[1] for r in runs])
    peer_p50, peer_p95 = median(peer["p50s"]), median(peer["p95s"])
    print(
        f"{SIZE} chunks, {len(asked)} SQuAD questions x {args.runs} runs each, query embedding included:\n"
        f"  Candor hybrid search: p50 {candor_p50:.1f} ms, p95 {candor_p95:.1f} ms (per-run p95 "
        f"{', '.join(f'{r[1]:.1f}' for r in runs)}); hit@5 {hits}/{len(answerable)}\n"
        f"  LangChain PGVectorStore dense search: p50 {peer_p50:.1f} ms, p95 {peer_p95:.1f} ms (per-run p95 "
        f"{', '.join(f'{v:.1f}' for v in peer['p95s'])}); hit@5 {peer['hits']}/{peer['answerable']}"
        + (
            f"; loaded in {peer['load_seconds']:.0f} s, index in {peer['index_seconds']:.0f} s"
            if peer["load_seconds"]
            else ""
        )
        + f"\n  p95 ratio Candor / peer: {candor_p95 / peer_p95:.2f} (target ≤ 0.8)"
    )
    print(f"reproduce: {COMMAND}")


if __name__ == "__main__":
    asyncio.run(main())
