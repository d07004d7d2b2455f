"""Hand-built values for the pure stages' unit tests: passages, checked sentences, attempts."""

from __future__ import annotations

from datetime import date

from rag.model.answers import GateOutcome
from rag.model.evidence import Checked, PartEvidence, Ranked, ScoredSentence
from rag.model.types import Passage
from rag.pipeline.attempt import Attempt


def passage(
    chunk_id: int,
    text: str,
    *,
    title: str = "Handbook",
    heading: str = "",
    document: str | None = None,
    effective: date | None = None,
    cosine: float = 0.5,
) -> Passage:
    return Passage(
        chunk_id=chunk_id,
        document_id=chunk_id,
        document=document or f"doc-{chunk_id}.md",
        title=title,
        heading=heading,
        text=text,
        score=cosine,
        dense_score=cosine,
        lexical_score=0.0,
        effective_date=effective,
    )


def ranked(*passages: Passage) -> tuple[Ranked, ...]:
    """Each passage ranked by its one sentence (its whole text)."""
    return tuple(Ranked(p, p.score, (ScoredSentence(p, 0, p.text, p.score, p.score, 0.0, 0.0),)) for p in passages)


def checked(text: str, passages: tuple[Passage, ...], *, part: int = 0, supported: bool = True) -> Checked:
    return Checked(text, passages, part, supported, 0.9 if supported else 0.2, () if supported else ("no",), 0)


def attempt(
    parts: tuple[str, ...],
    evidence: tuple[tuple[Passage, ...], ...],
    sentences: tuple[Checked, ...],
    *,
    faithful: bool = True,
) -> Attempt:
    return Attempt(
        1,
        parts,
        evidence=tuple(PartEvidence(p, ranked(*found), True) for p, found in zip(parts, evidence, strict=True)),
        checked=sentences,
        gates=(
            GateOutcome("retrieval_score", True, 0.7, 1),
            GateOutcome("faithfulness", faithful, 0.9 if faithful else 0.3, 1),
        ),
    )
