"""Gate `relevance`: does each answered part state the kind of value it asks for
(rag/pipeline/relevance.py)? A part that does not is unanswered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.model.answers import GateOutcome
from rag.pipeline.relevance import Relevance


def relevance_gate(parts: Sequence[str], checked: Mapping[int, Relevance], number: int) -> GateOutcome:
    stated = sum(r.stated for r in checked.values())
    details = {"parts": [{"part": parts[i], **r.as_json()} for i, r in sorted(checked.items())]}
    return GateOutcome("relevance", stated == len(checked), stated / len(checked) if checked else 1.0, number, details)
