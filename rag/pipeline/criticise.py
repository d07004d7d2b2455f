"""Stage 4, the critic's step: each drafted sentence against what it cites (the `Verifier`); a rejected
model sentence requoted from its source, any other given one re-retrieval of its own
(`rag/pipeline/rescue.py`), before it is dropped. Gate `rescue` lists what was tried."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rag.model.answers import GateOutcome
from rag.model.evidence import Checked, Draft
from rag.model.ports import Verifier
from rag.model.types import AccessScope, Passage
from rag.pipeline.attempt import Attempt, Run, context_of
from rag.pipeline.bridge import without_lone_bridges
from rag.pipeline.gates.rescue import rescue_gate
from rag.pipeline.rescue import ClaimRescuer
from rag.text.exact_checks import contradicts_evidence, misattributes
from rag.text.names import names


class Criticise:
    """Gate `rescue`: each drafted sentence against what it cites; a rejected one gets one
    re-retrieval of its own (when `rescue` is on) before it is dropped."""

    def __init__(self, verifier: Verifier, rescuer: ClaimRescuer, *, rescue: bool) -> None:
        self.verifier = verifier
        self.rescuer = rescuer
        self.rescue = rescue

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        draft = attempt.draft
        assert draft is not None
        if draft.sentences:
            run.progress("critic", attempt=attempt.number, count=len(draft.sentences))
        with run.clock.stage("critic"):
            checked = await self._check(draft, context_of(attempt.evidence))
            written = frozenset(i for i, s in enumerate(draft.sentences) if s.origin is None)
            if self.rescue and any(not c.supported for c in checked):
                context = context_of(attempt.evidence)
                read = tuple(p for p in context if p.chunk_id in set(draft.read))
                echoed = frozenset(names(run.understood.text))
                checked, rescued = await self._rescue(checked, run.scope, attempt.number, written, read, echoed)
                if rescued is not None:
                    attempt = attempt.with_gates(rescued)
            checked = tuple(_about_the_unknown(c, attempt.unknown_names) for c in checked)
            return replace(attempt, checked=without_lone_bridges(checked, draft, attempt.bridges))

    async def _check(self, draft: Draft, context: Sequence[Passage]) -> tuple[Checked, ...]:
        async def one(index: int) -> Checked:
            sentence = draft.sentences[index]
            cited = tuple(context[n - 1] for n in sentence.citations if 0 < n <= len(context))
            if not cited:
                return Checked(sentence.text, (), sentence.part, False, 0.0, ("cites no passage that exists",), index)
            verdict = await self.verifier.verify(sentence.text, [p.text for p in cited])
            return Checked(
                sentence.text,
                cited,
                sentence.part,
                verdict.passed,
                verdict.score,
                verdict.reasons,
                index,
                verdict.decided_by,
            )

        return tuple(await asyncio.gather(*(one(i) for i in range(len(draft.sentences)))))

    async def _rescue(
        self,
        checked: Sequence[Checked],
        scope: AccessScope,
        number: int,
        written: frozenset[int],
        read: Sequence[Passage],
        echoed: frozenset[str],
    ) -> tuple[tuple[Checked, ...], GateOutcome | None]:
        """A rejected model sentence is requoted from what it cites when one source sentence states
        it; any other rejected sentence (but one its evidence contradicts) gets a re-retrieval. A
        supported rescue is kept with the passage that supports it; the `rescue` gate lists them all."""
        failed = [c for c in checked if not c.supported and c.text.strip()]
        requoted = await asyncio.gather(
            *(
                self.rescuer.requote(c.text, c.passages, read=read, echoed=echoed)
                for c in failed
                if c.origin_index in written and not misattributes(c.reasons)
            )
        )
        tried = {r.sentence: r for r in requoted if r is not None}
        searched = [c for c in failed if c.text not in tried and not contradicts_evidence(c.reasons)]
        for c, r in zip(
            searched,
            await asyncio.gather(*(self.rescuer.rescue(c.text, scope, tried=c.passages) for c in searched)),
            strict=True,
        ):
            tried[c.text] = r
        if not tried:
            return tuple(checked), None

        def after(c: Checked) -> Checked:
            r = tried.get(c.text) if not c.supported else None
            if r is None:
                return c
            if r.passage is None:
                return replace(c, reasons=(*c.reasons, *r.reasons))
            rescued = replace(c, passages=(r.passage,), supported=True, score=r.score, reasons=("rescued", *r.reasons))
            if r.quote is None:
                return rescued
            return replace(rescued, text=r.quote, reasons=("requoted",), written=c.text, written_reasons=c.reasons)

        return _once(tuple(after(c) for c in checked)), rescue_gate(list(tried.values()), number)


def _once(checked: Sequence[Checked]) -> tuple[Checked, ...]:
    """Each requoted source sentence once: two written sentences restating one source sentence
    deliver it once (the second writer's sentence says nothing the first's quote does not)."""
    seen: set[str] = set()
    kept = []
    for c in checked:
        if c.written is not None and c.text in seen:
            continue
        if c.supported:
            seen.add(c.text)
        kept.append(c)
    return tuple(kept)


def _about_the_unknown(checked: Checked, unknown: Mapping[int, tuple[str, ...]]) -> Checked:
    """A sentence answering a part that names something no document mentions is not delivered, however
    well its evidence supports it: it is about something else (the premise gate's challenge says so)."""
    names = unknown.get(checked.part)
    if not names or not checked.supported:
        return checked
    reason = f"answers a part about {', '.join(names)}, which no document mentions"
    return replace(checked, supported=False, reasons=(*checked.reasons, reason))
