"""The plain data of closing the loop: a question handed to a person, and a curated answer.

A `Handoff` is made when an asker clicks "Ask a person" (on a refusal, a low-confidence answer or
after a 👎): it carries what the triage post shows (the question, the answer given, its sources, the
trace) and the platform's own address of where the asker waits (`reply_to`), so the expert's reply
goes back there. A `CuratedAnswer` is an expert's answer kept as a document (`rag.loop.curated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

HandoffReason = Literal["abstained", "low_confidence", "down_vote", "asked"]
HANDOFF_REASONS: tuple[HandoffReason, ...] = ("abstained", "low_confidence", "down_vote", "asked")


@dataclass(frozen=True, slots=True)
class CitedSource:
    """A source the handed-off answer cited, as the triage post lists it."""

    n: int
    title: str
    url: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class CitedDocument:
    """A document the handed-off answer cited, with who may read it (no groups: everyone)."""

    title: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Handoff:
    id: str
    trace_id: str
    platform: str
    asker: str
    """The asker's platform id (to mention them in the reply)."""
    reason: HandoffReason
    reply_to: dict[str, Any]
    """Where the asker waits, in the platform's own terms (a Slack channel and thread ts; a Teams
    conversation reference)."""
    question: str
    answer_text: str
    route: str
    sources: tuple[CitedSource, ...] = ()
    triage: dict[str, Any] | None = None
    """Where the triage post went (its channel and ts, or activity id), once posted."""
    status: Literal["open", "replied"] = "open"
    reply_text: str | None = None
    replied_by: str | None = None
    replied_by_name: str | None = None
    replied_at: datetime | None = None
    curated_id: int | None = None
    created_at: datetime | None = None
    knowledge_bases: tuple[str, ...] | None = field(default=None)
    """The knowledge bases the question was searched in (None: all)."""
    restricted: bool = False
    """The question was answered with access groups (the asker's own, in a DM, or a channel's): its
    answer may quote documents that a triage channel's readers may not read."""
    groups: tuple[str, ...] = ()
    """Those access groups (the scope the question was answered in)."""
    cited: tuple[CitedDocument, ...] = ()
    """The documents the answer cited, with their access groups: a curated answer kept from it is
    offered to their readers (`rag.experts.reader_groups`)."""


@dataclass(frozen=True, slots=True)
class CuratedDraft:
    """What a new curated answer is made of."""

    question: str
    answer: str
    author: str
    """The author's platform id (a Slack or Teams user id) or, from the command line, their name."""
    author_name: str
    access_groups: tuple[str, ...] = ()
    expires_at: datetime | None = None
    handoff_id: str | None = None
    trace_id: str | None = None


@dataclass(frozen=True, slots=True)
class CuratedAnswer:
    id: int
    knowledge_base: str
    question: str
    answer: str
    author: str
    author_name: str
    access_groups: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    handoff_id: str | None = None
    trace_id: str | None = None
    document_id: int | None = None
    """Its document while it is searchable; None once expired."""

    @property
    def source(self) -> str:
        return f"curated:{self.id}"

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "knowledge_base": self.knowledge_base,
            "question": self.question,
            "answer": self.answer,
            "author": self.author,
            "author_name": self.author_name,
            "access_groups": list(self.access_groups),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "handoff_id": self.handoff_id,
            "trace_id": self.trace_id,
            "searchable": self.document_id is not None,
        }
