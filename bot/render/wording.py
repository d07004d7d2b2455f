"""The fixed phrases every adapter shows around an answer, in one place so they read the same on
the chat page, in Slack and in Teams (the refusal itself is a setting: `CANDOR_REFUSAL`), and the
one way every renderer shortens a text to a platform's limit."""

from __future__ import annotations

import re

from rag.model.answers import Source

LOW_CONFIDENCE_NOTE = (
    "Low confidence: parts of this answer could not be fully verified against the sources. "
    "Check the cited passages before relying on it."
)
UNANSWERED_NOTE = "No relevant information found in your knowledge base for:"
NO_PREFERENCE_REASON = "neither the effective date nor the source's authority decides"
FAILURE_NOTE = "Sorry, something went wrong while answering. The error is logged; please try again in a moment."


def shorten(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, cut to at most `limit` characters at a word boundary
    with "…" added when anything was cut (raw text: escape afterwards)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    if limit < 2:
        return ""
    cut = flat.rfind(" ", 0, limit)
    if cut < limit // 2:  # one very long word: cut inside it rather than lose most of the text
        cut = limit - 1
    return flat[:cut].rstrip() + "…"


def source_date(source: Source) -> str:
    """How a source is dated beside its title: "effective 2026-03-01", or for a curated answer (an
    expert's reply kept as a document) "answered by Ana Diaz on 2026-12-02"; "" when undated. Raw
    text: escape afterwards."""
    day = source.effective_date.isoformat() if source.effective_date else None
    if source.answered_by:
        return f"answered by {source.answered_by}" + (f" on {day}" if day else "")
    return f"effective {day}" if day else ""


_DISAGREE = re.compile(r"^\s*(?:the\s+)?sources disagree\s*[:.-]\s*", re.IGNORECASE)


def conflict_note(note: str) -> str:
    """A conflict's note under the renderers' own "Sources disagree" heading: without a heading of
    its own, which the pipeline's notes begin with ("Sources disagree: ... says 20 days; ...")."""
    return _DISAGREE.sub("", note.strip())
