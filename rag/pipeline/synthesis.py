"""Stage 3, synthesise: a structured draft (sentences with citation numbers, abstained, notes).

`ExtractiveSynthesizer` (the offline default) writes nothing of its own: for each part of the
question it takes the best-supported readable source sentence, adds a second sentence from the
same passage when it completes the first (a deadline after a limit, an exception after a rule),
and cites the passage. A part whose best sentence scores below `answer_threshold` is left
unanswered rather than filled with the nearest thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.evidence import PASSAGES_CONSIDERED, Draft, DraftSentence, PartEvidence, ScoredSentence, SynthesisRequest
from rag.text.facts import (
    asks,
    clean_sentence,
    content_words,
    looks_like_instruction,
    readable,
    values,
    variant_qualifiers,
)
from rag.text.names import new_names

SECOND_SENTENCE_MARGIN = 0.12
"""A sentence this close behind the best one completes it when it adds a value or several words."""


class ExtractiveSynthesizer:
    name = "extractive-v1"

    def __init__(self, *, answer_threshold: float) -> None:
        self.answer_threshold = answer_threshold

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        numbers = {p.chunk_id: n for n, p in enumerate(request.context, 1)}
        sentences: list[DraftSentence] = []
        unanswered: list[int] = []
        used: set[str] = set()
        for index, part in enumerate(request.parts):
            chosen = self.choose(part) if part.retrieved else []
            fresh = [s for s in chosen if clean_sentence(s.text) not in used]
            if not chosen:
                unanswered.append(index)
                continue
            for s in fresh:
                text = clean_sentence(s.text)
                used.add(text)
                sentences.append(DraftSentence(text, (numbers[s.passage.chunk_id],), index, s))
        return Draft(tuple(sentences), tuple(unanswered))

    def choose(self, part: PartEvidence) -> list[ScoredSentence]:
        """The best readable sentence of the part's top passages, plus one that completes it."""
        candidates = [
            s
            for r in part.ranked[:PASSAGES_CONSIDERED]
            for s in r.sentences
            if readable(clean_sentence(s.text)) and not asks(s.text) and not looks_like_instruction(s.text)
        ]
        if not candidates:
            return []
        best = max(candidates, key=lambda s: s.score)
        if best.score < self.answer_threshold:
            return []
        second = _completing(best, candidates, self.answer_threshold, part.text)
        return [best] if second is None else sorted([best, second], key=lambda s: s.position)


def _completing(
    best: ScoredSentence, candidates: Sequence[ScoredSentence], threshold: float, question: str
) -> ScoredSentence | None:
    """A sentence of the same passage, close behind in score, adding a value or key words.

    Never a sibling's fact: a sentence naming another plan or product, or another variant
    (annual when monthly was asked, the secondary carer after the primary), is left out.
    """
    have_words = content_words(best.text)
    have_values = {v.key for v in values(best.text)}
    known = f"{best.text} {question}"
    allowed_variants = variant_qualifiers(best.text) | variant_qualifiers(question)
    for s in sorted(candidates, key=lambda c: -c.score):
        if s is best or s.passage.chunk_id != best.passage.chunk_id or s.score < threshold:
            continue
        if new_names(s.text, known) or variant_qualifiers(s.text) - allowed_variants:
            continue
        near = s.score >= best.score - SECOND_SENTENCE_MARGIN
        distance = abs(s.position - best.position)
        new_values = {v.key for v in values(s.text)} - have_values
        new_words = content_words(s.text) - have_words
        if near and distance <= 2 and (new_values or len(new_words) >= 3):
            return s
    return None
