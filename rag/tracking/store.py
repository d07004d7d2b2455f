"""`TraceStore`: every answer's trace, gate outcomes, cited sources, dropped sentences and model calls
(with the answer's token and cost totals); feedback; eval runs.

Recording never costs the user an answer: when the database cannot take a trace or a vote, the
record goes to the spool directory (one JSON file each) with an ERROR log line, and
`replay_spool` writes it later, marked `recorded_late` (`candor serve` replays every
CANDOR_SPOOL_REPLAY_SECONDS while it runs: `replay_while_serving`). A vote on an answer whose trace
is itself still spooled is spooled too, and replays after it. Only when the spool cannot be
written either (a full disk, its size cap) does `record` raise `TrackingError`, for the caller to
report while it still delivers.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Row
from sqlalchemy.exc import DataError, IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import StoreError, TrackingError, UnknownTrace
from rag.model.answers import Answer, Feedback, Question
from rag.store.database import ride_through
from rag.tracking import queries
from rag.tracking.pseudonyms import Pseudonym, plain
from rag.tracking.records import dumps, feedback_record, load_record, parse_trace_id, plain_dict, trace_record
from rag.tracking.spool import Spool

log = logging.getLogger("candor.tracking")

DATABASE_ERRORS = (SQLAlchemyError, OSError, StoreError)
TRACE_JSONB = ("parts", "scope", "answer", "config", "models", "timings")
NOT_RECORDED = {"prompt_tokens": None, "completion_tokens": None, "cost": None}
FOREIGN_KEY_VIOLATION = "23503"
DATATYPE_MISMATCH = "42804"


class TraceStore:
    """The operational record in Postgres (migration 0002), with a spool for when Postgres is away."""

    def __init__(
        self,
        engine: AsyncEngine,
        spool_dir: Path,
        *,
        spool_max_bytes: int | None = None,
        pseudonym: Pseudonym = plain,
        retry_seconds: float = 0.0,
    ) -> None:
        """`pseudonym`: what is stored for an asker or voter id (CANDOR_STORE_ASKERS); `retry_seconds`:
        how long a trace or vote waits for a database that went away before it is spooled
        (CANDOR_DB_RETRY_SECONDS). Waiting keeps a restart from spooling: a spooled trace is
        written by its own replica's replay, and a vote on it sent to another replica meanwhile
        finds no trace."""
        self.pseudonym = pseudonym
        self.retry_seconds = retry_seconds
        self.engine = engine
        self.spool_dir = spool_dir
        self._spool = Spool(spool_dir, max_bytes=spool_max_bytes)

    # --- writing -------------------------------------------------------------------------

    async def record(
        self, question: Question, answer: Answer, *, config: Mapping[str, Any], models: Mapping[str, str]
    ) -> bool:
        """Write the trace with all its parts in one transaction; False when it was spooled instead."""
        question = replace(question, asker=self.pseudonym(question.asker))
        record = trace_record(question, answer, config=config, models=models, now=_now())
        trace_id = record["trace"]["id"]

        async def write() -> None:
            async with self.engine.begin() as conn:
                await _write_trace(conn, record, recorded_late=False)

        try:
            await ride_through(write, within=self.retry_seconds, what=f"trace {trace_id}")
        except DATABASE_ERRORS as exc:
            await self._spool_record(f"trace-{trace_id}.json", record, exc, trace_id=trace_id, what="trace")
            return False
        return True

    async def record_feedback(self, feedback: Feedback) -> None:
        """Store a vote, replacing the same user's earlier vote on that trace (spooled if the database is away)."""
        trace_id = parse_trace_id(feedback.trace_id)
        if trace_id is None:
            raise UnknownTrace(f"no trace {feedback.trace_id!r}: not a trace id")
        voter = self.pseudonym(feedback.user)
        record = feedback_record(replace(feedback, user=voter), trace_id, now=_now())
        name = f"feedback-{uuid.uuid4().hex}.json"
        try:

            async def write() -> None:
                if feedback.askers_only:
                    await self._check_voter_asked(trace_id, voter)
                await self._write_feedback(record)

            await ride_through(write, within=self.retry_seconds, what=f"a vote on trace {trace_id}")
        except UnknownTrace:
            if not await asyncio.to_thread(self._spool.holds, f"trace-{trace_id}.json"):
                raise
            # the answer was given while the database was away: its vote waits with it
            await self._spool_record(name, record, None, trace_id=trace_id, what="feedback")
        except DATABASE_ERRORS as exc:
            await self._spool_record(name, record, exc, trace_id=trace_id, what="feedback")

    async def _check_voter_asked(self, trace_id: str, voter: str | None) -> None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(queries.SELECT_TRACE_ASKER, {"id": trace_id})).first()
        if row is not None and (voter is None or row.asker != voter):
            raise UnknownTrace(f"trace {trace_id} was not asked by this voter")

    async def record_eval_run(
        self,
        *,
        golden: str,
        knowledge_base: str | None,
        config: Mapping[str, Any],
        summary: Mapping[str, Any],
        per_question: Sequence[Mapping[str, Any]],
    ) -> int:
        """Store one `candor eval` run; returns its id."""
        params = {
            "golden": golden,
            "knowledge_base": knowledge_base,
            "config": dumps(dict(config)),
            "summary": dumps(dict(summary)),
            "per_question": dumps([dict(item) for item in per_question]),
        }
        try:
            async with self.engine.begin() as conn:
                row = (await conn.execute(queries.INSERT_EVAL_RUN, params)).one()
        except DATABASE_ERRORS as exc:
            raise TrackingError(f"could not store the eval run of {golden}: {_describe(exc)}") from exc
        return int(row[0])

    # --- the spool -----------------------------------------------------------------------

    async def replay_spool(self) -> int:
        """Write every spooled trace and vote; returns how many were written.

        Each file is deleted once its record is committed; a trace already in the database, or a
        vote older than the one the same user has stored since, is skipped (its file deleted, not
        counted). A file that is not a valid record, or that the
        database rejects as data, moves to `rejected/`. If the database is still unavailable the
        replay stops with `TrackingError`, leaving the remaining files where they are.
        """
        replayed = 0
        for path in await asyncio.to_thread(self._spool.pending):
            replayed += await self._replay(path)
        if replayed:
            log.info("replayed %d spooled tracking records", replayed, extra={"spool_dir": str(self.spool_dir)})
        return replayed

    def spool_stats(self) -> tuple[int, int]:
        """Files and bytes waiting in the spool (blocking: a scrape's quick look at one folder)."""
        return self._spool.stats()

    async def replay_while_serving(self, every: float) -> None:
        """Replay the spool every `every` seconds, for as long as the task runs (cancel to stop).

        A replica that spooled during an outage writes its records once the database is back,
        without waiting for a restart; a replay that finds the database still away tries again
        at the next turn (logged at WARNING, not every second)."""
        while True:
            await asyncio.sleep(every)
            if not await asyncio.to_thread(self._spool.pending):
                continue
            try:
                replayed = await self.replay_spool()
            except TrackingError as exc:
                log.warning("spooled records still wait for the database: %s", exc)
                continue
            if replayed:
                log.warning("wrote %d traces or votes spooled while the database was away", replayed)

    async def _replay(self, path: Path) -> int:
        content = await asyncio.to_thread(self._spool.read, path)
        if content is None:
            return 0
        try:
            written = await self._write_record(load_record(content))
        except (ValueError, KeyError, TypeError, UnknownTrace) as exc:
            await self._reject(path, exc)
            return 0
        except DATABASE_ERRORS as exc:
            if not _rejected_as_data(exc):
                raise TrackingError(
                    f"spool replay stopped at {path.name}, the database is unavailable: {_describe(exc)}"
                ) from exc
            await self._reject(path, exc)
            return 0
        await asyncio.to_thread(self._spool.remove, path)
        return int(written)

    async def _write_record(self, record: dict[str, Any]) -> bool:
        if record["kind"] == "feedback":
            return await self._write_feedback(record)
        async with self.engine.begin() as conn:
            return await _write_trace(conn, record, recorded_late=True)

    async def _write_feedback(self, record: dict[str, Any]) -> bool:
        """False when the same user's stored vote is newer than this one (it stays)."""
        vote = record["feedback"]
        try:
            async with self.engine.begin() as conn:
                return (await conn.execute(queries.UPSERT_FEEDBACK, vote)).first() is not None
        except IntegrityError as exc:
            if _sqlstate(exc) == FOREIGN_KEY_VIOLATION:
                raise UnknownTrace(f"no trace {vote['trace_id']}") from exc
            raise

    async def _spool_record(
        self, name: str, record: dict[str, Any], exc: BaseException | None, *, trace_id: str, what: str
    ) -> None:
        """`exc`: the database's error; None when the record waits for a spooled trace."""
        reason = "its trace is spooled" if exc is None else f"database unavailable ({_describe(exc)})"
        fields = {"trace_id": trace_id, "error": reason}
        try:
            path = await asyncio.to_thread(self._spool.write, name, record)
        except OSError as spool_exc:
            log.error(
                "%s %s lost: %s, and the spool could not be written (%s)",
                what,
                trace_id,
                fields["error"],
                spool_exc,
                extra={**fields, "spool_dir": str(self.spool_dir)},
            )
            raise TrackingError(
                f"{what} {trace_id} could not be stored ({fields['error']}) nor spooled ({spool_exc})"
            ) from spool_exc
        log.error("%s %s spooled to %s: %s", what, trace_id, path, reason, extra={**fields, "spool_file": str(path)})

    async def _reject(self, path: Path, exc: BaseException) -> None:
        try:
            target = await asyncio.to_thread(self._spool.reject, path)
        except OSError as move_exc:
            raise TrackingError(f"could not move the unreadable spool file {path} aside: {move_exc}") from move_exc
        log.error(
            "spool file %s rejected, moved to %s: %s",
            path.name,
            target,
            _describe(exc),
            extra={"spool_file": str(path), "rejected_to": str(target), "error": _describe(exc)},
        )

    # --- reading -------------------------------------------------------------------------

    async def trace(self, trace_id: str) -> dict[str, Any] | None:
        """One trace with its gates (by attempt, position), sources, dropped sentences, model calls (by
        position) and feedback, as JSON data; the answer's totals are the trace's `prompt_tokens`,
        `completion_tokens` and `cost`."""
        canonical = parse_trace_id(trace_id)
        if canonical is None:
            return None
        params = {"id": canonical}
        parts = {
            "gates": queries.SELECT_GATES,
            "sources": queries.SELECT_SOURCES,
            "dropped": queries.SELECT_DROPPED,
            "model_calls": queries.SELECT_MODEL_CALLS,
            "feedback": queries.SELECT_FEEDBACK,
        }
        try:
            async with self.engine.connect() as conn:
                row = (await conn.execute(queries.SELECT_TRACE, params)).first()
                if row is None:
                    return None
                found = _as_dict(row)
                for key, query in parts.items():
                    found[key] = [_as_dict(part) for part in await conn.execute(query, params)]
        except DATABASE_ERRORS as exc:
            raise StoreError(f"could not read trace {canonical}: {_describe(exc)}") from exc
        return plain_dict(found)

    async def eval_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest eval runs, newest first."""
        if limit < 1:
            return []
        try:
            async with self.engine.connect() as conn:
                rows = await conn.execute(queries.SELECT_EVAL_RUNS, {"limit": limit})
                runs = [_as_dict(row) for row in rows]
        except DATABASE_ERRORS as exc:
            raise StoreError(f"could not read eval runs: {_describe(exc)}") from exc
        return [plain_dict(run) for run in runs]


async def _write_trace(conn: AsyncConnection, record: dict[str, Any], *, recorded_late: bool) -> bool:
    """Insert one trace record; False when that trace id is already stored (nothing else is written)."""
    trace = record["trace"]
    # Spooled before model calls were traced: their totals stay unknown (NULL), not zero.
    params = {**NOT_RECORDED, **trace, "recorded_late": recorded_late}
    params.update({key: None if trace[key] is None else dumps(trace[key]) for key in TRACE_JSONB})
    if (await conn.execute(queries.INSERT_TRACE, params)).first() is None:
        return False
    trace_id = {"trace_id": trace["id"]}
    gates = [{**gate, **trace_id, "details": dumps(gate["details"])} for gate in record["gates"]]
    sources = [{**source, **trace_id} for source in record["sources"]]
    # Spooled before the stage was recorded: only the critic dropped sentences then.
    dropped = [{"stage": "critic", **sentence, **trace_id} for sentence in record["dropped"]]
    calls = [{**call, **trace_id} for call in record.get("model_calls", [])]
    for statement, rows in (
        (queries.INSERT_GATE, gates),
        (queries.INSERT_SOURCE, sources),
        (queries.INSERT_DROPPED, dropped),
        (queries.INSERT_MODEL_CALL, calls),
    ):
        if rows:
            await conn.execute(statement, rows)
    return True


def _as_dict(row: Row[Any]) -> dict[str, Any]:
    return dict(row._mapping)


def _now() -> datetime:
    return datetime.now(UTC)


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return state if isinstance(state, str) else None


def _rejected_as_data(exc: BaseException) -> bool:
    """The database refused the record itself (bad value, constraint): replaying again cannot help."""
    return isinstance(exc, DataError | IntegrityError) or _sqlstate(exc) == DATATYPE_MISMATCH


def _describe(exc: BaseException) -> str:
    """The driver's message when there is one: SQLAlchemy's own text repeats the SQL and its parameters."""
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {cause}".strip()
