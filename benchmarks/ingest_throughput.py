"""Ingest throughput: end-to-end chunks per second against the embedder's raw `encode`, per backend.

Corpus: distinct ~700-character passages from RAMDocs (../shared/data), one file each, so one
chunk each. For each embedder backend (torch, ONNX, ONNX int8) in one run:
- raw: `SentenceTransformer.encode` on the chunk texts alone (median of 3 runs after a warm-up);
- end-to-end: `Ingestor.ingest` into a fresh embedded Postgres (parse, chunk, embed chunks and,
  when on, sentences, write), chunks per second, with sentence embeddings on and off;
- quality: dense hit@1/hit@5 on the SQuAD subset's answerable questions, against torch.
The reference figure from the issue is 40 chunks/s (LangChain PGVector, same model, same machine).

    python benchmarks/ingest_throughput.py [--chunks 400] [--backends torch,onnx,onnx-int8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, REPO, load_squad, median
from rag.config import load_settings
from rag.embeddings import SentenceTransformerEmbedder
from rag.runtime import open_candor

RAMDOCS = REPO.parent / "shared" / "data" / "ramdocs" / "RAMDocs_test.jsonl"
REFERENCE = 40.0


def corpus(n: int) -> list[str]:
    seen: dict[str, None] = {}
    for line in RAMDOCS.read_text(encoding="utf-8").splitlines():
        for doc in json.loads(line)["documents"]:
            text = " ".join(doc["text"].split())
            if 600 <= len(text) <= 800 and "\x00" not in text:
                seen.setdefault(text)
    texts = list(seen)
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} distinct passages of 600-800 characters")
    return texts[:n]


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


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    texts = corpus(args.chunks)
    print(f"corpus: {len(texts)} passages, mean {sum(map(len, texts)) / len(texts):.0f} characters")
    print(f"reference (issue, LangChain PGVector + MiniLM): {REFERENCE:.0f} chunks/s\n")
    baseline_quality = None
    for backend in args.backends.split(","):
        embedder = SentenceTransformerEmbedder(backend=backend, cache_dir=CACHE / "models")
        raw = raw_rate(embedder, texts)
        at1, at5 = squad_quality(embedder)
        baseline_quality = baseline_quality or (at1, at5)
        with_sentences, n = await end_to_end(backend, texts, sentences=True)
        without, _ = await end_to_end(backend, texts, sentences=False)
        print(
            f"{backend:<10} raw encode {raw:6.1f} chunks/s | end-to-end {without:6.1f} chunks/s "
            f"({without / REFERENCE:.1f}x ref), with sentence vectors {with_sentences:6.1f} chunks/s "
            f"({with_sentences / REFERENCE:.1f}x ref) | {n} chunks | SQuAD dense hit@1 {at1:.3f} hit@5 {at5:.3f} "
            f"(Δ hit@5 vs first backend {at5 - baseline_quality[1]:+.3f})"
        )


if __name__ == "__main__":
    asyncio.run(main())
