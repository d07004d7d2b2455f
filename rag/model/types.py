"""The plain data that flows between Candor's stages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

Matrix = np.ndarray[Any, np.dtype[np.float32]]
"""Rows of float32 vectors, one per text."""
Vector = np.ndarray[Any, np.dtype[np.float32]]
"""One float32 vector."""

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
_SEPARATORS = re.compile(r"[\x0b\x0c\x1c-\x1f]")  # whitespace to str.split(): kept as a space
_UNPAIRED_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` as Postgres, JSON and the tokenizer can all take it: control characters dropped
    (Postgres stores no NUL), the separators `str.split` counts as whitespace kept as spaces, and a
    lone surrogate (a malformed `\\ud800` escape in a chat event's JSON, or undecodable bytes in a
    command-line argument) replaced by U+FFFD."""
    return _UNPAIRED_SURROGATE.sub("\ufffd", _SEPARATORS.sub(" ", _CONTROL.sub("", text)))


NO_ONE = "candor:no-one"
"""The access group of a synced document whose source permissions could not be mapped to groups:
no scope ever holds it (`AccessScope` drops it), so the document is stored but never read."""


@dataclass(frozen=True, slots=True)
class AccessScope:
    """What one asker may read.

    A document without access groups is public; a document with groups is visible only to a scope
    holding at least one of them. `knowledge_bases=None` means every knowledge base.
    """

    groups: frozenset[str] = frozenset()
    knowledge_bases: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if NO_ONE in self.groups:  # from a policy file or --access: never grants a restricted-to-no-one document
            object.__setattr__(self, "groups", self.groups - {NO_ONE})

    @classmethod
    def public(cls, knowledge_bases: frozenset[str] | None = None) -> AccessScope:
        return cls(frozenset(), knowledge_bases)

    def can_read(self, document_groups: tuple[str, ...] | frozenset[str]) -> bool:
        return not document_groups or bool(self.groups.intersection(document_groups))


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved chunk with the document facts later stages need (citations, conflicts)."""

    chunk_id: int
    document_id: int
    document: str
    """The path or URL as ingested."""
    title: str
    heading: str
    text: str
    score: float
    """The fused score: good for ranking within one query, meaningless across queries."""
    dense_score: float | None
    """Cosine similarity of the query and the chunk (computed for every candidate, whichever side found it)."""
    lexical_score: float | None
    url: str | None = None
    effective_date: date | None = None
    authority: int = 0
    knowledge_base: str = ""
    access_groups: tuple[str, ...] = field(default_factory=tuple)
    answered_by: str | None = None
    """Set on a curated answer (an expert's answer kept as a document): who wrote it."""
    dated_by: str | None = None
    """Where `effective_date` came from: "front_matter", "text" or "file_time" (the file's
    modification time, which a copy, a checkout or a sync resets: no statement of when it took effect)."""

    def as_json(self) -> dict[str, object]:
        """The shape `candor search --json` prints."""
        return {
            "document": self.document,
            "title": self.title,
            "heading": self.heading,
            "text": self.text,
            "score": round(self.score, 6),
            "dense_score": None if self.dense_score is None else round(self.dense_score, 6),
            "lexical_score": None if self.lexical_score is None else round(self.lexical_score, 6),
            "effective_date": self.effective_date.isoformat() if self.effective_date else None,
            "url": self.url,
        }
