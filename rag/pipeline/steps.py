"""The steps of one attempt, each a small class with one `async run(attempt, run) -> Attempt`.

A step reads the attempt so far (a frozen `Attempt`) and what every step shares (`Run`: the question
understood, the reader's scope, the queries, the shortlist size, the clock, and the reporter it tells
as it starts, with counts only: rag/pipeline/progress.py), and returns a new `Attempt` with what it
found and the gates it decided. The order they run in is declared once, in
`GatedAttempt` (rag/pipeline/flow.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from rag.errors import LLMError
from rag.model.answers import GateOutcome
from rag.model.evidence import Checked, PartEvidence, Query, Ranked, SynthesisRequest
from rag.model.ports import Embedder, FactComparer, Reranker, Retriever, SamplingSynthesizer, Synthesizer
from rag.model.types import AccessScope, Passage
from rag.pipeline.attempt import Attempt, Run, context_of
from rag.pipeline.bridge import Bridge, Bridged, describes, find_bridge, with_bridges
from rag.pipeline.focus import Focus, FocusCheck, common_lexemes
from rag.pipeline.gates.bridge import bridge_gate
from rag.pipeline.gates.completeness import completeness_gate
from rag.pipeline.gates.faithfulness import faithfulness_gate
from rag.pipeline.gates.premise import alternatives, premise_gate, unknown_names
from rag.pipeline.gates.relevance import relevance_gate
from rag.pipeline.gates.retrieval_score import best_cosine, retrieval_score_gate
from rag.pipeline.gates.self_consistency import SAMPLE_TEMPERATURE, consistency_gate, judged_gate, not_run_gate
from rag.pipeline.gates.writer import writer_gate
from rag.pipeline.gates.writer_conflicts import writer_conflicts_gate
from rag.pipeline.relevance import CHECKED_KINDS, relevance
from rag.pipeline.writer_conflicts import confirm
from rag.text.facts import clean_sentence

TermFrequencies = Callable[[str, AccessScope], Awaitable[Mapping[str, float]]]
"""A text's words, each with its share of the chunks of the knowledge bases the scope may search."""


class Step(Protocol):
    async def run(self, attempt: Attempt, run: Run) -> Attempt: ...


class Prober:
    """A query's vector and its words' corpus frequencies, fetched together."""

    def __init__(self, embedder: Embedder, term_frequencies: TermFrequencies) -> None:
        self.embedder = embedder
        self.term_frequencies = term_frequencies

    async def run(self, text: str, scope: AccessScope) -> Query:
        vector, frequencies = await asyncio.gather(self.embedder.embed([text]), self.term_frequencies(text, scope))
        return Query(text, vector[0], frequencies)


class Retrieve:
    """Gate `retrieval_score`: each part's shortlist, hybrid search in the reader's scope."""

    def __init__(self, prober: Prober, retriever: Retriever, *, threshold: float) -> None:
        self.prober = prober
        self.retriever = retriever
        self.threshold = threshold

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        run.progress("retrieve", attempt=attempt.number)
        with run.clock.stage("retrieve"):
            probes = await asyncio.gather(*(self.prober.run(q, run.scope) for q in run.queries))
            found = await asyncio.gather(
                *(self.retriever.run(q.text, run.scope, k=run.k, vector=q.vector) for q in probes)
            )
        gate = retrieval_score_gate(found, run.understood.parts, threshold=self.threshold, number=attempt.number)
        return replace(
            attempt.with_gates(gate), probes=tuple(probes), shortlists=tuple(tuple(passages) for passages in found)
        )


class Rerank:
    """Gate `premise`: each shortlist reranked, and the names and codes no passage mentions."""

    def __init__(self, reranker: Reranker, *, threshold: float, premise: bool = True) -> None:
        self.reranker = reranker
        self.threshold = threshold
        self.premise = premise

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        parts, found = run.understood.parts, attempt.shortlists
        run.progress("rerank", attempt=attempt.number, count=len({p.chunk_id for ps in found for p in ps}))
        with run.clock.stage("rerank"):
            ranked = await asyncio.gather(
                *(self.reranker.rerank(q, passages) for q, passages in zip(attempt.probes, found, strict=True))
            )
        unknown = {
            i: missing
            for i, passages in enumerate(found)
            if self.premise and (missing := unknown_names(parts[i], passages))
        }
        evidence = tuple(
            PartEvidence(part, tuple(r), best_meaning(passages, r) >= self.threshold and i not in unknown)
            for i, (part, r, passages) in enumerate(zip(parts, ranked, found, strict=True))
        )
        return replace(
            attempt.with_gates(premise_gate(parts, unknown, attempt.number)),
            unknown_names=unknown,
            known_instead={i: alternatives(parts[i], names_, found[i]) for i, names_ in unknown.items()},
            evidence=evidence,
        )


class Synthesise:
    """Gate `writer` (a model writer only): the draft, each sentence citing the passages it rests on."""

    def __init__(self, synthesizer: Synthesizer) -> None:
        self.synthesizer = synthesizer

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        context = context_of(attempt.evidence)
        run.progress("synthesise", attempt=attempt.number)
        with run.clock.stage("synthesise"):
            draft = await self.synthesizer.synthesise(
                SynthesisRequest(run.understood.text, attempt.evidence, context, attempt.number)
            )
        attempt = replace(attempt, draft=draft)
        return attempt.with_gates(writer_gate(draft, attempt.number)) if draft.writer else attempt


class BridgeHops:
    """Gate `bridge`: multi-hop parts get a second retrieval from the bridging name, and the draft is
    written again with it. Parts the first hop left unanswered are tried, and parts that describe a
    thing instead of naming it ("the plan that includes single sign-on"), whose first-hop answer is
    about whichever plan ranked first."""

    def __init__(
        self,
        prober: Prober,
        retriever: Retriever,
        reranker: Reranker,
        synthesizer: Synthesizer,
        *,
        threshold: float,
    ) -> None:
        self.prober = prober
        self.retriever = retriever
        self.reranker = reranker
        self.synthesizer = synthesizer
        self.threshold = threshold

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        bridges = await self._bridges(attempt, run)
        if not bridges:
            return attempt
        evidence = tuple(bridges[i].evidence if i in bridges else part for i, part in enumerate(attempt.evidence))
        context = context_of(evidence)
        with run.clock.stage("synthesise"):
            draft = await self.synthesizer.synthesise(
                SynthesisRequest(run.understood.text, evidence, context, attempt.number)
            )
        draft = with_bridges(draft, bridges, context)
        attempt = replace(attempt, evidence=evidence, draft=draft, bridges=bridges)
        return attempt.with_gates(bridge_gate(run.understood.parts, bridges, draft, attempt.number))

    async def _bridges(self, attempt: Attempt, run: Run) -> dict[int, Bridged]:
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
            with run.clock.stage("retrieve"):
                probe = await self.prober.run(bridge.question, run.scope)
                passages = await self.retriever.run(bridge.question, run.scope, k=run.k, vector=probe.vector)
            with run.clock.stage("rerank"):
                ranked = await self.reranker.rerank(probe, passages)
            usable = best_meaning(passages, ranked) >= self.threshold
            hop = (*ranked, Ranked(bridge.sentence.passage, bridge.sentence.score, (bridge.sentence,)))
            out[index] = Bridged(bridge, PartEvidence(bridge.question, hop, usable))
        return out


class CheckFocus:
    """Per answered part: does its answer address every word of the part (rag/pipeline/focus.py)?
    Decided here, gated by `completeness`."""

    def __init__(self, focus: FocusCheck) -> None:
        self.focus = focus

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        with run.clock.stage("focus"):
            by_part: dict[int, list[Checked]] = {}
            for c in attempt.checked:
                if c.supported:
                    by_part.setdefault(c.part, []).append(c)

            async def one(part: int, checked: Sequence[Checked]) -> tuple[int, Focus]:
                context = [f"{p.title} {p.heading}" for c in checked for p in c.passages]
                context += [asked for c in checked if (asked := _answers(attempt, c))]
                common = (
                    common_lexemes(attempt.probes[part].term_frequency) if part < len(attempt.probes) else frozenset()
                )
                return part, await self.focus.check(attempt.parts[part], [c.text for c in checked], context, common)

            focus = dict(await asyncio.gather(*(one(i, cs) for i, cs in sorted(by_part.items()))))
            return replace(attempt, focus=focus)


class CheckRelevance:
    """Gate `relevance`: per part whose answer addresses it, does that answer state the kind of value
    the part asks for, about the case asked (rag/pipeline/relevance.py)? A part whose answer does
    not is unanswered. Logged when a part asks for a value, is unanswered, or had a sentence about
    another case left out."""

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        by_part: dict[int, list[str]] = {}
        for c in attempt.supported:
            by_part.setdefault(c.part, []).append(c.text)
        checked = {i: relevance(attempt.parts[i], texts) for i, texts in sorted(by_part.items())}
        quiet = all(r.stated and not r.other_cases and r.wanted not in CHECKED_KINDS for r in checked.values())
        if quiet:
            return replace(attempt, relevance=checked)
        return replace(attempt.with_gates(relevance_gate(attempt.parts, checked, attempt.number)), relevance=checked)


class ConfirmWriterConflicts:
    """Gate `writer_conflicts`: a model writer's own conflict notes, believed only when the cited
    passages confirm them."""

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        assert attempt.draft is not None
        if not attempt.draft.conflicts:
            return attempt
        notes = [confirm(note, context_of(attempt.evidence)) for note in attempt.draft.conflicts]
        confirmed = tuple(n.found for n in notes if n.found is not None)
        return replace(attempt.with_gates(writer_conflicts_gate(notes, attempt.number)), writer_conflicts=confirmed)


class CheckConsistency:
    """Gate `self_consistency`: for high-stakes knowledge bases only, with a sampling writer, would it
    say the same again? Compared offline, or by the fact comparer when one is configured."""

    def __init__(
        self,
        synthesizer: Synthesizer,
        *,
        knowledge_bases: frozenset[str],
        samples: int,
        fact_comparer: FactComparer | None = None,
    ) -> None:
        self.synthesizer = synthesizer
        self.knowledge_bases = knowledge_bases
        self.samples = samples
        self.fact_comparer = fact_comparer

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        if not (self._high_stakes(attempt) and isinstance(self.synthesizer, SamplingSynthesizer)):
            return attempt
        run.progress("consistency", attempt=attempt.number, count=self.samples)
        with run.clock.stage("consistency"):
            gate = await self._gate(self.synthesizer, run.understood.text, attempt)
        return attempt.with_gates(gate)

    def _high_stakes(self, attempt: Attempt) -> bool:
        marked = self.knowledge_bases
        if not marked or not attempt.supported or (attempt.draft is not None and attempt.draft.fallback):
            return False
        return "*" in marked or any(p.knowledge_base in marked for c in attempt.supported for p in c.passages)

    async def _gate(self, synthesizer: SamplingSynthesizer, question: str, attempt: Attempt) -> GateOutcome:
        number = attempt.number
        request = SynthesisRequest(question, attempt.evidence, context_of(attempt.evidence), number)
        try:
            samples = await synthesizer.sample(request, self.samples, temperature=SAMPLE_TEMPERATURE)
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


class Conclude:
    """Gates `faithfulness` (too many unsupported sentences, or too little support) and
    `completeness` (each part answered, and addressed)."""

    def __init__(self, verifier: str, *, max_unsupported: int, min_support: float) -> None:
        self.verifier = verifier
        self.max_unsupported = max_unsupported
        self.min_support = min_support

    async def run(self, attempt: Attempt, run: Run) -> Attempt:
        faithful = faithfulness_gate(
            attempt,
            max_unsupported=self.max_unsupported,
            min_support=self.min_support,
            verifier=self.verifier,
            number=attempt.number,
        )
        return attempt.with_gates(faithful, completeness_gate(attempt, attempt.number))


def _answers(attempt: Attempt, checked: Checked) -> str:
    """The FAQ question line a delivered sentence answers, when the writer copied it from one."""
    if attempt.draft is None or not 0 <= checked.origin_index < len(attempt.draft.sentences):
        return ""
    origin = attempt.draft.sentences[checked.origin_index].origin
    return origin.answers if origin is not None and checked.text == clean_sentence(origin.text) else ""


def best_meaning(passages: Sequence[Passage], ranked: Sequence[Ranked]) -> float:
    """A part's relevance: its best chunk cosine, or its best sentence's when that is higher."""
    sentences = (s.meaning for r in ranked for s in r.sentences)
    return max(best_cosine(passages), max(sentences, default=-1.0))
