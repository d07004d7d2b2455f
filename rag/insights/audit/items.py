"""What `candor audit answers` audits, read from stored traces: delivered sentences with the text of
the passages they cite, abstentions and unanswered parts with the scope to re-check them in, and the
verdict on each (`rag.insights.audit.answers` runs the audit; these are its plain data and the pure row parsing)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rag.model.types import AccessScope


@dataclass(frozen=True, slots=True)
class DeliveredSentence:
    trace_id: str
    position: int
    """Index in the trace's `answer -> 'sentences'`."""
    text: str
    citations: tuple[int, ...]
    evidence: tuple[str, ...]
    """The full text of each passage it cites, as stored with the answer."""


@dataclass(frozen=True, slots=True)
class DeliveredAnswer:
    trace_id: str
    created_at: datetime
    question: str
    gate_verifier: str | None
    sentences: tuple[DeliveredSentence, ...]
    writer: str | None = None
    """The model that wrote the answer (`traces.models ->> 'synthesizer'`): a judge of the same model
    judges its own writing, which is not independent either."""


@dataclass(frozen=True, slots=True)
class Abstention:
    """An abstained question (`part` None) or one unanswered part of a delivered answer."""

    trace_id: str
    created_at: datetime
    question: str
    part: str | None
    text: str
    """What is re-checked: the part, or the question (its standalone rewrite when there is one)."""
    scope: AccessScope


@dataclass(frozen=True, slots=True)
class SentenceAudit:
    sentence: DeliveredSentence
    supported: bool | None
    """None: the verifier could not judge it."""
    score: float | None
    reasons: tuple[str, ...]
    independent: bool

    def row(self) -> dict[str, Any]:
        s = self.sentence
        return {
            "trace_id": s.trace_id,
            "position": s.position,
            "text": s.text,
            "citations": list(s.citations),
            "supported": self.supported,
            "score": self.score,
            "reasons": list(self.reasons),
            "independent": self.independent,
        }


@dataclass(frozen=True, slots=True)
class AbstentionAudit:
    abstention: Abstention
    label: str
    score: float | None
    evidence: dict[str, Any]

    def row(self) -> dict[str, Any]:
        a = self.abstention
        return {
            "trace_id": a.trace_id,
            "part": a.part,
            "label": self.label,
            "score": self.score,
            "evidence": self.evidence,
        }


@dataclass(frozen=True, slots=True)
class NotRechecked:
    """An abstention whose re-check failed: no row is stored for it, so a later run picks it again."""

    abstention: Abstention
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"trace_id": self.abstention.trace_id, "part": self.abstention.part, "reason": self.reason}


# --- from stored rows to what is audited (pure) --------------------------------------------------------


def delivered_answer(row: Mapping[str, Any]) -> DeliveredAnswer:
    """A sampled trace's delivered sentences, each with the stored text of the passages it cites."""
    excerpts = {int(s["n"]): str(s.get("excerpt") or "") for s in row.get("sources") or [] if "n" in s}
    sentences = tuple(
        DeliveredSentence(
            str(row["id"]),
            position,
            str(s.get("text") or ""),
            tuple(int(n) for n in s.get("citations") or []),
            tuple(excerpts[int(n)] for n in s.get("citations") or [] if int(n) in excerpts),
        )
        for position, s in enumerate(row.get("sentences") or [])
    )
    gate, writer = row.get("gate_verifier"), row.get("writer")
    return DeliveredAnswer(str(row["id"]), row["created_at"], str(row["question"]), gate, sentences, writer)


def abstentions_of(row: Mapping[str, Any]) -> list[Abstention]:
    """An abstained trace is one item (the question); a delivered one, an item per unanswered part."""
    scope = stored_scope(row.get("scope"))
    common = {"trace_id": str(row["id"]), "created_at": row["created_at"], "question": str(row["question"])}
    if row["route"] == "abstained":
        asked = str(row.get("rewritten_question") or row["question"])
        return [Abstention(**common, part=None, text=asked, scope=scope)]
    parts = dict.fromkeys(str(p) for p in row.get("unanswered_parts") or [])  # a part stated twice is one item
    return [Abstention(**common, part=p, text=p, scope=scope) for p in parts]


def stored_scope(scope: Any) -> AccessScope:
    """The scope a trace was answered in, when the caller stored one; else public documents only."""
    if not isinstance(scope, Mapping):
        return AccessScope.public()
    kbs = scope.get("knowledge_bases")
    return AccessScope(frozenset(scope.get("groups") or ()), None if kbs is None else frozenset(kbs))
