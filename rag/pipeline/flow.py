"""The flow of DESIGN.md in one place: the steps of one attempt, and the retry.

`GatedAttempt.__call__` lists an attempt's steps in order, each taking the attempt so far and
returning a new frozen `Attempt`, with the gates it may add named beside it: retrieve (gate
`retrieval_score`; a failure ends the attempt), rerank (`premise`), synthesise (`writer`), bridge
a multi-hop part (`bridge`), criticise each sentence (`rescue` for rejected claims), focus per
answered part, confirm a writer's conflict notes (`writer_conflicts`), self-consistency for
high-stakes knowledge bases (`self_consistency`), then `faithfulness` and `completeness`.
`GatedAttempt.with_retry` is the retry: a second attempt with rewritten queries and twice the
shortlist when `should_retry` says so, and `best_of` the one delivered. The `Answerer`
(rag/pipeline/answerer.py) runs them and composes the answer (rag/pipeline/compose.py:
contradiction over the shortlist, then answered, low_confidence or abstained).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from rag.errors import LLMError
from rag.model.answers import DEFAULT_REFUSAL, GateOutcome
from rag.model.evidence import Draft, PartEvidence, Query, Ranked, SynthesisRequest
from rag.model.ports import Embedder, FactComparer, Reranker, SamplingSynthesizer, Synthesizer, Verifier
from rag.model.types import AccessScope, Passage
from rag.pipeline.attempt import Attempt, Checked, Clock, context_of
from rag.pipeline.bridge import Bridge, Bridged, describes, find_bridge, with_bridges, without_lone_bridges
from rag.pipeline.focus import Focus, FocusCheck
from rag.pipeline.gates.bridge import bridge_gate
from rag.pipeline.gates.completeness import completeness_gate
from rag.pipeline.gates.faithfulness import faithfulness_gate
from rag.pipeline.gates.premise import alternatives, premise_gate, unknown_names
from rag.pipeline.gates.rescue import rescue_gate
from rag.pipeline.gates.retrieval_score import best_cosine, retrieval_score_gate
from rag.pipeline.gates.self_consistency import SAMPLE_TEMPERATURE, consistency_gate, judged_gate, not_run_gate
from rag.pipeline.gates.writer import writer_gate
from rag.pipeline.gates.writer_conflicts import writer_conflicts_gate
from rag.pipeline.rescue import ClaimRescuer
from rag.pipeline.retrieve import HybridRetriever
from rag.pipeline.understand import Understood
from rag.pipeline.writer_conflicts import confirm
from rag.text.exact_checks import contradicts_evidence
from rag.text.facts import STOP_WORDS

TermFrequencies = Callable[[str], Awaitable[Mapping[str, float]]]


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    retrieval_threshold: float
    shortlist: int = 20
    max_unsupported: int = 1
    min_support: float = 0.6
    retry: bool = True
    refusal: str = DEFAULT_REFUSAL
    focus_threshold: float = 0.09
    """A part is unanswered when its answer ignores a question word (rag/pipeline/focus.py) by more than this."""
    answer_budget: float | None = None
    """Seconds all language-model calls of one answer share (None: no limit)."""
    rescue: bool = True
    """One targeted re-retrieval for each sentence the critic rejects, before it is dropped."""
    self_consistency_kbs: frozenset[str] = frozenset()
    """Knowledge bases whose answers the writer must give again, consistently ("*": all)."""
    self_consistency_samples: int = 3


class AttemptRunner(Protocol):
    async def with_retry(self, understood: Understood, scope: AccessScope) -> tuple[Attempt, ...]: ...


@dataclass(frozen=True, slots=True)
class _Run:
    """What every step of one attempt reads besides the attempt itself: the question, the reader's
    scope, the attempt's queries and shortlist size, and the clock its stages are timed by."""

    understood: Understood
    scope: AccessScope
    queries: tuple[str, ...]
    k: int
    clock: Clock


class GatedAttempt:
    """One retrieval-synthesis-critic cycle; the retry is the same cycle with other queries."""

    def __init__(
        self,
        config: PipelineConfig,
        embedder: Embedder,
        retriever: HybridRetriever,
        term_frequencies: TermFrequencies,
        reranker: Reranker,
        synthesizer: Synthesizer,
        verifier: Verifier,
        *,
        fact_comparer: FactComparer | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.retriever = retriever
        self.term_frequencies = term_frequencies
        self.reranker = reranker
        self.synthesizer = synthesizer
        self.verifier = verifier
        self.focus = FocusCheck(embedder, threshold=config.focus_threshold)
        self.rescuer = ClaimRescuer(retriever, verifier)
        self.fact_comparer = fact_comparer

    async def with_retry(self, understood: Understood, scope: AccessScope) -> tuple[Attempt, ...]:
        """The first attempt and, when `should_retry` says so, a second with rewritten queries and
        twice the shortlist (`best_of` picks the one delivered)."""
        first = await self(understood, scope, 1)
        if not (self.config.retry and should_retry(first)):
            return (first,)
        return (first, await self(understood, scope, 2))

    async def __call__(self, understood: Understood, scope: AccessScope, number: int) -> Attempt:
        """One attempt, stage by stage. Each step takes the attempt so far and returns it with what
        the step found (a new value: nothing is changed in place); a failed retrieval gate ends it.
        The gates each step may add are named beside it."""
        run = _Run(
            understood,
            scope,
            queries=understood.parts if number == 1 else tuple(retry_query(p) for p in understood.parts),
            k=self.config.shortlist * (1 if number == 1 else 2),
            clock=Clock({}),
        )
        attempt, found, probes = await self._retrieve(Attempt(number, understood.parts), run)  # retrieval_score
        if attempt.gates[-1].passed:
            attempt = await self._rerank(attempt, run, found, probes)  # premise
            attempt = await self._synthesise(attempt, run)  # writer
            attempt, bridges = await self._bridge(attempt, run)  # bridge
            attempt = await self._criticise(attempt, run, bridges)  # rescue
            attempt = await self._check_focus(attempt, run)
            attempt = self._confirm_writer_conflicts(attempt, run)  # writer_conflicts
            attempt = await self._check_consistency(attempt, run)  # self_consistency
            faithful = faithfulness_gate(
                attempt,
                max_unsupported=self.config.max_unsupported,
                min_support=self.config.min_support,
                verifier=self.verifier.name,
                number=number,
            )
            attempt = attempt.with_gates(faithful, completeness_gate(attempt, number))
        return replace(attempt, timings=dict(run.clock.timings))

    async def _retrieve(self, attempt: Attempt, run: _Run) -> tuple[Attempt, list[list[Passage]], list[Query]]:
        with run.clock.stage("retrieve"):
            probes = await asyncio.gather(*(self._probe(q) for q in run.queries))
            found = await asyncio.gather(
                *(self.retriever.run(q.text, run.scope, k=run.k, vector=q.vector) for q in probes)
            )
        gate = retrieval_score_gate(
            found, run.understood.parts, threshold=self.config.retrieval_threshold, number=attempt.number
        )
        return attempt.with_gates(gate), list(found), list(probes)

    async def _rerank(
        self, attempt: Attempt, run: _Run, found: Sequence[Sequence[Passage]], probes: Sequence[Query]
    ) -> Attempt:
        """The shortlist of each part reranked, and the names and codes no passage mentions."""
        parts = run.understood.parts
        with run.clock.stage("rerank"):
            ranked = await asyncio.gather(
                *(self.reranker.rerank(q, passages) for q, passages in zip(probes, found, strict=True))
            )
        unknown = {i: missing for i, passages in enumerate(found) if (missing := unknown_names(parts[i], passages))}
        evidence = tuple(
            PartEvidence(
                part,
                tuple(r),
                _best_meaning(passages, r) >= self.config.retrieval_threshold and i not in unknown,
            )
            for i, (part, r, passages) in enumerate(zip(parts, ranked, found, strict=True))
        )
        return replace(
            attempt.with_gates(premise_gate(parts, unknown, attempt.number)),
            unknown_names=unknown,
            known_instead={i: alternatives(parts[i], names_, found[i]) for i, names_ in unknown.items()},
            evidence=evidence,
        )

    async def _synthesise(self, attempt: Attempt, run: _Run) -> Attempt:
        context = context_of(attempt.evidence)
        with run.clock.stage("synthesise"):
            draft = await self.synthesizer.synthesise(
                SynthesisRequest(run.understood.text, attempt.evidence, context, attempt.number)
            )
        attempt = replace(attempt, draft=draft)
        return attempt.with_gates(writer_gate(draft, attempt.number)) if draft.writer else attempt

    async def _bridge(self, attempt: Attempt, run: _Run) -> tuple[Attempt, dict[int, Bridged]]:
        """Multi-hop parts: a second retrieval from the bridging name, and the draft written again."""
        bridges = await self._bridges(attempt, run.scope, run.k, run.clock)
        if not bridges:
            return attempt, bridges
        evidence = tuple(bridges[i].evidence if i in bridges else part for i, part in enumerate(attempt.evidence))
        context = context_of(evidence)
        with run.clock.stage("synthesise"):
            draft = await self.synthesizer.synthesise(
                SynthesisRequest(run.understood.text, evidence, context, attempt.number)
            )
        draft = with_bridges(draft, bridges, context)
        attempt = replace(attempt, evidence=evidence, draft=draft)
        return attempt.with_gates(bridge_gate(run.understood.parts, bridges, draft, attempt.number)), bridges

    async def _criticise(self, attempt: Attempt, run: _Run, bridges: Mapping[int, Bridged]) -> Attempt:
        """Each drafted sentence against what it cites; a rejected one gets one re-retrieval of its own."""
        draft = attempt.draft
        assert draft is not None
        with run.clock.stage("critic"):
            checked = await self._check(draft, context_of(attempt.evidence))
            if self.config.rescue and any(not c.supported for c in checked):
                checked, rescued = await self._rescue(checked, run.scope, attempt.number)
                if rescued is not None:
                    attempt = attempt.with_gates(rescued)
            checked = tuple(_about_the_unknown(c, attempt.unknown_names) for c in checked)
            return replace(attempt, checked=without_lone_bridges(checked, draft, bridges))

    async def _check_focus(self, attempt: Attempt, run: _Run) -> Attempt:
        with run.clock.stage("focus"):
            return replace(attempt, focus=await self._focus(attempt))

    def _confirm_writer_conflicts(self, attempt: Attempt, run: _Run) -> Attempt:
        """A model writer's own conflict notes, believed only when the cited passages confirm them."""
        assert attempt.draft is not None
        if not attempt.draft.conflicts:
            return attempt
        notes = [confirm(note, context_of(attempt.evidence)) for note in attempt.draft.conflicts]
        confirmed = tuple(n.found for n in notes if n.found is not None)
        return replace(attempt.with_gates(writer_conflicts_gate(notes, attempt.number)), writer_conflicts=confirmed)

    async def _check_consistency(self, attempt: Attempt, run: _Run) -> Attempt:
        """High-stakes knowledge bases only, with a sampling writer: would it say the same again?"""
        if not (self._high_stakes(attempt) and isinstance(self.synthesizer, SamplingSynthesizer)):
            return attempt
        with run.clock.stage("consistency"):
            gate = await self._consistency(run.understood.text, attempt, context_of(attempt.evidence))
        return attempt.with_gates(gate)

    async def _bridges(self, attempt: Attempt, scope: AccessScope, k: int, clock: Clock) -> dict[int, Bridged]:
        """Second hops where the evidence names a bridge: for the parts the first hop left
        unanswered, and for parts that describe a thing instead of naming it ("the plan that
        includes single sign-on"), whose first-hop answer is about whichever plan ranked first."""
        assert attempt.draft is not None
        found: dict[int, Bridge] = {}
        described = {i for i, part in enumerate(attempt.evidence) if describes(part.text)}
        for index in sorted(set(attempt.draft.unanswered_parts) | described):
            part = attempt.evidence[index]
            if index in attempt.unknown_names or not part.ranked:
                continue
            bridge = find_bridge(part.text, part.ranked)
            if bridge is not None:
                found[index] = bridge
        out: dict[int, Bridged] = {}
        for index, bridge in found.items():
            with clock.stage("retrieve"):
                probe = await self._probe(bridge.question)
                passages = await self.retriever.run(bridge.question, scope, k=k, vector=probe.vector)
            with clock.stage("rerank"):
                ranked = await self.reranker.rerank(probe, passages)
            usable = _best_meaning(passages, ranked) >= self.config.retrieval_threshold
            hop = (*ranked, Ranked(bridge.sentence.passage, bridge.sentence.score, (bridge.sentence,)))
            out[index] = Bridged(bridge, PartEvidence(bridge.question, hop, usable))
        return out

    async def _rescue(
        self, checked: Sequence[Checked], scope: AccessScope, number: int
    ) -> tuple[tuple[Checked, ...], GateOutcome | None]:
        """Each rejected sentence gets one re-retrieval of its own; a supported one is kept with the
        passage that supports it. The `rescue` gate, when any sentence was tried."""
        failed = [c for c in checked if not c.supported and c.text.strip() and not contradicts_evidence(c.reasons)]
        if not failed:
            return tuple(checked), None
        rescues = await asyncio.gather(*(self.rescuer.rescue(c.text, scope, tried=c.passages) for c in failed))
        tried = {c.origin_index: r for c, r in zip(failed, rescues, strict=True)}

        def after(c: Checked) -> Checked:
            r = tried.get(c.origin_index)
            if r is None:
                return c
            if r.passage is None:
                return replace(c, reasons=(*c.reasons, *r.reasons))
            return replace(c, passages=(r.passage,), supported=True, score=r.score, reasons=("rescued", *r.reasons))

        return tuple(after(c) for c in checked), rescue_gate(rescues, number)

    def _high_stakes(self, attempt: Attempt) -> bool:
        marked = self.config.self_consistency_kbs
        if not marked or not attempt.supported or (attempt.draft is not None and attempt.draft.fallback):
            return False
        return "*" in marked or any(p.knowledge_base in marked for c in attempt.supported for p in c.passages)

    async def _consistency(self, question: str, attempt: Attempt, context: Sequence[Passage]) -> GateOutcome:
        number = attempt.number
        assert isinstance(self.synthesizer, SamplingSynthesizer)
        request = SynthesisRequest(question, attempt.evidence, tuple(context), number)
        try:
            samples = await self.synthesizer.sample(
                request, self.config.self_consistency_samples, temperature=SAMPLE_TEMPERATURE
            )
        except LLMError as exc:  # not run is not a disagreement: recorded, and the answer keeps its route
            return not_run_gate(str(exc), number)
        delivered = [c.text for c in attempt.supported]
        if self.fact_comparer is not None:
            texts = [" ".join(s.text for s in d.sentences) for d in samples]
            try:
                compared = await self.fact_comparer.compare(" ".join(delivered), texts)
                return judged_gate(compared, samples, self.fact_comparer.name, number)
            except LLMError as exc:  # the offline comparison decides; the gate says so
                gate = consistency_gate(delivered, samples, number)
                return replace(gate, details={**gate.details, "judge_failed": str(exc)})
        return consistency_gate(delivered, samples, number)

    async def _focus(self, attempt: Attempt) -> dict[int, Focus]:
        by_part: dict[int, list[Checked]] = {}
        for c in attempt.checked:
            if c.supported:
                by_part.setdefault(c.part, []).append(c)

        async def one(part: int, checked: Sequence[Checked]) -> tuple[int, Focus]:
            context = [f"{p.title} {p.heading}" for c in checked for p in c.passages]
            return part, await self.focus.check(attempt.parts[part], [c.text for c in checked], context)

        return dict(await asyncio.gather(*(one(i, cs) for i, cs in sorted(by_part.items()))))

    async def _probe(self, text: str) -> Query:
        vector, frequencies = await asyncio.gather(self.embedder.embed([text]), self.term_frequencies(text))
        return Query(text, vector[0], frequencies)

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


def _about_the_unknown(checked: Checked, unknown: Mapping[int, tuple[str, ...]]) -> Checked:
    """A sentence answering a part that names something no document mentions is not delivered, however
    well its evidence supports it: it is about something else (the premise gate's challenge says so)."""
    names = unknown.get(checked.part)
    if not names or not checked.supported:
        return checked
    reason = f"answers a part about {', '.join(names)}, which no document mentions"
    return replace(checked, supported=False, reasons=(*checked.reasons, reason))


def _best_meaning(passages: Sequence[Passage], ranked: Sequence[Ranked]) -> float:
    """A part's relevance: its best chunk cosine, or its best sentence's when that is higher."""
    sentences = (s.meaning for r in ranked for s in r.sentences)
    return max(best_cosine(passages), max(sentences, default=-1.0))


def should_retry(attempt: Attempt) -> bool:
    """Retry a failed faithfulness gate (too many unsupported sentences, too little support, or
    nothing supported at all) when retrieval found something, unless every part named something
    no document mentions (the full-text side would have found a rare name that exists: more
    passages will not). A failed retrieval gate abstains at once: nothing is generated from
    passages that are not about the question."""
    retrieval = attempt.gate("retrieval_score")
    faithful = attempt.gate("faithfulness")
    if retrieval is None or not retrieval.passed or faithful is None or faithful.passed:
        return False
    return len(attempt.unknown_names) < len(attempt.parts)


def best_of(attempts: Sequence[Attempt]) -> Attempt:
    """The attempt delivered: the retry when it did at least as well as the first."""
    return attempts[-1] if attempts[-1].rank() >= attempts[0].rank() else attempts[0]


def retry_query(part: str) -> str:
    """The retry's query: the part's content words only, so full-text search weighs them alone."""
    words = [w for w in part.replace("?", " ").split() if w.lower().strip(",.") not in STOP_WORDS]
    return " ".join(words) or part
