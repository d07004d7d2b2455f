"""The flow of docs/design.md in one place: the steps of one attempt in order, and the retry.

`GatedAttempt.steps` is the list of one attempt's steps (rag/pipeline/steps.py), each a small class
whose `run` takes the attempt so far and returns a new frozen `Attempt`, with the gates it may add
named beside it. A failed retrieval gate ends the attempt. `GatedAttempt.with_retry` is the retry: a
second attempt with rewritten queries and twice the shortlist when `should_retry` says so, and
`best_of` the one delivered. The `Answerer` (rag/pipeline/answerer.py) runs them and composes the
answer (rag/pipeline/compose.py: contradiction over the shortlist, then answered, low_confidence or
abstained).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from rag.config import Settings
from rag.model.answers import DEFAULT_REFUSAL
from rag.model.ports import Embedder, FactComparer, Reranker, Retriever, Synthesizer, Verifier
from rag.model.types import AccessScope
from rag.pipeline.attempt import Attempt, Clock, Run
from rag.pipeline.criticise import Criticise
from rag.pipeline.focus import FocusCheck
from rag.pipeline.progress import SILENT, Reporter
from rag.pipeline.rescue import ClaimRescuer
from rag.pipeline.steps import (
    BridgeHops,
    CheckConsistency,
    CheckFocus,
    CheckRelevance,
    Conclude,
    ConfirmWriterConflicts,
    Prober,
    Rerank,
    Retrieve,
    Step,
    Synthesise,
    TermFrequencies,
)
from rag.pipeline.understand import Understood
from rag.text.facts import STOP_WORDS


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
    rules_off: frozenset[str] = frozenset()
    """Rule families switched off to measure them (`Settings.rules_off`): bridge, premise, relevance."""

    @classmethod
    def from_settings(cls, settings: Settings) -> PipelineConfig:
        """The pipeline's part of the settings (thresholds resolved with calibration.json there)."""
        return cls(
            retrieval_threshold=settings.retrieval_threshold,
            shortlist=settings.shortlist,
            min_support=settings.min_support,
            retry=settings.retry,
            refusal=settings.refusal,
            focus_threshold=settings.focus_threshold,
            answer_budget=settings.answer_budget,
            rescue=settings.rescue,
            self_consistency_kbs=frozenset(settings.self_consistency_kbs),
            self_consistency_samples=settings.self_consistency_samples,
            rules_off=frozenset(settings.rules_off),
        )


class AttemptRunner(Protocol):
    async def with_retry(
        self, understood: Understood, scope: AccessScope, *, progress: Reporter = SILENT, start: int = 1
    ) -> tuple[Attempt, ...]: ...


class GatedAttempt:
    """One retrieval-synthesis-critic cycle; the retry is the same cycle with other queries."""

    def __init__(
        self,
        config: PipelineConfig,
        embedder: Embedder,
        retriever: Retriever,
        term_frequencies: TermFrequencies,
        reranker: Reranker,
        synthesizer: Synthesizer,
        verifier: Verifier,
        *,
        fact_comparer: FactComparer | None = None,
    ) -> None:
        self.config = config
        prober = Prober(embedder, term_frequencies)
        threshold = config.retrieval_threshold
        off = config.rules_off
        steps: tuple[Step | None, ...] = (
            Retrieve(prober, retriever, threshold=threshold),  # gate retrieval_score; a failure ends the attempt
            Rerank(reranker, threshold=threshold, premise="premise" not in off),  # gate premise
            Synthesise(synthesizer),  # gate writer
            None if "bridge" in off else BridgeHops(prober, retriever, reranker, synthesizer, threshold=threshold),
            Criticise(verifier, ClaimRescuer(retriever, verifier), rescue=config.rescue),  # gate rescue
            CheckFocus(FocusCheck(embedder, threshold=config.focus_threshold)),  # read by completeness
            None if "relevance" in off else CheckRelevance(),  # gate relevance
            ConfirmWriterConflicts(),  # gate writer_conflicts
            CheckConsistency(  # gate self_consistency
                synthesizer,
                knowledge_bases=config.self_consistency_kbs,
                samples=config.self_consistency_samples,
                fact_comparer=fact_comparer,
            ),
            Conclude(  # gates faithfulness and completeness
                verifier.name, max_unsupported=config.max_unsupported, min_support=config.min_support
            ),
        )
        self.steps: tuple[Step, ...] = tuple(step for step in steps if step is not None)

    async def with_retry(
        self, understood: Understood, scope: AccessScope, *, progress: Reporter = SILENT, start: int = 1
    ) -> tuple[Attempt, ...]:
        """The first attempt and, when `should_retry` says so, a second with rewritten queries and
        twice the shortlist (`best_of` picks the one delivered). `progress` hears each stage; the
        attempts are numbered from `start` (a second writer's follow the first's)."""
        first = await self(understood, scope, start, progress=progress)
        if not (self.config.retry and should_retry(first)):
            return (first,)
        progress("retry", attempt=start + 1)
        return (first, await self(understood, scope, start + 1, progress=progress, retry=True))

    async def __call__(
        self,
        understood: Understood,
        scope: AccessScope,
        number: int,
        *,
        progress: Reporter = SILENT,
        retry: bool = False,
    ) -> Attempt:
        """One attempt: each step in turn, until the last or until one ends the attempt."""
        run = Run(
            understood,
            scope,
            queries=tuple(retry_query(p) for p in understood.parts) if retry else understood.parts,
            k=self.config.shortlist * (2 if retry else 1),
            clock=Clock({}),
            progress=progress,
        )
        attempt = Attempt(number, understood.parts)
        for step in self.steps:
            attempt = await step.run(attempt, run)
            if attempt.ended:
                break
        return replace(attempt, timings=dict(run.clock.timings))


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
