"""`Answerer.answer(question)`: the whole gated pipeline plus the gate log, for every adapter.

The access policy's scope, the question understood (rag/pipeline/understand.py), the attempts
with their retry (rag/pipeline/flow.py, which lists the steps of one attempt and says
when a second is made), the better attempt composed into the `Answer` (rag/pipeline/compose.py),
and the trace written. With a language model writing, the extractive writer's attempts come first
and the model's (`then`) only when those are not answered: a sentence quoted from the documents
needs no rewording, and a small model's rewording is where wrong values come in. The question's
`progress` listener hears each stage as it starts (rag/pipeline/progress.py). The trace is written
after the answer is composed; a logging failure is reported and spooled by the tracker, and never
costs the user their answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from rag.backends.llm import metering
from rag.errors import CandorError
from rag.model.answers import Answer, Question, Route
from rag.pipeline.access import AccessPolicy
from rag.pipeline.attempt import Attempt, dropped
from rag.pipeline.compose import Composed, compose
from rag.pipeline.contradictions import ContradictionDetector, ValueConflicts
from rag.pipeline.flow import AttemptRunner, PipelineConfig, best_of
from rag.pipeline.progress import Reporter
from rag.pipeline.understand import understand
from rag.text.switches import rules_off

log = logging.getLogger("candor.answer")

_RANK: dict[Route, int] = {"abstained": 0, "low_confidence": 1, "answered": 2}


class TraceRecorder(Protocol):
    async def record(
        self, question: Question, answer: Answer, *, config: Mapping[str, Any], models: Mapping[str, str]
    ) -> bool: ...


class Answerer:
    def __init__(
        self,
        attempt: AttemptRunner,
        policy: AccessPolicy,
        config: PipelineConfig,
        *,
        tracker: TraceRecorder | None = None,
        models: Mapping[str, str] | None = None,
        settings: Mapping[str, Any] | None = None,
        conflicts: ContradictionDetector | None = None,
        then: AttemptRunner | None = None,
    ) -> None:
        self.attempt = attempt
        self.then = then
        """The second writer's attempts, made when the first's answer is not answered."""
        self.policy = policy
        self.config = config
        self.tracker = tracker
        self.models = dict(models or {})
        self.settings = dict(settings or {})
        self.conflicts = conflicts or ValueConflicts()

    async def answer(self, question: Question) -> Answer:
        started = time.perf_counter()
        created = datetime.now(UTC)
        progress = Reporter(question.progress)
        progress("understand")
        scope = self.policy.scope_for(question)
        understood = understand(question)
        with metering(self.config.answer_budget) as meter, rules_off(self.config.rules_off):
            attempts = await self.attempt.with_retry(understood, scope, progress=progress)
            composed = self._compose(attempts)
            if self.then is not None and composed.route != "answered":
                more = await self.then.with_retry(understood, scope, progress=progress, start=len(attempts) + 1)
                written = self._compose(more)
                attempts = (*attempts, *more)
                composed = written if _RANK[written.route] > _RANK[composed.route] else composed
        gates = [g for a in attempts for g in a.gates]
        if composed.gate is not None:
            gates.append(composed.gate)
        timings: dict[str, float] = {}
        for a in attempts:
            for stage, ms in a.timings.items():
                timings[stage] = timings.get(stage, 0.0) + ms
        timings["total"] = (time.perf_counter() - started) * 1000
        answer = Answer(
            question=question.text,
            route=composed.route,
            text=composed.text,
            sentences=composed.sentences,
            sources=composed.sources,
            conflicts=composed.conflicts,
            unanswered_parts=composed.unanswered_parts,
            gates=tuple(gates),
            timings_ms=timings,
            rewritten_question=understood.text if understood.rewritten else None,
            parts=understood.parts,
            dropped=dropped(attempts),
            caveats=composed.caveats,
            created_at=created,
            model_calls=tuple(meter.calls),
        )
        # the scope the answer was made in (the access policy's, unless the caller set one), so that a
        # report by knowledge base and an audit's re-check see what the asker could read
        await self._record(replace(question, scope=scope), answer, scope_groups=sorted(scope.groups))
        return answer

    def _compose(self, attempts: Sequence[Attempt]) -> Composed:
        return compose(best_of(attempts), refusal=self.config.refusal, detector=self.conflicts)

    async def _record(self, question: Question, answer: Answer, *, scope_groups: list[str]) -> None:
        if self.tracker is None:
            return
        logged = time.perf_counter()
        config = {**self.settings, "scope_groups": scope_groups}
        try:
            written = await self.tracker.record(question, answer, config=config, models=self.models)
        except CandorError as exc:
            log.error(
                "trace %s could not be stored or spooled: %s", answer.trace_id, exc, extra={"trace_id": answer.trace_id}
            )
            written = False
        if not written:
            log.warning(
                "trace %s was not written to the database", answer.trace_id, extra={"trace_id": answer.trace_id}
            )
        answer.timings_ms["log"] = (time.perf_counter() - logged) * 1000
