"""Fusing the dense and full-text candidates (rag/pipeline/retrieve.py): both rules, on hand-built
candidates whose expected order is worked out by hand."""

from __future__ import annotations

import pytest

from rag.pipeline.retrieve import fuse_rrf, fuse_weighted
from rag.store.rows import Candidate


def candidate(
    chunk_id: int, cosine: float, lexical: float, dense_rank: int | None, lexical_rank: int | None
) -> Candidate:
    return Candidate(
        chunk_id=chunk_id,
        document_id=chunk_id,
        source=f"doc-{chunk_id}.md",
        title="t",
        url=None,
        heading="",
        text="text",
        effective_date=None,
        authority=0,
        access_groups=(),
        knowledge_base="kb",
        cosine=cosine,
        lexical=lexical,
        dense_rank=dense_rank,
        lexical_rank=lexical_rank,
    )


CLOSE = candidate(1, cosine=0.80, lexical=0.0, dense_rank=1, lexical_rank=None)
"""Found by meaning only."""
WORDS = candidate(2, cosine=0.40, lexical=0.9, dense_rank=None, lexical_rank=1)
"""Found by its words only."""
BOTH = candidate(3, cosine=0.70, lexical=0.6, dense_rank=2, lexical_rank=2)
"""Found by both sides."""


def test_weighted_fusion_scales_each_side_to_its_best_and_mixes_them() -> None:
    fused = fuse_weighted([CLOSE, WORDS, BOTH], dense_weight=0.6)
    scores = {s.candidate.chunk_id: s.score for s in fused}
    # dense scaled over [0.40, 0.80], lexical over its best (0.9)
    assert scores[1] == pytest.approx(0.6 * 1.0 + 0.4 * 0.0)
    assert scores[2] == pytest.approx(0.6 * 0.0 + 0.4 * 1.0)
    assert scores[3] == pytest.approx(0.6 * 0.75 + 0.4 * (0.6 / 0.9))
    assert [s.candidate.chunk_id for s in fused] == [3, 1, 2]


def test_weighted_fusion_of_equal_or_no_candidates() -> None:
    assert fuse_weighted([]) == []
    same = [candidate(5, 0.5, 0.0, 1, None), candidate(4, 0.5, 0.0, 2, None)]
    fused = fuse_weighted(same, dense_weight=0.6)
    assert [s.score for s in fused] == [pytest.approx(0.6), pytest.approx(0.6)]  # no spread: both top, no division
    assert [s.candidate.chunk_id for s in fused] == [4, 5]  # ties by chunk id, so the order is stable


def test_reciprocal_rank_fusion_rewards_being_found_by_both_sides() -> None:
    fused = fuse_rrf([CLOSE, WORDS, BOTH], k=60)
    scores = {s.candidate.chunk_id: s.score for s in fused}
    assert scores[1] == pytest.approx(1 / 61) and scores[2] == pytest.approx(1 / 61)
    assert scores[3] == pytest.approx(2 / 62)
    assert [s.candidate.chunk_id for s in fused] == [3, 1, 2]
