"""Retrieval quality on the SQuAD 2.0 subset: hit@1 and hit@5 of the gold paragraph.

The 124 paragraphs are the knowledge base; the 508 answerable questions are asked. Modes: dense
only (cosine), full-text only (ts_rank), reciprocal rank fusion, and weighted fusion. The
dense weight is chosen on one half of the questions (split by article title) and reported on
the other half, so the figure is not tuned on the set it reports.

    python benchmarks/retrieval_quality.py [--candidates N]   # prints a table
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, SquadQuestion, load_squad, split_by_title, write_squad_corpus
from rag.config import load_settings
from rag.pipeline.retrieve import fuse_rrf, fuse_weighted
from rag.runtime import open_candor
from rag.store.postgres import Candidate

Ranker = Callable[[list[Candidate]], list[Candidate]]
WEIGHTS = [round(0.05 * i, 2) for i in range(21)]


def dense_only(cands: list[Candidate]) -> list[Candidate]:
    return sorted((c for c in cands if c.dense_rank is not None), key=lambda c: -c.cosine)


def lexical_only(cands: list[Candidate]) -> list[Candidate]:
    return sorted((c for c in cands if c.lexical_rank is not None), key=lambda c: (-c.lexical, c.chunk_id))


def rrf(cands: list[Candidate]) -> list[Candidate]:
    return [s.candidate for s in fuse_rrf(cands)]


def weighted(w: float) -> Ranker:
    return lambda cands: [s.candidate for s in fuse_weighted(cands, dense_weight=w)]


def hits(ranked: list[Candidate], gold: str, docs: dict[str, str], k: int) -> bool:
    seen: list[str] = []
    for c in ranked:
        pid = docs.get(c.source, "")
        if pid not in seen:
            seen.append(pid)
        if len(seen) >= k:
            break
    return gold in seen[:k]


def score(
    table: dict[str, list[Candidate]], questions: Sequence[SquadQuestion], ranker: Ranker, docs: dict[str, str]
) -> tuple[int, int, int]:
    at1 = sum(hits(ranker(table[q.question]), q.paragraph_id, docs, 1) for q in questions)
    at5 = sum(hits(ranker(table[q.question]), q.paragraph_id, docs, 5) for q in questions)
    return at1, at5, len(questions)


def fmt(result: tuple[int, int, int]) -> str:
    at1, at5, n = result
    return f"hit@1 {at1 / n:.3f} ({at1}/{n})   hit@5 {at5 / n:.3f} ({at5}/{n})"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--candidates", type=int, default=None, help="per side (default: CANDOR_CANDIDATES)")
    args = parser.parse_args()
    paragraphs, questions = load_squad()
    answerable = [q for q in questions if q.answerable]
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        docs = write_squad_corpus(Path(tmp) / "corpus", paragraphs)
        settings = load_settings(home=home, database_url=None)
        limit = args.candidates or settings.candidates  # the search's own number of candidates per side
        async with open_candor(settings) as candor:
            kb = await candor.knowledge_base("squad", create=True)
            assert kb is not None
            report = await candor.ingestor().ingest([Path(tmp) / "corpus"], kb=kb)
            print(
                f"knowledge base: {report.added} paragraphs, {report.chunks} chunks; embedder {candor.embedder.name}; "
                f"{limit} candidates per side"
            )
            table: dict[str, list[Candidate]] = {}
            vectors = await candor.embedder.embed([q.question for q in answerable])
            for q, vec in zip(answerable, vectors, strict=True):
                table[q.question] = await candor.store.hybrid_candidates(
                    vec, q.question, knowledge_bases=["squad"], groups=[], limit=limit
                )
    calibrate, held_out = split_by_title(answerable)
    print(f"questions: {len(answerable)} answerable; calibration half {len(calibrate)}, report half {len(held_out)}")
    best = max(WEIGHTS, key=lambda w: score(table, calibrate, weighted(w), docs)[:2])
    print(f"dense weight chosen on the calibration half: {best}")
    print(f"configured default (CANDOR_DENSE_WEIGHT): {settings.dense_weight}, fusion {settings.fusion}\n")
    modes: list[tuple[str, Ranker]] = [
        ("dense only", dense_only),
        ("full-text only", lexical_only),
        ("hybrid RRF (k=60)", rrf),
        (f"hybrid weighted w={best}", weighted(best)),
        (f"hybrid weighted w={settings.dense_weight} (default)", weighted(settings.dense_weight)),
    ]
    for label, questions_ in (("report half", held_out), ("all 508", answerable)):
        print(f"== {label} ==")
        for name, ranker in modes:
            print(f"  {name:<36} {fmt(score(table, questions_, ranker, docs))}")


if __name__ == "__main__":
    asyncio.run(main())
