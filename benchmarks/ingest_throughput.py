"""Ingest throughput: end-to-end chunks per second against the embedder's raw `encode`, per backend.

Corpus: distinct ~700-character passages from RAMDocs (../shared/data), one file each, so one
chunk each. For each embedder backend (torch, ONNX, ONNX int8) in one run:
- raw: `SentenceTransformer.encode` on the chunk texts alone (median of 3 runs after a warm-up);
- end-to-end: `Ingestor.ingest` into a fresh embedded Postgres (parse, chunk, embed chunks and,
  when on, sentences, write), chunks per second, with sentence embeddings on and off;
- quality: dense hit@1/hit@5 on the SQuAD subset's answerable questions, against torch.
The peer, in the same run: LangChain PGVectorStore, same model, same machine (--langchain-python).

    python benchmarks/ingest_throughput.py [--chunks 300] [--backends torch,onnx,onnx-int8] [--runs 3]
        [--langchain-python /path/to/venv/bin/python]   # the baseline in the same run (langchain_baseline.py)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, corpus, load_squad, median
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import load_settings
from rag.runtime import open_candor

REFERENCE = 40.0


def raw_rate(embedder: SentenceTransformerEmbedder, texts: list[str]) -> float:
    model = embedder._load()
    model.encode(texts[:32], batch_size=32)
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True)
        rates.append(len(texts) / (time.perf_counter() - start))
    return median(rates)


async def end_to_end(backend: str, texts: list[str], *, sentences: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        for i, text in enumerate(texts):
            (folder / f"p{i:05d}.txt").write_text(text + "\n", encoding="utf-8")
        home = Path(tmp) / "home"
        home.mkdir()
        settings = load_settings(home=home, database_url=None, embedder_backend=backend, sentence_embeddings=sentences)
        async with open_candor(settings) as candor:
            # the ONNX export is cached under the benchmark cache, not counted, as in real use
            candor.embedder._load()  # type: ignore[attr-defined]
            await candor.embedder.embed(texts[:32])
            kb = await candor.knowledge_base("bench", create=True)
            assert kb is not None
            start = time.perf_counter()
            report = await candor.ingestor().ingest([folder], kb=kb)
            elapsed = time.perf_counter() - start
        return report.chunks / elapsed, report.chunks


def squad_quality(embedder: SentenceTransformerEmbedder) -> tuple[float, float]:
    paragraphs, questions = load_squad()
    answerable = [q for q in questions if q.answerable]
    model = embedder._load()
    index = {p.paragraph_id: i for i, p in enumerate(paragraphs)}
    docs = np.asarray(model.encode([f"{p.title}\n{p.text}" for p in paragraphs], normalize_embeddings=True))
    qs = np.asarray(model.encode([q.question for q in answerable], normalize_embeddings=True))
    ranks = np.argsort(-(qs @ docs.T), axis=1)
    gold = np.array([index[q.paragraph_id] for q in answerable])
    return float(np.mean(ranks[:, 0] == gold)), float(np.mean((ranks[:, :5] == gold[:, None]).any(axis=1)))


def langchain_rate(python: str, chunks: int) -> float:
    """One run of benchmarks/langchain_baseline.py in its own virtual environment."""
    result = subprocess.run(
        [python, str(Path(__file__).with_name("langchain_baseline.py")), "ingest", "--chunks", str(chunks)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    match = re.search(r"end-to-end add_texts ([0-9.]+)", result.stdout)
    if match is None:
        raise SystemExit(f"no rate in the LangChain baseline's output: {result.stdout!r} {result.stderr[-500:]!r}")
    return float(match.group(1))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--runs", type=int, default=3, help="end-to-end runs per configuration (median)")
    parser.add_argument("--langchain-python", help="python of a venv with the LangChain baseline's packages")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    texts = corpus(args.chunks)
    print(f"corpus: {len(texts)} passages, mean {sum(map(len, texts)) / len(texts):.0f} characters")
    reference, label = REFERENCE, "ref"
    if args.langchain_python:
        rates = [langchain_rate(args.langchain_python, args.chunks) for _ in range(args.runs)]
        reference, label = median(rates), "the peer"
        print(
            f"the peer, LangChain PGVectorStore in this run: {reference:.1f} chunks/s "
            f"(median of {', '.join(f'{r:.1f}' for r in rates)})"
        )
    else:
        print(f"reference (LangChain PGVector + MiniLM, measured 2026-11-29): {REFERENCE:.0f} chunks/s")
    print()
    baseline_quality = None
    for backend in args.backends.split(","):
        embedder = SentenceTransformerEmbedder(backend=backend, cache_dir=CACHE / "models")
        raw = raw_rate(embedder, texts)
        at1, at5 = squad_quality(embedder)
        baseline_quality = baseline_quality or (at1, at5)
        runs = [await end_to_end(backend, texts, sentences=False) for _ in range(args.runs)]
        without, n = median([r for r, _ in runs]), runs[0][1]
        with_sentences = median([(await end_to_end(backend, texts, sentences=True))[0] for _ in range(args.runs)])
        print(
            f"{backend:<10} raw encode {raw:6.1f} chunks/s | end-to-end {without:6.1f} chunks/s "
            f"({without / reference:.1f}x {label}), with sentence vectors {with_sentences:6.1f} chunks/s "
            f"({with_sentences / reference:.1f}x {label}) | {n} chunks, median of {args.runs} runs | "
            f"SQuAD dense hit@1 {at1:.3f} hit@5 {at5:.3f} (Δ hit@5 vs first backend {at5 - baseline_quality[1]:+.3f})"
        )


if __name__ == "__main__":
    asyncio.run(main())
