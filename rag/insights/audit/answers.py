"""`candor audit answers`: sampled re-verification of delivered answers, and re-checks of abstentions.

docs/design.md defines the hallucination rate as the share of delivered sentences that a verifier
independent of the gate's own judges unsupported by their cited evidence, on a sample. `run_audit`
makes that sample:

1. picks up to `sample` delivered answers (answered, low confidence) of the window at random
   (`md5(id || seed)`: the same seed picks the same answers), skipping those this verifier has
   already judged in full (unless `again`);
2. re-verifies every delivered sentence against the stored text of the passages it cites (the
   answer's `sources[].excerpt`: what the gate saw), each row marked independent or not of that
   trace's gate (`rag.insights.audit.verifier`);
3. re-checks up to `sample` abstentions and unanswered parts of the window with relaxed retrieval
   (`rag.insights.relaxed.recheck`, passed in as `rechecker`: `relaxed_rechecker`), in the trace's
   stored scope (public documents only when none was stored);
4. stores the run and all its rows in one transaction.

A sentence the verifier answered unusably is recorded as not judged (`supported` NULL) and the run
goes on; when the verifier itself goes away (unreachable, circuit open, a broken model) the run
stops there, what was judged is stored, and the run is marked incomplete with the reason. A re-check
that fails (`CandorError`: the database, the embedder or the reranker) leaves that abstention not
re-checked, with the reason (`NotRechecked`, listed in the run's `config.not_rechecked`), and the
run goes on to the next; the run is then marked incomplete, and the verdicts already paid for are
stored all the same. A later run picks the abstentions not re-checked again. Anything else that
fails stores nothing.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.backends.llm import metering
from rag.errors import CandorError, StoreError
from rag.insights import relaxed
from rag.insights.audit import queries as audit_store
from rag.insights.audit.items import (
    Abstention,
    AbstentionAudit,
    DeliveredAnswer,
    DeliveredSentence,
    NotRechecked,
    SentenceAudit,
    abstentions_of,
    delivered_answer,
    stored_scope,
)
from rag.insights.audit.verifier import GONE, NOT_JUDGED, AuditVerifier
from rag.insights.evaluation.run import rate
from rag.insights.report.audit_measures import wilson_interval
from rag.model.types import AccessScope

__all__ = [
    "Abstention",
    "AbstentionAudit",
    "AuditRequest",
    "AuditResult",
    "DeliveredAnswer",
    "DeliveredSentence",
    "NotRechecked",
    "SentenceAudit",
    "abstentions_of",
    "delivered_answer",
    "relaxed_rechecker",
    "run_audit",
    "stored_scope",
]

log = logging.getLogger("candor.audit")

DEFAULT_SAMPLE = 50


class AbstentionCheck(Protocol):
    """What a relaxed re-check says about one abstention (`rag.insights.relaxed.Recheck`)."""

    @property
    def label(self) -> str: ...

    @property
    def score(self) -> float: ...

    def as_json(self) -> dict[str, Any]: ...


Rechecker = Callable[[str, AccessScope], Awaitable[AbstentionCheck]]
"""Re-checks one abstained question or part within a scope (`relaxed_rechecker`)."""


def relaxed_rechecker(ranking: relaxed.Ranking, *, shortlist: int) -> Rechecker:
    """`rag.insights.relaxed.recheck` on `ranking` (the answer pipeline's, `rag.runtime.Candor`), with three times
    the pipeline's shortlist, as rag/insights/relaxed.py asks of callers holding settings."""

    async def check(text: str, scope: AccessScope) -> AbstentionCheck:
        return await relaxed.recheck(ranking, text, scope, k=3 * shortlist)

    return check


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """What to audit: answers made in [since, until), optionally of one knowledge base."""

    since: datetime
    until: datetime
    sample: int = DEFAULT_SAMPLE
    knowledge_base: str | None = None
    seed: str = field(default_factory=lambda: secrets.token_hex(4))
    again: bool = False

    def params(self, *, verifier: str = "") -> dict[str, Any]:
        return audit_store.window_params(
            self.since,
            self.until,
            self.knowledge_base,
            seed=self.seed,
            limit=self.sample,
            again=self.again,
            verifier=verifier,
        )


@dataclass(frozen=True, slots=True)
class AuditResult:
    """One audit run: what it judged, and whether it finished."""

    run_id: int
    verifier: str
    deciding: str
    seed: str
    answers: int
    """Delivered answers sampled."""
    sentences: tuple[SentenceAudit, ...]
    abstentions: tuple[AbstentionAudit, ...]
    complete: bool
    error: str | None = None
    not_rechecked: tuple[NotRechecked, ...] = ()

    @property
    def judged(self) -> tuple[SentenceAudit, ...]:
        return tuple(s for s in self.sentences if s.supported is not None)

    @property
    def unsupported(self) -> int:
        return sum(s.supported is False for s in self.sentences)

    @property
    def not_judged(self) -> int:
        return sum(s.supported is None for s in self.sentences)

    @property
    def independent(self) -> tuple[int, int]:
        """(sentences judged independently of their gate, sentences judged)."""
        return sum(s.independent for s in self.judged), len(self.judged)

    @property
    def possibly_answerable(self) -> int:
        return sum(a.label in ("possibly_answerable", "wrong_abstention") for a in self.abstentions)

    def summary(self) -> dict[str, Any]:
        """The printed summary's numbers (`candor audit answers --json`)."""
        judged = len(self.judged)
        independent, _ = self.independent
        return {
            "run_id": self.run_id,
            "verifier": self.verifier,
            "seed": self.seed,
            "complete": self.complete,
            "error": self.error,
            "independent": {"sentences": independent, "of": judged},
            "answers": self.answers,
            "sentences": len(self.sentences),
            "unsupported": {**rate(self.unsupported, judged), "interval": wilson_interval(self.unsupported, judged)},
            "not_judged": self.not_judged,
            "abstentions": {**rate(self.possibly_answerable, len(self.abstentions)), "label": "possibly_answerable"},
            "not_rechecked": len(self.not_rechecked),
        }


# --- the run -------------------------------------------------------------------------------------------


async def run_audit(
    engine: AsyncEngine,
    verifier: AuditVerifier,
    request: AuditRequest,
    *,
    rechecker: Rechecker | None = None,
    config: Mapping[str, Any] | None = None,
) -> AuditResult:
    """Sample, re-verify, re-check and store one audit run (see the module docstring)."""
    answers = [
        delivered_answer(row)
        for row in await audit_store.select(
            engine, audit_store.DELIVERED_TO_VERIFY, request.params(verifier=verifier.name)
        )
    ]
    abstained = await audit_store.select(engine, audit_store.ABSTAINED_TO_RECHECK, request.params())
    with metering() as meter:
        sentences, error = await verify_answers(verifier, answers)
    items = [a for row in abstained for a in abstentions_of(row)]
    rechecked, failed = await recheck_all(rechecker, items)
    if failed:
        missed = f"{len(failed)} of {len(items)} abstentions not re-checked ({failed[0].reason})"
        error = f"{error}; {missed}" if error else missed
    usage = {
        "model_calls": len(meter.calls),
        "prompt_tokens": meter.prompt_tokens,
        "completion_tokens": meter.completion_tokens,
    }
    run = {
        "kind": "verifier",
        "verifier": verifier.name,
        "deciding_model": verifier.deciding,
        "sample_size": request.sample,
        "seed": request.seed,
        "since": request.since,
        "until": request.until,
        "knowledge_base": request.knowledge_base,
        "config": {
            **(config or {}),
            "spec": verifier.spec,
            "again": request.again,
            "usage": usage,
            "abstentions_rechecked": rechecker is not None,
            "not_rechecked": [f.as_json() for f in failed],
        },
        "complete": error is None,
        "error": error,
    }
    run_id = await store_run(engine, run, sentences, rechecked)
    return AuditResult(
        run_id,
        verifier.name,
        verifier.deciding,
        request.seed,
        len(answers),
        tuple(sentences),
        tuple(rechecked),
        complete=error is None,
        error=error,
        not_rechecked=tuple(failed),
    )


async def verify_answers(
    verifier: AuditVerifier, answers: Sequence[DeliveredAnswer]
) -> tuple[list[SentenceAudit], str | None]:
    """Every delivered sentence's verdict, in order; stops at the first sentence the verifier failed
    on as a whole (returned with it as not judged, and the reason)."""
    audited: list[SentenceAudit] = []
    for answer in answers:
        independent = verifier.independent_of(answer.gate_verifier, answer.writer)
        for sentence in answer.sentences:
            try:
                verdict = await verifier.verifier.verify(sentence.text, sentence.evidence)
            except NOT_JUDGED as exc:
                log.warning(
                    "audit: %s could not judge a sentence: %s",
                    verifier.name,
                    exc,
                    extra={"trace_id": sentence.trace_id, "position": sentence.position},
                )
                audited.append(SentenceAudit(sentence, None, None, (f"not judged: {exc}",), independent))
                continue
            except GONE as exc:
                reason = f"{verifier.name} failed: {exc}"
                audited.append(SentenceAudit(sentence, None, None, (f"not judged: {reason}",), independent))
                return audited, reason
            audited.append(SentenceAudit(sentence, verdict.passed, verdict.score, verdict.reasons, independent))
    return audited, None


async def recheck_all(
    rechecker: Rechecker | None, abstentions: Sequence[Abstention]
) -> tuple[list[AbstentionAudit], list[NotRechecked]]:
    """Each abstention's relaxed re-check, in order (none without a rechecker); and those whose
    re-check failed, with the reason (the others are still re-checked)."""
    if rechecker is None:
        return [], []
    out, failed = [], []
    for abstention in abstentions:
        try:
            found = await rechecker(abstention.text, abstention.scope)
        except CandorError as exc:
            reason = f"{type(exc).__name__}: {exc}"
            log.warning(
                "audit: an abstention could not be re-checked: %s",
                exc,
                extra={"trace_id": abstention.trace_id, "part": abstention.part, "error": type(exc).__name__},
            )
            failed.append(NotRechecked(abstention, reason))
            continue
        out.append(AbstentionAudit(abstention, found.label, found.score, found.as_json()))
    return out, failed


async def store_run(
    engine: AsyncEngine,
    run: Mapping[str, Any],
    sentences: Sequence[SentenceAudit],
    rechecked: Sequence[AbstentionAudit],
) -> int:
    """The run and its rows in one transaction: all of them or none."""
    try:
        async with engine.begin() as conn:
            run_id = await audit_store.insert_run(conn, run)
            await audit_store.insert_rows(conn, run_id, [s.row() for s in sentences], [a.row() for a in rechecked])
    except SQLAlchemyError as exc:
        raise StoreError(f"could not store the audit run: {exc}") from exc
    return run_id
