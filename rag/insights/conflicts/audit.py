"""`candor audit conflicts`: pairs of documents in a knowledge base that give different values for the
same fact, the quiet failure where an outdated page (an old FAQ, a launch announcement) is retrieved
next to, or instead of, the current one.

1. Candidates: chunks of different documents whose embeddings are close (`rag.insights.conflicts.queries`,
   pgvector's nearest neighbours of each chunk): pages that say much the same thing. Only the
   sentences of such chunk pairs are compared, never every sentence with every other.
2. Facts: the stored sentences of those chunks that state a value (an amount, a duration, a count, a
   date); a flattened table row is read cell by cell (`rag.text.claims.row_cells`), each cell with its
   row's key, since every column of a row is about its own subject.
3. Comparison: the contradiction detector's own rule (`rag.pipeline.contradictions.differing_values`): both
   sentences name the same things and codes, carry the same qualifiers (monthly/annual, ...), say
   mostly the same words, mean nearly the same, and give different values of one kind. Beacon and
   Beacon Pro, or the Team and Team Plus plans, are different names and so different subjects; a
   value said again in other words is no difference.
4. One finding per document pair, with each differing value and its sentence, the newer side, and
   the side an answer would prefer (`rag.pipeline.contradictions.prefer`: newer effective date, then authority).

Restricted documents are audited too: this is an operator's tool over the whole base, and each
document's access groups are shown with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.insights.conflicts.findings import (
    AuditedDocument,
    ConflictAudit,
    ConflictPair,
    Difference,
    StatedValue,
    attribute_of,
    newer_of,
    subject_of,
)
from rag.insights.conflicts.queries import ChunkPair, chunk_passages, close_chunk_pairs
from rag.model.evidence import ScoredSentence
from rag.model.ports import Embedder
from rag.model.types import Passage
from rag.pipeline.contradictions import MIN_COSINE, differing_values, prefer, same_subject
from rag.store.evidence import sentence_evidence
from rag.store.postgres import KnowledgeBase, PostgresStore, Vector
from rag.text.claims import row_cells
from rag.text.facts import values

__all__ = ["AuditSettings", "ConflictAudit", "ConflictPair", "Difference", "StatedValue", "audit_conflicts"]


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """How wide the candidate net is cast. Defaults found on the sample handbook: its planted
    conflicts sit in chunk pairs at cosine 0.69 to 0.91, unrelated pages below 0.5."""

    neighbours: int = 8
    """Nearest chunks of other documents looked at per chunk."""
    min_chunk_cosine: float = 0.5
    """Chunk pairs less similar than this are not compared at all."""

    def __post_init__(self) -> None:
        if self.neighbours < 1:
            raise ValueError("neighbours must be at least 1")
        if not -1.0 <= self.min_chunk_cosine <= 1.0:
            raise ValueError("min_chunk_cosine must be between -1 and 1")


@dataclass(frozen=True, slots=True)
class Found:
    """Two sentences of a close chunk pair that give different values for one fact."""

    first: ScoredSentence
    second: ScoredSentence
    first_value: str
    second_value: str
    similarity: float
    """The cosine of the chunk pair the sentences were found in."""


async def audit_conflicts(
    store: PostgresStore, embedder: Embedder, kb: KnowledgeBase, settings: AuditSettings | None = None
) -> ConflictAudit:
    """Every pair of documents of `kb` that state different values for the same fact."""
    settings = settings or AuditSettings()
    pairs = await close_chunk_pairs(store, kb, neighbours=settings.neighbours, min_cosine=settings.min_chunk_cosine)
    chunk_ids = {chunk for pair in pairs for chunk in (pair.first, pair.second)}
    passages, date_sources = await chunk_passages(store, kb, chunk_ids)
    evidence = await sentence_evidence(store, sorted(chunk_ids))
    stated = [
        (s.chunk_id, s.position, cell, s.embedding if cell == s.text else None)
        for s in evidence.sentences
        for cell in row_cells(s.text)
        if stated_values(cell)
    ]
    missing = sorted({text for _, _, text, vector in stated if vector is None})
    embedded = dict(zip(missing, await embedder.embed(missing), strict=True)) if missing else {}
    facts = facts_by_chunk(
        (passages[chunk], position, text, vector if vector is not None else embedded[text])
        for chunk, position, text, vector in stated
        if chunk in passages
    )
    found, compared = compare_pairs(pairs, facts)
    counts = await store.counts(kb)
    return ConflictAudit(
        knowledge_base=kb.name,
        documents=counts["documents"],
        chunks=counts["chunks"],
        chunk_pairs=len(pairs),
        sentence_pairs=compared,
        pairs=group_by_documents(found, date_sources),
    )


def stated_values(text: str) -> bool:
    """Whether `text` states a value the comparison can use: a bare number has no kind to compare."""
    return any(v.kind != "number" for v in values(text))


def facts_by_chunk(
    sentences: Iterable[tuple[Passage, int, str, Vector]],
) -> dict[int, list[ScoredSentence]]:
    """The value-stating sentences (and table cells) of each chunk, in order, as the detector reads them."""
    facts: dict[int, list[ScoredSentence]] = {}
    for passage, position, text, vector in sentences:
        sentence = ScoredSentence(passage, position, text, 0.0, 0.0, 0.0, 0.0, vector)
        facts.setdefault(passage.chunk_id, []).append(sentence)
    return facts


def compare_pairs(pairs: Sequence[ChunkPair], facts: Mapping[int, Sequence[ScoredSentence]]) -> tuple[list[Found], int]:
    """The differing facts of each close chunk pair, and how many sentence pairs were compared.

    Two sentences differ only when each is the other's counterpart (`Counterparts`): "Employees may
    carry over up to 5 days of annual leave" reads like "Full-time employees receive 20 days of
    annual leave" to the detector, but the other page's 24 days of annual leave reads more like it.
    """
    counterparts = Counterparts(sentence for sentences in facts.values() for sentence in sentences)
    found: list[Found] = []
    compared = 0
    for pair in pairs:
        for a in facts.get(pair.first, ()):
            for b in facts.get(pair.second, ()):
                compared += 1
                differing = differing_values(a, b)
                if differing is None:
                    continue
                kind = differing[0].kind
                if counterparts.of(a, b.passage.document_id, kind) is not b:
                    continue
                if counterparts.of(b, a.passage.document_id, kind) is not a:
                    continue
                found.append(Found(a, b, differing[0].surface, differing[1].surface, pair.cosine))
    return found, compared


class Counterparts:
    """Where a document states a given fact: of its sentences that state the same fact by the
    detector's rules (`rag.pipeline.contradictions.same_subject`) with a value of the same kind, the closest in
    meaning. Searched closest first, so that usually one or two sentences are checked, and
    remembered: one sentence meets the same document in many chunk pairs."""

    def __init__(self, facts: Iterable[ScoredSentence]) -> None:
        self._sentences: dict[int, list[ScoredSentence]] = {}
        for fact in facts:
            self._sentences.setdefault(fact.passage.document_id, []).append(fact)
        self._matrices: dict[int, np.ndarray] = {}
        self._found: dict[tuple[int, int, str], ScoredSentence | None] = {}

    def of(self, fact: ScoredSentence, document: int, kind: str) -> ScoredSentence | None:
        key = (id(fact), document, kind)
        if key not in self._found:
            self._found[key] = self._search(fact, document, kind)
        return self._found[key]

    def _search(self, fact: ScoredSentence, document: int, kind: str) -> ScoredSentence | None:
        sentences = self._sentences.get(document, [])
        if not sentences or fact.vector is None:
            return None
        cosines = self._matrix(document) @ fact.vector
        for index in np.argsort(-cosines, kind="stable"):
            if cosines[index] < MIN_COSINE:  # `same_subject` holds no pair below it
                break
            other = sentences[int(index)]
            if any(v.kind == kind for v in values(other.text)) and same_subject(fact, other):
                return other
        return None

    def _matrix(self, document: int) -> np.ndarray:
        if document not in self._matrices:
            vectors = [s.vector for s in self._sentences[document]]
            if any(v is None for v in vectors):
                raise ValueError("every compared sentence needs a vector")
            self._matrices[document] = np.stack([v for v in vectors if v is not None])
        return self._matrices[document]


def group_by_documents(
    found: Iterable[Found], date_sources: Mapping[int, str | None] | None = None
) -> tuple[ConflictPair, ...]:
    """One finding per document pair, ordered by their paths; each difference once (a value stated
    in a sentence and again in a table row of the same page is one difference)."""
    grouped: dict[tuple[int, int], list[Found]] = {}
    for item in found:
        a, b = item.first.passage.document_id, item.second.passage.document_id
        grouped.setdefault((min(a, b), max(a, b)), []).append(item)
    pairs = (_pair(items, date_sources or {}) for items in grouped.values())
    return tuple(sorted(pairs, key=lambda p: (p.first.source, p.second.source)))


def _pair(items: Sequence[Found], date_sources: Mapping[int, str | None]) -> ConflictPair:
    """The pair with the preferred document first (by path when neither is preferred)."""
    sample = items[0]
    preferred, reason = prefer(sample.first, sample.second)
    sample_first_leads = preferred == "chosen" or (
        preferred is None and sample.first.passage.document <= sample.second.passage.document
    )
    lead = (sample.first if sample_first_leads else sample.second).passage
    follow = (sample.second if sample_first_leads else sample.first).passage
    differences: dict[tuple[tuple[str, str], tuple[str, str]], Difference] = {}
    for item in sorted(items, key=lambda i: -i.similarity):
        (ours, our_value), (theirs, their_value) = _oriented(item, lead.document_id)
        differences.setdefault(
            (_key(our_value), _key(their_value)),
            Difference(
                subject=subject_of(ours.text, theirs.text),
                attribute=attribute_of(our_value, ours.text),
                first=StatedValue(our_value, ours.text, ours.passage.heading),
                second=StatedValue(their_value, theirs.text, theirs.passage.heading),
            ),
        )
    return ConflictPair(
        first=AuditedDocument.of(lead, date_sources.get(lead.document_id)),
        second=AuditedDocument.of(follow, date_sources.get(follow.document_id)),
        newer=newer_of(lead.effective_date, follow.effective_date),
        preferred=None if preferred is None else "first",
        reason=reason,
        similarity=max(i.similarity for i in items),
        differences=tuple(differences.values()),
    )


def _oriented(item: Found, lead: int) -> tuple[tuple[ScoredSentence, str], tuple[ScoredSentence, str]]:
    """(sentence, value) of the lead document's side first."""
    first, second = (item.first, item.first_value), (item.second, item.second_value)
    return (first, second) if item.first.passage.document_id == lead else (second, first)


def _key(surface: str) -> tuple[str, str]:
    """A value as compared ("$12" and "$ 12" are one value)."""
    found = values(surface)
    return found[0].key if found else ("text", surface.lower())
