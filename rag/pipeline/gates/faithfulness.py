"""Gate `faithfulness`: how many drafted sentences the critic rejected, and how well the rest
are supported; a failure is what makes the flow retry (rag/pipeline/flow.py, `should_retry`)."""

from __future__ import annotations

from collections import Counter

from rag.model.answers import GateOutcome
from rag.pipeline.attempt import Attempt


def faithfulness_gate(
    attempt: Attempt, *, max_unsupported: int, min_support: float, verifier: str, number: int
) -> GateOutcome:
    unsupported = len(attempt.unsupported)
    score = attempt.support_score
    has_content = bool(attempt.supported)
    passed = has_content and unsupported <= max_unsupported and score >= min_support
    return GateOutcome(
        "faithfulness",
        passed,
        score,
        number,
        {
            "sentences": len(attempt.checked),
            "unsupported": unsupported,
            "max_unsupported": max_unsupported,
            "min_support": min_support,
            "verifier": verifier,
            "decided_by": dict(Counter(c.decided_by for c in attempt.checked if c.decided_by)),
        },
    )
