"""Retention: the personal parts of the operational record removed after a while (`candor purge`).

What a question leaves behind, and what a purge removes from records older than the cut-off:
- `traces`: the question as typed and rewritten, its parts, the asker id, the answer's text (it
  can quote the question: "No relevant information ... for: <part>"), the same fields inside the
  answer's JSON, and every question part quoted in gate details (premise, relevance, completeness
  ...). Kept: when, where (platform, conversation), route, gates and scores, cited sources,
  delivered sentences (document text), timings, model calls and cost, so the report's counts stay;
  `purged_at` says when.
- `feedback`: the voter id (replaced by an opaque per-vote id, so one vote stays one vote) and the
  comment. Kept: the rating.
- `platform_events` (the chat ledger), once answered, failed or deleted: the question, the asker,
  the job payload (text, user, conversation reference) and the answer text in its reply. Kept:
  the keys, the status and where the answer was posted (so a late vote still finds its trace).
- `audit_abstentions`, `human_labels`: the question part they name.
- `handoffs` (questions passed to a person): the asker id, where they waited and the reply they got.
  Kept: the reason, who replied and when, the curated answer it became (a curated answer is a
  document its author wrote, edited and removed with `candor answers`, not a record of the asker).

`forget_trace` does the same at once for one trace: a question deleted in Slack keeps no text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import StoreError
from rag.tracking.records import dumps

log = logging.getLogger("candor.retention")

REMOVED = "[removed]"
ANSWER_TEXT_FIELDS = ("question", "rewritten_question", "text")
ANSWER_LIST_FIELDS = ("parts", "unanswered_parts")
QUESTION_KEYS = frozenset({"part", "parts", "unknown", "unaddressed", "focus", "query", "queries", "question"})
"""Keys under which gate details quote the question or its words."""
BATCH = 500


@dataclass(frozen=True, slots=True)
class Purged:
    traces: int = 0
    votes: int = 0
    events: int = 0
    audit_rows: int = 0

    def __add__(self, other: Purged) -> Purged:
        return Purged(
            self.traces + other.traces,
            self.votes + other.votes,
            self.events + other.events,
            self.audit_rows + other.audit_rows,
        )


SELECT_OLD_TRACES = text(
    "SELECT id, parts, answer FROM traces WHERE created_at < :cutoff AND purged_at IS NULL "
    "ORDER BY created_at LIMIT :batch FOR UPDATE SKIP LOCKED"
)
SELECT_ONE_TRACE = text("SELECT id, parts, answer FROM traces WHERE id = CAST(:id AS uuid) FOR UPDATE")
UPDATE_TRACE = text(
    "UPDATE traces SET question = :removed, rewritten_question = NULL, parts = CAST(:parts AS jsonb), "
    "asker = NULL, answer_text = :removed, answer = CAST(:answer AS jsonb), purged_at = now() "
    "WHERE id = CAST(:id AS uuid)"
)
SELECT_GATE_DETAILS = text(
    "SELECT trace_id, attempt, position, details FROM gate_outcomes WHERE trace_id = ANY(CAST(:ids AS uuid[]))"
)
UPDATE_GATE = text(
    "UPDATE gate_outcomes SET details = CAST(:details AS jsonb) "
    "WHERE trace_id = CAST(:trace_id AS uuid) AND attempt = :attempt AND position = :position"
)
PURGE_VOTES = text(
    "UPDATE feedback SET user_id = 'purged-' || id, comment = NULL "
    "WHERE (trace_id = ANY(CAST(:ids AS uuid[])) OR created_at < :cutoff) "
    "AND (user_id IS NULL OR user_id NOT LIKE 'purged-%' OR comment IS NOT NULL)"
)
PURGE_AUDITS = (
    text(
        "UPDATE audit_abstentions SET part = '[removed ' || id || ']' "
        "WHERE trace_id = ANY(CAST(:ids AS uuid[])) AND part IS NOT NULL AND part NOT LIKE '[removed %'"
    ),
    text(
        "UPDATE human_labels SET part = '[removed ' || id || ']' "
        "WHERE trace_id = ANY(CAST(:ids AS uuid[])) AND part IS NOT NULL AND part NOT LIKE '[removed %'"
    ),
)
PURGE_EVENTS = text(
    "UPDATE platform_events SET question = NULL, asker = NULL, payload = '{}'::jsonb, "
    "reply = reply - 'answer_text', error = NULL "
    "WHERE status <> 'claimed' AND (created_at < :cutoff OR trace_id = ANY(CAST(:ids AS uuid[]))) "
    "AND (question IS NOT NULL OR asker IS NOT NULL OR payload <> '{}'::jsonb OR reply ? 'answer_text')"
)
PURGE_HANDOFFS = text(
    "UPDATE handoffs SET asker = 'purged-' || id, reply_to = '{}'::jsonb, reply_text = NULL "
    "WHERE trace_id = ANY(CAST(:ids AS uuid[])) AND asker NOT LIKE 'purged-%'"
)
NOTHING_BEFORE = datetime(1970, 1, 1)


async def purge_before(engine: AsyncEngine, cutoff: datetime) -> Purged:
    """Remove the personal parts of every record made before `cutoff` (see the module docstring)."""
    total = Purged()
    try:
        while True:
            async with engine.begin() as connection:
                rows = (await connection.execute(SELECT_OLD_TRACES, {"cutoff": cutoff, "batch": BATCH})).all()
                done = await _purge_traces(connection, rows, cutoff=cutoff if len(rows) < BATCH else NOTHING_BEFORE)
            total += done
            if len(rows) < BATCH:
                break
    except SQLAlchemyError as exc:
        raise StoreError(f"the purge stopped: {exc}") from exc
    log.info(
        "purged records older than %s",
        cutoff.isoformat(),
        extra={"traces": total.traces, "votes": total.votes, "events": total.events},
    )
    return total


async def forget_trace(engine: AsyncEngine, trace_id: str) -> bool:
    """Remove one trace's personal parts now (its question was deleted where it was asked)."""
    try:
        async with engine.begin() as connection:
            rows = (await connection.execute(SELECT_ONE_TRACE, {"id": trace_id})).all()
            await _purge_traces(connection, rows, cutoff=NOTHING_BEFORE)
    except SQLAlchemyError as exc:
        raise StoreError(f"could not remove the text of trace {trace_id}: {exc}") from exc
    return bool(rows)


async def _purge_traces(connection: AsyncConnection, rows: Sequence[Any], *, cutoff: datetime) -> Purged:
    """The traces in `rows`, their gates, votes, audit rows and ledger rows; and, with a real `cutoff`,
    every vote and ledger row older than it (those of traces purged earlier, or of no trace)."""
    ids = [str(row.id) for row in rows]
    for row in rows:
        parts = [REMOVED] * len(row.parts) if isinstance(row.parts, list) else None
        params = {
            "id": str(row.id),
            "removed": REMOVED,
            "parts": dumps(parts),
            "answer": dumps(_scrub_answer(row.answer)),
        }
        await connection.execute(UPDATE_TRACE, params)
    if ids:
        gates = (await connection.execute(SELECT_GATE_DETAILS, {"ids": ids})).all()
        changed = [
            {
                "trace_id": str(g.trace_id),
                "attempt": g.attempt,
                "position": g.position,
                "details": dumps(_scrub(g.details)),
            }
            for g in gates
            if g.details and _scrub(g.details) != g.details
        ]
        if changed:
            await connection.execute(UPDATE_GATE, changed)
    audits = 0
    for statement in (*PURGE_AUDITS, PURGE_HANDOFFS):
        audits += (await connection.execute(statement, {"ids": ids})).rowcount or 0
    votes = (await connection.execute(PURGE_VOTES, {"ids": ids, "cutoff": cutoff})).rowcount or 0
    events = (await connection.execute(PURGE_EVENTS, {"ids": ids, "cutoff": cutoff})).rowcount or 0
    return Purged(len(ids), votes, events, audits)


def _scrub_answer(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    cleaned = _scrub(answer)  # its gates' details quote the question as the gate table's do
    for key in ANSWER_TEXT_FIELDS:
        if cleaned.get(key) is not None:
            cleaned[key] = REMOVED
    for key in ANSWER_LIST_FIELDS:
        if isinstance(cleaned.get(key), list):
            cleaned[key] = [REMOVED] * len(cleaned[key])
    return cleaned


def _scrub(value: Any) -> Any:
    """Gate details with every quoted question part replaced (lists keep their length)."""
    if isinstance(value, dict):
        return {key: _removed(item) if key in QUESTION_KEYS else _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


def _removed(value: Any) -> Any:
    if isinstance(value, str):
        return REMOVED
    if isinstance(value, list):
        return [_removed(item) for item in value]
    if isinstance(value, dict):
        return {key: _removed(item) for key, item in value.items()}
    return value
