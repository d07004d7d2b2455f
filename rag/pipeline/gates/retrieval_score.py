"""Gate `retrieval_score`: is the best dense cosine of any part's shortlist at the threshold? A
fused rank says nothing about absolute relevance: this gate reads the cosine only."""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.answers import GateOutcome
from rag.model.types import Passage


def best_cosine(passages: Sequence[Passage]) -> float:
    return max((p.dense_score for p in passages if p.dense_score is not None), default=-1.0)


def retrieval_score_gate(
    found: Sequence[Sequence[Passage]], parts: Sequence[str], *, threshold: float, number: int
) -> GateOutcome:
    best = [best_cosine(passages) for passages in found]
    top = max(best, default=-1.0)
    return GateOutcome(
        "retrieval_score",
        top >= threshold,
        top,
        number,
        {
            "threshold": threshold,
            "parts": [{"part": p, "best_cosine": round(b, 4)} for p, b in zip(parts, best, strict=True)],
        },
    )
