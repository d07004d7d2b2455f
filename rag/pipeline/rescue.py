"""Per-claim rescue: one targeted re-retrieval for a sentence the critic rejected, before it is dropped.

A writer can state something true and cite the wrong passage, or cite none. The sentence itself
becomes the query: the `k` passages the retriever finds for it in the asker's scope are given to
the same verifier, one at a time; the first that supports it becomes its citation. Nothing else
is relaxed: the verifier, its exact-fact checks and the scope are the critic's own. Every attempt
is logged in the `rescue` gate, rescued or not.

A sentence its cited evidence contradicts (a value stated there for another subject, another
name in its place, the opposite polarity, a wider scope) is not looked for elsewhere: it is not
mis-cited but wrong, and a second search only gives a weak verifier a second chance to be fooled
(a name-swapped interval, "30 seconds", found again next to the product's timeout).

A model's sentence is first requoted (`requote`): when one sentence of what it cites (else of the
other passages it was shown) states its every value and name (`rag/pipeline/anchor.py`), that
source sentence takes its place, verified like any other. The model reworded a fact; the source's
own words say it without the rewording's risk, and the relevance gate still decides whether they
answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from rag.model.ports import Retriever, Verifier
from rag.model.types import AccessScope, Passage
from rag.pipeline.anchor import anchor_of
from rag.text.exact_checks import evidence_sentences
from rag.text.facts import clean_sentence

RESCUE_PASSAGES = 5


@dataclass(frozen=True, slots=True)
class Rescue:
    sentence: str
    passage: Passage | None
    """The passage that supports it (None: not rescued)."""
    score: float
    reasons: tuple[str, ...]
    quote: str | None = None
    """Requoted: the source sentence that replaces the written one."""

    @property
    def rescued(self) -> bool:
        return self.passage is not None


class ClaimRescuer:
    def __init__(self, retriever: Retriever, verifier: Verifier, *, k: int = RESCUE_PASSAGES) -> None:
        self.retriever = retriever
        self.verifier = verifier
        self.k = k

    async def rescue(self, sentence: str, scope: AccessScope, *, tried: Sequence[Passage] = ()) -> Rescue:
        """Look for support of `sentence` beyond the passages it cited (`tried`)."""
        seen = {p.chunk_id for p in tried}
        found = [p for p in await self.retriever.run(sentence, scope, k=self.k) if p.chunk_id not in seen]
        if not found:
            return Rescue(sentence, None, 0.0, ("re-retrieval found no other passage",))
        verdicts = await asyncio.gather(*(self.verifier.verify(sentence, [p.text]) for p in found))
        for passage, verdict in zip(found, verdicts, strict=True):
            if verdict.passed:
                return Rescue(sentence, passage, verdict.score, verdict.reasons)
        best = max(verdict.score for verdict in verdicts)
        return Rescue(sentence, None, best, (f"no re-retrieved passage supports it (best {best:.2f})",))

    async def requote(
        self,
        sentence: str,
        cited: Sequence[Passage],
        *,
        read: Sequence[Passage] = (),
        echoed: frozenset[str] = frozenset(),
    ) -> Rescue | None:
        """The one sentence of the cited passages that states every value and name of `sentence`
        (`rag/pipeline/anchor.py`; a name the asker used may be left to its passage), in its place,
        when the verifier passes it there; else the same from the other passages the writer read (a
        small model cites the wrong one of four); None otherwise."""
        others = [p for p in read if p.chunk_id not in {c.chunk_id for c in cited}]
        for passages in (cited, others):
            candidates = [(text, (text, p)) for p in passages for text in evidence_sentences([p.text])]
            found = anchor_of(sentence, candidates, echoed=echoed, around=_around)
            if found is None:
                continue
            source, passage = found
            quote = clean_sentence(source)
            verdict = await self.verifier.verify(quote, [passage.text])
            if verdict.passed:
                return Rescue(sentence, passage, verdict.score, (f"requoted from its source: {quote}",), quote=quote)
        return None


def _around(found: tuple[str, Passage]) -> str:
    """Where a name left out of a sentence may be said: its passage, title and heading."""
    passage = found[1]
    return f"{passage.title} {passage.heading} {passage.text}"
