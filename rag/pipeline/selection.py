"""Stage 3 with a language model that chooses instead of writing: `LLMSelector`.

The extractive writer quotes the best-scored sentence; the score is similarity, and a sentence
that mentions what was asked about without answering it often scores best. A small model writes
badly (it words its sentence like the question and cites a true sentence about something else)
but it can read: shown the question and the part's best quotable sentences, numbered, it names
the ones that answer. Those sentences are quoted as they stand, each citing its passage, and go
through every gate like any draft; none named is an abstention.

The candidates are the extractive writer's own (rag/pipeline/synthesis.py: readable, not a
question line, not about the page or another model), an open question's section extract first,
then by score. Nothing the model writes is delivered: a number it gives that is not a candidate's
is ignored. Only sentences the extractive writer could quote are shown: those scoring at least the
answer threshold (`floor`); shown the ten best whatever their score, the 1.5B model named something
for 39 of 41 answerable and 7 of 9 unanswerable questions of the tasks set (right 14, wrong 25,
unanswerable refused 2/9); held to the threshold, 14, 18 and 8/9 (the extractive writer first, then
the model writing: 13, 21, 5/9; the extractive writer alone 13, 19, 8/9).

An open question's answer is its section's steps: the model naming any sentence of the section
extract picks the section, which is quoted whole and in order, as the extractive writer quotes it
(named alone, one step of "Go to Admin console > Data > Export workspace" is no answer to "how do I
export everything?").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field

from rag.backends.llm import StructuredModel, quoted
from rag.model.evidence import Draft, DraftSentence, ScoredSentence, SynthesisRequest
from rag.pipeline.sections import has_sections, is_open, section_extract
from rag.pipeline.synthesis import quotable_sentences
from rag.text.facts import clean_sentence

CANDIDATES = 10
"""Sentences shown per question (shared among its parts): about 400 prompt tokens."""
CHOSEN = 4
"""At most this many sentences are quoted per part (a how-to's steps; more is a page, not an answer)."""

SYSTEM = (
    "You pick the sentences that answer a support question. Below the question are numbered sentences "
    "quoted from the organisation's documents, each after the title of its page.\n"
    "Reply with the numbers of the fewest sentences that together answer the question (at most "
    f"{CHOSEN}). A sentence answers only if it states what was asked, about the thing asked (the same "
    "product, plan, place, person or case). A sentence that only mentions the subject does not answer. "
    "If no sentence answers, reply with an empty list: never guess.\n"
    'Reply in JSON: {"sentences": [numbers]}.'
)


class Chosen(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sentences: list[int] = Field(description="Numbers of the sentences that answer the question; empty if none.")


@dataclass(frozen=True, slots=True)
class Candidate:
    part: int
    sentence: ScoredSentence
    section: bool = False
    """One of the part's section extract (an open question): named, the whole extract is quoted."""

    def render(self, number: int) -> str:
        passage = self.sentence.passage
        title = f"{passage.title} / {passage.heading}" if passage.heading else passage.title
        dated = f", effective {passage.effective_date.isoformat()}" if passage.effective_date else ""
        return f"[{number}] ({' '.join(title.split())}{dated})\n{quoted(clean_sentence(self.sentence.text))}"


class LLMSelector:
    """The draft is the candidate sentences a chat model names as answering the question."""

    def __init__(
        self, model: StructuredModel, *, candidates: int = CANDIDATES, sections: bool = True, floor: float = 0.0
    ) -> None:
        self.model = model
        self.limit = candidates
        self.sections = sections
        self.floor = floor
        """A sentence scoring below this is no candidate (a section extract's sentences are its own)."""
        self.name = f"llm-selector:{model.name}"

    def candidates(self, request: SynthesisRequest) -> list[Candidate]:
        """Each retrieved part's section extract (an open question), then its quotable sentences by
        score, taken in turn so that every part gets its share of `limit`; a sentence once."""
        pools: list[list[Candidate]] = []
        for index, part in enumerate(request.parts):
            if not part.retrieved:
                pools.append([])
                continue
            opened = self.sections and is_open(part.text) and has_sections(part.ranked)
            section = section_extract(part.text, part.ranked) if opened else []
            ranked = sorted((s for s in quotable_sentences(part) if s.score >= self.floor), key=lambda s: -s.score)
            pools.append([Candidate(index, s, True) for s in section] + [Candidate(index, s) for s in ranked])
        chosen: list[Candidate] = []
        seen: set[str] = set()
        depth = 0
        while len(chosen) < self.limit and any(depth < len(pool) for pool in pools):
            for pool in pools:
                if depth < len(pool) and len(chosen) < self.limit:
                    text = clean_sentence(pool[depth].sentence.text)
                    if text not in seen:
                        seen.add(text)
                        chosen.append(pool[depth])
            depth += 1
        return chosen

    def messages(self, request: SynthesisRequest, shown: list[Candidate]) -> list[dict[str, str]]:
        listed = "\n".join(c.render(n) for n, c in enumerate(shown, 1))
        user = f"Question: {request.question}\n\nSentences:\n{listed}"
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        parts = range(len(request.parts))
        shown = self.candidates(request)
        if not shown:
            return Draft((), tuple(parts))
        (reply,) = await self.model.structured(self.messages(request, shown), Chosen, purpose="writer")
        named = [shown[n - 1] for n in dict.fromkeys(reply.sentences) if 0 < n <= len(shown)]
        numbers = {p.chunk_id: n for n, p in enumerate(request.context, 1)}
        sentences: list[DraftSentence] = []
        for index in parts:
            mine = [c for c in named if c.part == index and c.sentence.passage.chunk_id in numbers]
            if any(c.section for c in mine):  # a step of the section named: the section answers, whole
                own = [
                    c.sentence
                    for c in shown
                    if c.part == index and c.section and c.sentence.passage.chunk_id in numbers
                ]
            else:
                own = [c.sentence for c in mine][:CHOSEN]
            own.sort(key=lambda s: (numbers[s.passage.chunk_id], s.position))
            sentences += [DraftSentence(clean_sentence(s.text), (numbers[s.passage.chunk_id],), index, s) for s in own]
        answered = {s.part for s in sentences}
        draft = Draft(tuple(sentences), tuple(i for i in parts if i not in answered))
        return replace(draft, read=tuple(dict.fromkeys(c.sentence.passage.chunk_id for c in shown)))
