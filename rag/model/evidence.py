"""What the stages hand each other: a query, ranked passages with their scored sentences, the
evidence of each part of a question, and the writer's draft."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rag.model.types import Passage, Vector

PASSAGES_CONSIDERED = 6
"""The best passages of each part a writer is shown (and the synthesis gate weighs)."""


@dataclass(frozen=True, slots=True)
class Query:
    """One retrieval probe: the text, its vector when already embedded, its words' rarity."""

    text: str
    vector: Vector | None = None
    term_frequency: Mapping[str, float] | None = None
    """Lexeme → share of chunks containing it (from the store's statistics)."""


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    passage: Passage
    position: int
    text: str
    score: float
    meaning: float
    terms: float
    type_match: float
    vector: Vector | None = None
    answers: str = ""
    """The question line this sentence answers when it follows one (an FAQ's "Q: ..."): its context."""


@dataclass(frozen=True, slots=True)
class Ranked:
    passage: Passage
    score: float
    sentences: tuple[ScoredSentence, ...]
    """Best first."""


@dataclass(frozen=True, slots=True)
class PartEvidence:
    text: str
    ranked: tuple[Ranked, ...]
    retrieved: bool
    """False when the retrieval gate failed for this part: nothing to answer it from."""


@dataclass(frozen=True, slots=True)
class SynthesisRequest:
    question: str
    parts: tuple[PartEvidence, ...]
    context: tuple[Passage, ...]
    """The passages the writer may cite, numbered from 1 in this order."""
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class DraftSentence:
    text: str
    citations: tuple[int, ...]
    """Numbers into `SynthesisRequest.context`."""
    part: int
    origin: ScoredSentence | None = None
    """The source sentence it was copied from, when the writer is extractive."""


@dataclass(frozen=True, slots=True)
class DraftConflict:
    """A writer's note that its passages disagree: checked before it is believed (rag/pipeline/writer_conflicts.py)."""

    note: str
    values: tuple[str, ...]
    citations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Draft:
    sentences: tuple[DraftSentence, ...]
    unanswered_parts: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    """The writer's own remarks: logged, not delivered."""
    conflicts: tuple[DraftConflict, ...] = ()
    """Disagreements between passages the writer reports: delivered only when confirmed."""
    writer: str = ""
    """The writer that made it (a fallback writer when the configured one failed)."""
    fallback: str | None = None
    """Why the configured writer did not make it, when it did not."""
    read: tuple[int, ...] = ()
    """The chunk ids of the passages the writer was shown, when not the whole context (a model's
    prompt holds each part's best few): where a mis-cited sentence may be requoted from."""

    @property
    def abstained(self) -> bool:
        return not self.sentences


@dataclass(frozen=True, slots=True)
class Checked:
    """A draft sentence after the critic."""

    text: str
    passages: tuple[Passage, ...]
    part: int
    supported: bool
    score: float
    reasons: tuple[str, ...]
    origin_index: int
    decided_by: str = ""
    """Which verifier decided (a composite critic's prefilter, judge or fallback)."""
    written: str | None = None
    """Requoted: the writer's own sentence, which the critic rejected for `written_reasons` and
    this source sentence replaced (logged as dropped: the gate's view counts it)."""
    written_reasons: tuple[str, ...] = ()
