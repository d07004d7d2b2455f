"""The conflict audit's result as plain data (`candor audit conflicts`), and its JSON form.

A `ConflictAudit` lists `ConflictPair`s: two documents, the preferred one first, with every
`Difference` between them (the named thing, the attribute, each side's value and the sentence it
comes from). Pure: no database, no rendering (the text form is `bot/render/audit_text.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from rag.model.types import Passage
from rag.text.facts import content_words, values, variant_qualifiers
from rag.text.names import codes, names

AUDIT_FORMAT = 1
"""Bumped when the JSON shape changes in a way scripts would notice."""

Newer = Literal["first", "second", "same date", "undated"]

_KIND_NOUN = re.compile(
    r"plans?|tiers?|products?|editions?|versions?|collectors?|models?|packages?|licen[cs]es?|subscriptions?|"
    r"add-ons?|modules?|devices?|services?|programmes?|programs?|levels?|bands?|grades?|policy|policies"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass(frozen=True, slots=True)
class AuditedDocument:
    id: int
    title: str
    source: str
    """The path or URL as ingested."""
    url: str | None
    effective_date: date | None
    authority: int
    access_groups: tuple[str, ...]
    date_source: str | None = None
    """Where the effective date was read: front_matter, text, or file_time (the file's own time: a
    weak witness of which page is newer)."""

    @classmethod
    def of(cls, passage: Passage, date_source: str | None = None) -> AuditedDocument:
        return cls(
            passage.document_id,
            passage.title,
            passage.document,
            passage.url,
            passage.effective_date,
            passage.authority,
            passage.access_groups,
            date_source,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "document": self.source,
            "url": self.url,
            "effective_date": self.effective_date.isoformat() if self.effective_date else None,
            "date_source": self.date_source,
            "authority": self.authority,
            "access_groups": list(self.access_groups),
        }


@dataclass(frozen=True, slots=True)
class StatedValue:
    value: str
    """As written ("$12", "20 days")."""
    sentence: str
    heading: str

    def as_json(self) -> dict[str, str]:
        return {"value": self.value, "sentence": self.sentence, "heading": self.heading}


@dataclass(frozen=True, slots=True)
class Difference:
    subject: str
    """The named thing both sentences give a value for ("Team plan")."""
    attribute: str
    """What kind of value, with the variant it is for ("amount ($), monthly")."""
    first: StatedValue
    second: StatedValue

    def as_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "attribute": self.attribute,
            "values": [self.first.as_json(), self.second.as_json()],
        }


@dataclass(frozen=True, slots=True)
class ConflictPair:
    first: AuditedDocument
    second: AuditedDocument
    newer: Newer
    preferred: Literal["first"] | None
    """The first document is the one an answer prefers, or neither is (same date and authority)."""
    reason: str
    similarity: float
    """Cosine of the closest chunk pair the differences were found in."""
    differences: tuple[Difference, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "documents": [self.first.as_json(), self.second.as_json()],
            "newer": self.newer,
            "preferred": self.preferred,
            "reason": self.reason,
            "similarity": round(self.similarity, 4),
            "differences": [d.as_json() for d in self.differences],
        }


@dataclass(frozen=True, slots=True)
class ConflictAudit:
    knowledge_base: str
    documents: int
    chunks: int
    chunk_pairs: int
    """Close chunk pairs of different documents whose sentences were compared."""
    sentence_pairs: int
    """Value-stating sentence pairs compared within them."""
    pairs: tuple[ConflictPair, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "audit_format": AUDIT_FORMAT,
            "knowledge_base": self.knowledge_base,
            "documents": self.documents,
            "chunks": self.chunks,
            "compared": {"chunk_pairs": self.chunk_pairs, "sentence_pairs": self.sentence_pairs},
            "pairs": [p.as_json() for p in self.pairs],
        }


def newer_of(first: date | None, second: date | None) -> Newer:
    """Which side is newer; "undated" when either has no effective date (nothing can be said)."""
    if first is None or second is None:
        return "undated"
    if first == second:
        return "same date"
    return "first" if first > second else "second"


def subject_of(first: str, second: str) -> str:
    """The named thing two sentences give values for: the names and codes both use ("Team plan",
    "NW-200"), else the words they share, in the first sentence's order ("full-time employees
    receive paid annual leave per calendar year")."""
    shared = sorted((names(first) & names(second)) | (codes(first) & codes(second)))
    if shared:
        return ", ".join(_with_kind(name, first, second) for name in shared)
    a, b = _without_values(first), _without_values(second)
    common = content_words(a) & content_words(b)
    words = [w.lower() for w in _WORD.findall(a) if content_words(w) & common]
    return " ".join(dict.fromkeys(words)) or "(unnamed)"


def attribute_of(value: str, sentence: str) -> str:
    """The kind of a value in words, with the variant qualifiers of its sentence ("amount ($), monthly")."""
    found = values(value)
    kind = found[0].kind if found else "value"
    if kind.startswith("money"):
        label = f"amount ({kind.removeprefix('money')})"
    elif kind in ("date", "time", "percent", "value"):
        label = {"time": "time of day", "percent": "percentage"}.get(kind, kind)
    elif len(kind) <= 2:
        label = f"amount in {kind.upper()}"
    else:
        label = f"number of {kind}s"
    return ", ".join([label, *sorted(variant_qualifiers(sentence))])


def _with_kind(name: str, first: str, second: str) -> str:
    """A name with its kind noun ("Team" → "Team plan") when both sentences say it so."""
    pattern = re.compile(rf"\b{re.escape(name)}\s+({_KIND_NOUN.pattern})\b")
    a, b = pattern.search(first), pattern.search(second)
    if a and b and a.group(1).lower() == b.group(1).lower():
        return f"{name} {a.group(1).lower()}"
    return name


def _without_values(text: str) -> str:
    for v in values(text):
        text = text.replace(v.surface, " ")
    return text
