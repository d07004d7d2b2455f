"""Stage 3, synthesise: a structured draft (sentences with citation numbers, abstained, notes).

`ExtractiveSynthesizer` (the offline default) writes nothing of its own: for each part of the
question it takes the best-supported readable source sentence, adds a second sentence from the
same passage when it completes the first (a deadline after a limit, an exception after a rule),
and cites the passage. A part whose best sentence scores below `answer_threshold` is left
unanswered rather than filled with the nearest thing. An open question ("how do I ...", "what are
the kinds of ...") is answered by the leading sentences of the section whose heading it names, when
one of the best passages has one (rag/pipeline/sections.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.evidence import PASSAGES_CONSIDERED, Draft, DraftSentence, PartEvidence, ScoredSentence, SynthesisRequest
from rag.pipeline.relevance import CHECKED_KINDS, another_case, states
from rag.pipeline.sections import has_sections, is_open, section_extract
from rag.pipeline.understand import answer_type
from rag.text.facts import clauses, clean_sentence, content_words, values, variant_qualifiers
from rag.text.names import codes, mentions, new_names
from rag.text.quotable import about_the_page, asks, looks_like_instruction, readable

STATING_MARGIN = 0.1
"""A sentence stating the kind of value asked is chosen over a better-scored one this close ahead."""
ANOTHER_CASE_MARGIN = 0.1
"""When the best-scored sentence is about another case than the one asked, another sentence answers
only this close behind it: the same statement for the asked case scores about as high ("the
minimum credit is 5%" beside "the maximum credit is 50%"); one far behind says something else, and
the documents cover the other case, not this one."""
SECOND_SENTENCE_MARGIN = 0.12
"""A sentence this close behind the best one completes it when it adds a value or several words."""


def quoted_section(part: PartEvidence, index: int, numbers: dict[int, int]) -> list[DraftSentence] | None:
    """An open part's section extract (rag/pipeline/sections.py) as draft sentences, each cited by
    its context number: empty when its best passages have sections but none is named, None when the
    part is not an open question about sectioned text (answered as any other)."""
    if not (is_open(part.text) and has_sections(part.ranked)):
        return None
    return [
        DraftSentence(clean_sentence(s.text), (numbers[s.passage.chunk_id],), index, s)
        for s in section_extract(part.text, part.ranked)
    ]


class ExtractiveSynthesizer:
    name = "extractive-v1"

    def __init__(self, *, answer_threshold: float, sections: bool = True) -> None:
        self.answer_threshold = answer_threshold
        self.sections = sections

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        numbers = {p.chunk_id: n for n, p in enumerate(request.context, 1)}
        sentences: list[DraftSentence] = []
        unanswered: list[int] = []
        used: set[str] = set()
        pools = [quotable_sentences(part) if part.retrieved else [] for part in request.parts]
        bests = self.assign(request.parts, pools)
        for index, part in enumerate(request.parts):
            extract = quoted_section(part, index, numbers) if self.sections else None
            if extract is not None:  # an open question: its section, or nothing
                used.update(s.text for s in extract)
                sentences.extend(extract)
                if not extract:
                    unanswered.append(index)
                continue
            best = bests.get(index)
            if best is None:
                unanswered.append(index)
                continue
            others = {clean_sentence(b.text) for i, b in bests.items() if i != index}
            chosen = self.choose(part, best, taken=others, pool=pools[index])
            for s in chosen:
                text = clean_sentence(s.text)
                if text not in used or s is best:  # a row answering two parts is each one's answer
                    used.add(text)
                    sentences.append(DraftSentence(text, (numbers[s.passage.chunk_id],), index, s))
        return Draft(tuple(sentences), tuple(unanswered))

    def assign(
        self, parts: Sequence[PartEvidence], pools: Sequence[Sequence[ScoredSentence]]
    ) -> dict[int, ScoredSentence]:
        """Each part's best sentence, no sentence the best of two parts: when two parts would take the
        same one ("how big is the battery" and "how many hours will it run" both rank the battery
        row first), the part with the larger lead of its best over its next keeps it, and the other
        takes its next best. `pools`: each part's quotable sentences (`_candidates`)."""
        retrieved = [i for i, p in enumerate(parts) if p.retrieved]
        first = {i: self.best(parts[i], pool=pools[i]) for i in retrieved}

        def lead(index: int) -> float:
            best = first[index]
            if best is None:
                return -1.0
            runner_up = self.best(parts[index], exclude={clean_sentence(best.text)}, pool=pools[index])
            return best.score - (runner_up.score if runner_up is not None else 0.0)

        found = {i: b for i, b in first.items() if b is not None}
        by_text: dict[str, list[int]] = {}
        for i, b in found.items():
            by_text.setdefault(clean_sentence(b.text), []).append(i)
        shared = any(
            len(sharing) > 1 and not _answers_each(found[sharing[0]], [parts[i].text for i in sharing])
            for sharing in by_text.values()
        )
        if not shared:
            return found
        bests: dict[int, ScoredSentence] = {}
        taken: set[str] = set()
        for index in sorted(retrieved, key=lambda i: -lead(i)):
            best = self.best(parts[index], exclude=taken, pool=pools[index])
            if best is not None:
                bests[index] = best
                taken.add(clean_sentence(best.text))
        return bests

    def choose(
        self,
        part: PartEvidence,
        best: ScoredSentence,
        *,
        taken: frozenset[str] | set[str] = frozenset(),
        pool: Sequence[ScoredSentence] | None = None,
    ) -> list[ScoredSentence]:
        """The part's best sentence, plus one of the same passage that completes it and is not the
        best sentence of another part (`taken`: that one answers its own part)."""
        pool = quotable_sentences(part) if pool is None else pool
        others = [s for s in pool if clean_sentence(s.text) not in taken]
        second = _completing(best, others, self.answer_threshold, part.text)
        return [best] if second is None else sorted([best, second], key=lambda s: s.position)

    def best(
        self,
        part: PartEvidence,
        *,
        exclude: set[str] | frozenset[str] = frozenset(),
        pool: Sequence[ScoredSentence] | None = None,
    ) -> ScoredSentence | None:
        """The best readable sentence of the part's top passages that states the kind of value the
        part asks for (rag/pipeline/relevance.py; the best of all when none does), or None when it
        scores below the answer threshold. `exclude`: sentences another part took; `pool`: the
        part's quotable sentences when already found."""
        ordered = sorted(
            (s for s in (quotable_sentences(part) if pool is None else pool) if clean_sentence(s.text) not in exclude),
            key=lambda s: -s.score,
        )
        # about another case than the one asked (rag/text/swaps.py): read in score order, as few as
        # needed; the asked case's own sentence is close behind the other case's or nowhere
        best = next((s for s in ordered if not another_case(part.text, s.text)), None)
        if best is None or (ordered and best is not ordered[0] and best.score < ordered[0].score - ANOTHER_CASE_MARGIN):
            return None
        wanted = answer_type(part.text)
        floor = max(best.score - STATING_MARGIN, self.answer_threshold)
        near = [s for s in ordered if s.score >= floor and (s is best or not another_case(part.text, s.text))]
        stating = [s for s in near if wanted in CHECKED_KINDS and states(wanted, s.text, part.text)]
        best = max(stating, key=lambda s: s.score) if stating else best
        return best if best.score >= self.answer_threshold else None


def _answers_each(sentence: ScoredSentence, questions: Sequence[str]) -> bool:
    """A table row holding an answer for each of several parts: "Model: RT-9; End of sale:
    2023-06-30; End of security updates: 2024-12-31" for "when did it stop selling, and when did
    it stop getting patches?". Each part asks for a kind of value that at least as many of the
    row's cells state as there are parts, cells about another model left out ("Battery life; RT-9:
    up to 5 hours; RT-9i: up to 8 hours" holds one answer about the RT-9i, not two)."""
    cells = clauses(sentence.text)
    for question in questions:
        wanted, asked = answer_type(question), codes(question)
        own = [c for c in cells if not codes(c) - asked]
        if wanted not in CHECKED_KINDS or sum(states(wanted, c, question) for c in own) < len(questions):
            return False
    return True


def quotable_sentences(part: PartEvidence) -> list[ScoredSentence]:
    """Sentences that can be quoted: readable, not a question line, not about the page itself, not
    addressed to the bot, and not about another model than the one asked (a sentence naming the
    "RT-9" or "NX-8 Pro" and not the "RT-9i" or "NX-6 Pro" asked, wherever its passage is). A
    sentence about another case than the one asked ("permanently" for "temporarily", the ninth
    century for the eighth: rag/pipeline/relevance.py, `another_case`) is passed over where one is
    chosen, in score order, so that only the few sentences near the top are read for it."""
    asked = codes(part.text)
    return [
        s
        for r in part.ranked[:PASSAGES_CONSIDERED]
        for s in r.sentences
        if readable(clean_sentence(s.text))
        and not asks(s.text)
        and not about_the_page(s.text)
        and not looks_like_instruction(s.text)
        and not _another_model(s, asked)
    ]


def _another_model(sentence: ScoredSentence, asked: set[str]) -> bool:
    """The sentence, or the page and section it sits in when it names none ("VPN throughput: up to
    300 Mbps" in the RT-9i's spec sheet), names a model and not the one asked."""
    where = f"{sentence.text} {sentence.passage.title} {sentence.passage.heading}"
    named = codes(sentence.text) or codes(f"{sentence.passage.title} {sentence.passage.heading}")
    if not asked or not named:
        return False
    return not any(mentions(where, code) for code in asked)


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
        if near and distance <= 2 and (new_values or len(new_words) >= 3) and not another_case(question, s.text):
            return s
    return None
