"""The fixed phrases every adapter shows around an answer, in one place so they read the same on
the chat page, in Slack and in Teams (the refusal itself is a setting: `CANDOR_REFUSAL`)."""

from __future__ import annotations

LOW_CONFIDENCE_NOTE = (
    "Low confidence: parts of this answer could not be fully verified against the sources. "
    "Check the cited passages before relying on it."
)
UNANSWERED_NOTE = "No relevant information found in your knowledge base for:"
NO_PREFERENCE_REASON = "neither the effective date nor the source's authority decides"
FAILURE_NOTE = "Sorry, something went wrong while answering. The error is logged; please try again in a moment."
