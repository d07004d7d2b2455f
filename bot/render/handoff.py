"""What every chat adapter says about a hand-off to a person, in one place so Slack and Teams (which
never import each other) offer it for the same answers and describe it in the same words."""

from __future__ import annotations

from rag.model.answers import Answer
from rag.model.loop import HandoffReason

REASON_WORDS: dict[str, str] = {
    "abstained": "Candor could not answer",
    "low_confidence": "Candor answered with low confidence",
    "down_vote": "The asker marked the answer 👎",
    "asked": "Candor left part of the question unanswered",
}
"""Why a person was asked, as the triage post says it (raw text: escape afterwards)."""


def trace_url(public_url: str | None, trace_id: str) -> str | None:
    """The dashboard's page of a trace, when the server's public address is known (CANDOR_PUBLIC_URL)."""
    return f"{public_url.rstrip('/')}/dashboard/traces/{trace_id}" if public_url else None


def handoff_reason(answer: Answer) -> HandoffReason | None:
    """Why a person may be wanted: the answer refused, is low-confidence, or left a part unanswered."""
    if answer.route in ("abstained", "low_confidence"):
        return answer.route
    return "asked" if answer.unanswered_parts else None
