"""Gate `contradiction`: do the sources of the delivered answer disagree on a fact it uses? Checked
over the whole reranked shortlist when the answer is composed (rag/pipeline/compose.py); each
conflict is said in the answer, with both values and which was preferred."""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.answers import Conflict, GateOutcome


def contradiction_gate(conflicts: Sequence[Conflict], number: int) -> GateOutcome:
    """Passed when no two sources disagree; the score is the number of conflicts said."""
    details = {"conflicts": [c.as_json() for c in conflicts]}
    return GateOutcome("contradiction", not conflicts, float(len(conflicts)), number, details)
