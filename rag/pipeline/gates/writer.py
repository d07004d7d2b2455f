"""Gate `writer`: the configured writer made the draft, or a fallback did (and why)."""

from __future__ import annotations

from rag.model.answers import GateOutcome
from rag.model.evidence import Draft


def writer_gate(draft: Draft, number: int) -> GateOutcome:
    """Which writer made the draft: failed when the configured one did not (and why)."""
    details = {"writer": draft.writer, "fallback": draft.fallback, "sentences": len(draft.sentences)}
    return GateOutcome("writer", draft.fallback is None, 0.0 if draft.fallback else 1.0, number, details)
