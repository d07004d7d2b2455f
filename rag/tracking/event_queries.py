"""The SQL of the event ledger (`rag.tracking.events`), against the `platform_events` table of
migration 0005, and `run`, which runs one statement of it.

Each statement is one step of a question's life in the ledger, run on its own in autocommit:
claim, take over, give up, renew, release, complete, revise, read, update the reply, delete.
A claim is held by (owner, attempt) (`HELD`); leases are compared with the database's `now()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import StoreError
from rag.store.database import ride_through

DATABASE_ERRORS = (SQLAlchemyError, OSError)

CLAIM_COLUMNS = (
    "platform, key, owner, attempt, payload, lease_until, question, team, conversation, thread, asker, reply"
)
ROW_COLUMNS = (
    "id, platform, key, event_ids, team, conversation, thread, asker, question, payload, status, owner, "
    "attempt, lease_until, created_at, updated_at, trace_id, reply, error"
)
LEASE = "now() + make_interval(secs => :lease)"
LAPSED = "(e.status = 'claimed' AND e.lease_until < now() AND e.attempt < :max_attempts)"

# One statement decides: a new key is inserted as claimed; an existing one is taken over only when
# its lease ran out; every other conflict just records the event id (no write at all when it is
# already recorded). `claim_token` changes only when this statement inserts or takes over the row,
# so comparing it with this call's token says whether this call won.
CLAIM = text(
    "INSERT INTO platform_events AS e (platform, key, event_ids, team, conversation, thread, asker, question, "
    "payload, status, owner, lease_until, claim_token) "
    "VALUES (:platform, :key, array_remove(ARRAY[CAST(:event_id AS text)], NULL), :team, :conversation, "
    f":thread, :asker, :question, CAST(:payload AS jsonb), 'claimed', :owner, {LEASE}, CAST(:token AS uuid)) "
    "ON CONFLICT (platform, key) DO UPDATE SET "
    "event_ids = CASE WHEN EXCLUDED.event_ids <@ e.event_ids THEN e.event_ids "
    "ELSE e.event_ids || EXCLUDED.event_ids END, "
    f"owner = CASE WHEN {LAPSED} THEN EXCLUDED.owner ELSE e.owner END, "
    f"attempt = CASE WHEN {LAPSED} THEN e.attempt + 1 ELSE e.attempt END, "
    f"lease_until = CASE WHEN {LAPSED} THEN EXCLUDED.lease_until ELSE e.lease_until END, "
    f"claim_token = CASE WHEN {LAPSED} THEN EXCLUDED.claim_token ELSE e.claim_token END, "
    "updated_at = now() "
    f"WHERE {LAPSED} OR NOT EXCLUDED.event_ids <@ e.event_ids "
    f"RETURNING e.claim_token = CAST(:token AS uuid) AS won, {CLAIM_COLUMNS}"
)

# Rows another replica is taking over right now are locked, and skipped rather than waited for.
TAKE_OVER_EXPIRED = text(
    "WITH due AS MATERIALIZED (SELECT id FROM platform_events "
    "WHERE platform = :platform AND status = 'claimed' AND lease_until < now() AND attempt < :max_attempts "
    "ORDER BY lease_until, id LIMIT :limit FOR UPDATE SKIP LOCKED) "
    f"UPDATE platform_events AS e SET owner = :owner, attempt = e.attempt + 1, lease_until = {LEASE}, "
    "claim_token = gen_random_uuid(), updated_at = now() "
    f"FROM due WHERE e.id = due.id RETURNING {CLAIM_COLUMNS}"
)

# A question every one of whose `max_attempts` owners stopped before answering it (a crash it
# causes, say) is given up rather than passed round the replicas for ever.
GIVE_UP_EXHAUSTED = text(
    "UPDATE platform_events SET status = 'failed', updated_at = now(), error = "
    "'given up after ' || attempt || ' attempts: every replica that took it stopped before answering' "
    "WHERE platform = :platform AND status = 'claimed' AND lease_until < now() AND attempt >= :max_attempts "
    f"RETURNING {CLAIM_COLUMNS}"
)

HELD = "platform = :platform AND key = :key AND owner = :owner AND attempt = :attempt AND status = 'claimed'"

RENEW = text(f"UPDATE platform_events SET lease_until = {LEASE}, updated_at = now() WHERE {HELD} RETURNING id")

RELEASE = text(f"UPDATE platform_events SET lease_until = now(), updated_at = now() WHERE {HELD} RETURNING id")

# A waiting edit whose text differs from the one just answered: the owner answers it next, under the
# same hold (owner and attempt), so the lease its worker renews stays the one that counts.
HANDS_ON = "(payload ? 'pending' AND payload #>> '{pending,question}' IS DISTINCT FROM question)"
# The answer this completion replaces (an edit answered again): a deletion must remove its text too.
EARLIER_TRACE = (
    "CASE WHEN trace_id IS NOT NULL AND CAST(:trace_id AS uuid) IS NOT NULL AND CAST(:trace_id AS uuid) <> trace_id "
    "THEN jsonb_build_object('earlier_traces', COALESCE(reply -> 'earlier_traces', '[]'::jsonb) "
    "|| to_jsonb(CAST(trace_id AS text))) ELSE '{}'::jsonb END"
)
COMPLETE = text(
    f"UPDATE platform_events SET status = CASE WHEN {HANDS_ON} THEN 'claimed' ELSE :status END, "
    f"reply = reply || CAST(:reply AS jsonb) || {EARLIER_TRACE}, "
    "trace_id = COALESCE(CAST(:trace_id AS uuid), trace_id), error = :error, "
    f"payload = CASE WHEN {HANDS_ON} THEN payload #> '{{pending,payload}}' ELSE payload - 'pending' END, "
    f"question = CASE WHEN {HANDS_ON} THEN payload #>> '{{pending,question}}' ELSE question END, "
    f"lease_until = CASE WHEN {HANDS_ON} THEN {LEASE} ELSE lease_until END, "
    f"updated_at = now() WHERE {HELD} RETURNING status, {CLAIM_COLUMNS}"
)

# An edit (see `rag.tracking.events`). Answered (or failed): claimed again for this owner, the edit its
# payload. Being answered: the edit waits in `pending`, the newest there. Ignored: an unknown or deleted
# question, an edit older than the newest known, and one that leaves the newest text as it was.
REVISED = "CAST(:payload AS jsonb) || jsonb_build_object('revision', CAST(:revision AS text), 'revised_at', now())"
BUSY = "e.status = 'claimed'"
REVISE = text(
    "UPDATE platform_events AS e SET status = 'claimed', "
    f"payload = CASE WHEN {BUSY} THEN e.payload || jsonb_build_object('pending', "
    f"jsonb_build_object('payload', {REVISED}, 'question', CAST(:question AS text))) ELSE {REVISED} END, "
    f"question = CASE WHEN {BUSY} THEN e.question ELSE :question END, "
    f"owner = CASE WHEN {BUSY} THEN e.owner ELSE :owner END, "
    f"attempt = CASE WHEN {BUSY} THEN e.attempt ELSE 1 END, "
    f"lease_until = CASE WHEN {BUSY} THEN e.lease_until ELSE {LEASE} END, "
    f"claim_token = CASE WHEN {BUSY} THEN e.claim_token ELSE CAST(:token AS uuid) END, "
    "event_ids = e.event_ids || array_remove(ARRAY[CAST(:event_id AS text)], NULL), updated_at = now() "
    "WHERE e.platform = :platform AND e.key = :key AND e.status IN ('claimed', 'answered', 'failed') "
    "AND CAST(:revision AS text) >= COALESCE(e.payload #>> '{pending,payload,revision}', e.payload ->> 'revision', '') "
    "AND CAST(:question AS text) IS DISTINCT FROM COALESCE(e.payload #>> '{pending,question}', e.question) "
    f"RETURNING e.claim_token = CAST(:token AS uuid) AS won, {CLAIM_COLUMNS}"
)

SELECT_ROW = text(f"SELECT {ROW_COLUMNS} FROM platform_events WHERE platform = :platform AND key = :key")
SELECT_BY_REPLY = text(
    f"SELECT {ROW_COLUMNS} FROM platform_events WHERE platform = :platform AND reply @> CAST(:reply AS jsonb) "
    "ORDER BY updated_at DESC LIMIT 1"
)

# The trace an edit replaces is remembered in `earlier_traces`: a deletion removes its text too.
UPDATE_REPLY = text(
    "UPDATE platform_events SET reply = reply || CAST(:reply AS jsonb) || CASE "
    "WHEN trace_id IS NOT NULL AND CAST(:trace_id AS uuid) IS DISTINCT FROM trace_id "
    "THEN jsonb_build_object('earlier_traces', COALESCE(reply -> 'earlier_traces', '[]'::jsonb) "
    "|| to_jsonb(CAST(trace_id AS text))) ELSE '{}'::jsonb END, "
    "trace_id = COALESCE(CAST(:trace_id AS uuid), trace_id), question = COALESCE(:question, question), "
    "updated_at = now() WHERE platform = :platform AND key = :key AND status <> 'deleted' RETURNING id"
)

# The question and its edits: deleted where it was asked, so its text goes too (the reply's ts stay,
# for the answers to be deleted; the payload is not needed once nobody will answer it).
MARK_DELETED = text(
    "UPDATE platform_events SET status = 'deleted', updated_at = now(), question = NULL, asker = NULL, "
    "payload = '{}'::jsonb, reply = reply - 'answer_text' "
    "WHERE platform = :platform AND (key = :key OR starts_with(key, :key || '/edit/')) "
    f"RETURNING {ROW_COLUMNS}"
)

_TURNS = (
    "SELECT key, asker, question, reply ->> 'answer_text' AS answer, reply, status, created_at FROM platform_events "
    "WHERE platform = :platform AND {team} AND conversation = :conversation AND thread = :thread "
    "AND status IN ('claimed', 'answered', 'failed') ORDER BY created_at DESC, id DESC LIMIT :limit"
)
# Two texts rather than `IS NOT DISTINCT FROM`, which the thread index cannot serve.
THREAD_TURNS = text(_TURNS.format(team="team = :team"))
THREAD_TURNS_NO_TEAM = text(_TURNS.format(team="team IS NULL"))


async def run(
    engine: AsyncEngine, what: str, statement: TextClause, params: Mapping[str, Any], *, within: float
) -> list[dict[str, Any]]:
    """Run one statement in its own transaction, its rows as dicts, riding through a database
    restart for up to `within` seconds; database failures become `StoreError` ("could not `what`").

    A statement that committed but whose reply was lost runs again: a claim then finds the
    question already held (by this owner: the `expired` poll takes it over once its lease ends), a
    completion finds it no longer held (logged as superseded); both are safe."""

    async def once() -> list[dict[str, Any]]:
        async with engine.connect() as conn:
            # one statement is atomic on its own: autocommit saves the BEGIN and COMMIT round
            # trips, which an acknowledgement Slack is waiting for would otherwise pay
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            return [dict(row._mapping) for row in await conn.execute(statement, params)]

    try:
        return await ride_through(once, within=within, what=what)
    except DATABASE_ERRORS as exc:
        raise StoreError(f"could not {what}: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    """The driver's message when there is one: SQLAlchemy's own text repeats the SQL and its parameters."""
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {cause}".strip()
