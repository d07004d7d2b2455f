"""Stage 2, rerank: order the shortlist by "does this passage answer the question", not by similarity.

`EvidenceReranker` (the offline default) scores every sentence of every shortlisted passage and
ranks a passage by its best sentence. A sentence scores by three kinds of evidence:

- meaning: the cosine of the question and the sentence (sentence vectors were stored at ingest);
- key terms: the question's words weighted by their rarity in the knowledge base, found in the
  sentence itself (full weight) or only in its document title and heading path (half weight);
- answer type: a "how many / how much / how long" question wants a sentence stating a value, a
  "when" question a date, a "who" question a name.

A passage that mentions the topic in passing has no sentence holding the rare terms and a value
together, so it loses to the one that states the fact even when its chunk vector is closer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from rag.model.evidence import Query, Ranked, ScoredSentence
from rag.model.ports import Embedder
from rag.model.types import Passage
from rag.pipeline.relevance import FROM_EVENT, states
from rag.pipeline.understand import answer_type
from rag.store.evidence import SentenceEvidence, StoredSentence
from rag.store.postgres import Vector
from rag.text.claims import sibling_names, without
from rag.text.facts import network_addresses, values
from rag.text.names import acronyms, codes, mentions, names, people
from rag.text.quotable import asks

MEANING_WEIGHT = 0.5
TERMS_WEIGHT = 0.3
TYPE_WEIGHT = 0.2
NAME_PENALTY = 0.15
"""Taken off a sentence for the share of the question's names (plans, products) it does not name."""
CHUNK_WEIGHT = 0.2
"""Share of a passage's score taken from the chunk's own cosine (the rest: its best sentence)."""


class SentenceSource(Protocol):
    async def __call__(self, chunk_ids: Sequence[int]) -> SentenceEvidence: ...


class EvidenceReranker:
    """Offline reranker from stored sentence vectors, key-term coverage and answer type."""

    name = "evidence-v1"

    def __init__(self, sentences: SentenceSource, embedder: Embedder) -> None:
        self.sentences = sentences
        self.embedder = embedder

    async def rerank(self, query: Query, passages: Sequence[Passage], *, top_k: int | None = None) -> list[Ranked]:
        if not passages:
            return []
        evidence = await self.sentences([p.chunk_id for p in passages])
        by_chunk: dict[int, list[StoredSentence]] = {}
        for sentence in evidence.sentences:
            by_chunk.setdefault(sentence.chunk_id, []).append(sentence)
        vectors = await self._vectors(query, evidence.sentences)
        weights = term_weights(query.term_frequency or {})
        wanted = answer_type(query.text)
        asked_names = names(query.text) | codes(query.text)
        ranked = []
        for passage in passages:
            stored = sorted(
                by_chunk.get(passage.chunk_id)
                or [StoredSentence(passage.chunk_id, 0, passage.text, None, frozenset())],
                key=lambda s: s.position,
            )
            context = evidence.context_lexemes.get(passage.chunk_id, frozenset())
            faq = answered_by(stored)
            scored = sorted(
                (
                    self._score(passage, s, vectors, weights, context, wanted, asked_names, query, faq.get(s.position))
                    for s in stored
                ),
                key=lambda s: (-s.score, s.position),
            )
            best = scored[0].score
            chunk_cosine = passage.dense_score if passage.dense_score is not None else best
            ranked.append(Ranked(passage, (1 - CHUNK_WEIGHT) * best + CHUNK_WEIGHT * chunk_cosine, tuple(scored)))
        ranked.sort(key=lambda r: (-r.score, r.passage.chunk_id))
        return ranked[:top_k] if top_k else ranked

    async def _vectors(self, query: Query, sentences: Sequence[StoredSentence]) -> dict[tuple[int, int], Vector]:
        """Sentence vectors by (chunk, position), plus the query's under (-1, -1)."""
        vectors: dict[tuple[int, int], Vector] = {}
        missing = [s for s in sentences if s.embedding is None]
        texts = ([query.text] if query.vector is None else []) + [s.text for s in missing]
        embedded = await self.embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        offset = 0
        if query.vector is None:
            vectors[(-1, -1)] = embedded[0]
            offset = 1
        else:
            vectors[(-1, -1)] = query.vector
        for i, s in enumerate(missing):
            vectors[(s.chunk_id, s.position)] = embedded[offset + i]
        for s in sentences:
            if s.embedding is not None:
                vectors[(s.chunk_id, s.position)] = s.embedding
        return vectors

    def _score(
        self,
        passage: Passage,
        sentence: StoredSentence,
        vectors: Mapping[tuple[int, int], Vector],
        weights: Mapping[str, float],
        context: frozenset[str],
        wanted: str,
        asked_names: set[str],
        query: Query,
        faq: StoredSentence | None = None,
    ) -> ScoredSentence:
        """`faq`: the question line the sentence answers (an FAQ's "Q: ..."), whose words and meaning
        count as the sentence's own: the answer to "Where is the serial number?" need not repeat it."""
        vector = vectors.get((sentence.chunk_id, sentence.position))
        meaning = float(np.dot(vectors[(-1, -1)], vector)) if vector is not None else 0.0
        lexemes = sentence.lexemes | acronyms(sentence.text)
        where = f"{sentence.text} {passage.title} {passage.heading}"
        if faq is not None:
            asked = vectors.get((faq.chunk_id, faq.position))
            meaning = max(meaning, float(np.dot(vectors[(-1, -1)], asked)) if asked is not None else 0.0)
            lexemes |= faq.lexemes | acronyms(faq.text)
            where = f"{where} {faq.text}"
        # a "Key: value" line says no more than its key: its headings name what it is about
        terms = coverage(weights, lexemes, context, at=1.0 if _KEY_VALUE.match(sentence.text) else 0.5)
        fits = type_match(wanted, sentence.text, query.text)
        score = MEANING_WEIGHT * meaning + TERMS_WEIGHT * terms + TYPE_WEIGHT * fits
        if asked_names:
            named = sum(mentions(where, name) for name in asked_names) / len(asked_names)
            score -= NAME_PENALTY * (1.0 - named)
            if only_siblings(sentence.text, asked_names, query.text):
                score -= NAME_PENALTY  # "Beacon Pro" answering a question about "Beacon"
        answers = faq.text if faq is not None else ""
        return ScoredSentence(passage, sentence.position, sentence.text, score, meaning, terms, fits, vector, answers)


def only_siblings(text: str, asked: set[str], question: str) -> bool:
    """Whether `text` names a sibling of an asked name ("Beacon Pro" for "Beacon") and not the asked
    name itself: a table row giving "FlexPass 10-Trip: €39.00; FlexPass 10-Trip Off-Peak: €31.00"
    answers for both."""
    siblings = sibling_names(text, asked, question)
    return bool(siblings) and not all(mentions(without(text, siblings), name) for name in asked)


FAQ_ANSWER_SENTENCES = 4
"""How many sentences after a question line answer it (an FAQ answer is a short paragraph)."""


def answered_by(sentences: Sequence[StoredSentence]) -> dict[int, StoredSentence]:
    """Position -> the question line (`asks`) a sentence answers: the sentences after a question
    line, up to the next one, at most FAQ_ANSWER_SENTENCES of them. `sentences` in order."""
    out: dict[int, StoredSentence] = {}
    question: StoredSentence | None = None
    following = 0
    for s in sentences:
        if asks(s.text):
            question, following = s, 0
        elif question is not None and following < FAQ_ANSWER_SENTENCES:
            out[s.position] = question
            following += 1
    return out


def term_weights(frequencies: Mapping[str, float]) -> dict[str, float]:
    """Rarity weights: log(1 / share of chunks), so a word in every chunk weighs almost nothing."""
    return {term: min(9.0, max(0.05, -math.log(max(freq, 1e-4)))) for term, freq in frequencies.items()}


def coverage(
    weights: Mapping[str, float], lexemes: frozenset[str], context: frozenset[str] = frozenset(), *, at: float = 0.5
) -> float:
    """Weighted share of the question's terms in the sentence (or, at weight `at`, its headings)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    found = sum(w if t in lexemes else at * w if t in context else 0.0 for t, w in weights.items())
    return found / total


_KEY_VALUE = re.compile(r"^\s*[^:;.!?]{1,40}:\s+\S[^;]{0,120}$")
"""A definition or key-value line ("Price: €59 per device per year"), not a table row (those hold ";")."""
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_CONTACT = re.compile(r"\bwho\b.*\b(?:tell|contact|report|notify|inform|email|e-mail|write|reach)\b", re.IGNORECASE)
"""Whom to get in touch with: an address answers it ("Who do I tell about a security hole?"); "who
heads security?" asks for a person."""


def type_match(wanted: str, text: str, question: str = "") -> float:
    """1 when the sentence holds the kind of value the question asks for; neutral kinds score 1. A
    person is one the question does not name ("Who heads security at Brightloom?")."""
    if wanted == "quantity":  # as the relevance gate reads it: an amount of the measure asked, a count
        return 1.0 if states("quantity", text, question) else 0.0
    if wanted == "address":
        return 1.0 if network_addresses(text) else 0.0
    if wanted == "date":  # a date, a time of day, a year, or a time from an event ("within 28 days")
        dated = any(v.kind in ("date", "time") for v in values(text)) or _YEAR.search(text) or FROM_EVENT.search(text)
        return 1.0 if dated else 0.0
    if wanted == "person":  # "who do I tell?" is answered by a name or an email address
        named = any(not mentions(question, p) for p in people(text))
        emailed = _CONTACT.search(question) and any("@" in a for a in network_addresses(text))
        return 1.0 if named or emailed else 0.0
    if wanted == "place":  # as the relevance gate reads it: a name the question does not say
        return 1.0 if states("place", text, question) else 0.0
    return 1.0
