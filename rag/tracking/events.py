"""`EventLedger`: each chat-platform question answered exactly once by one of several replicas (migration 0005).

Slack (and later Teams) may announce one question several times: a retry when the ack was late,
an `app_mention` and a `message` for the same post, a redelivery to another replica. The adapter
names the question with a key of its own (for Slack "team/channel/ts") and claims it here before
answering; only one claim wins, whichever replica and whichever event it comes from.

An edited question is a revision of the same row (`revise`), never a row of its own: the row is the
one place every replica looks, and each step of an edit is one UPDATE of it, which Postgres
serialises with the completion of the answer in flight. Edited after its answer, the question is
claimed again at once; edited while its answer is being written, the edit waits in the row and
`complete` hands it to the owner that finished, so that one answer at a time is written for a
question, the newest text wins, and an edit is neither lost nor answered twice, whichever replica
the edit reached and whichever replica answers. The ledger keeps its own keys in the stored payload
(`revision`, `revised_at`, and `pending`, the waiting edit) and hands adapters their payload without them.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import ConfigError, StoreError
from rag.model.types import clean_text
from rag.store.database import ride_through
from rag.tracking.pseudonyms import Pseudonym, plain
from rag.tracking.records import dumps, parse_trace_id, plain_dict

log = logging.getLogger("candor.events")

DATABASE_ERRORS = (SQLAlchemyError, OSError)

CLAIM_COLUMNS = (
    "platform, key, owner, attempt, payload, lease_until, question, team, conversation, thread, asker, reply"
)
LEDGER_KEYS = frozenset({"revision", "revised_at", "pending"})
"""The ledger's own keys in a stored payload (see the module docstring)."""
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

# An edit (see the module docstring). Answered (or failed): claimed again for this owner, the edit its
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


@dataclass(frozen=True, slots=True)
class Claim:
    """This replica's right to answer one question until `lease_until` (the database's clock)."""

    platform: str
    key: str
    owner: str
    attempt: int
    payload: dict[str, Any]
    lease_until: datetime
    taken_over: bool
    """True when this owner took the question from one whose lease ran out."""
    given_up: bool = False
    """True when the question was given up (`max_attempts` owners stopped before answering it): it
    is failed in the ledger, and this owner is the one (of all replicas) to tell the asker."""
    question: str | None = None
    team: str | None = None
    conversation: str | None = None
    thread: str | None = None
    asker: str | None = None
    revision: str | None = None
    """An edited question (`EventLedger.revise`): the edit's revision; its answer replaces the one
    `reply` says was given. None: the question as first asked."""
    reply: Mapping[str, Any] = field(default_factory=dict)
    """Where the answer to the question went so far (what `complete` recorded), e.g. {"ts": [...]}."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A completed claim. `revision`: an edit of the question that arrived while it was answered,
    still held by the same owner (same attempt, lease renewed), to be answered now, replacing the
    answer just recorded; None when the question is done."""

    revision: Claim | None = None


@dataclass(frozen=True, slots=True)
class ThreadTurn:
    """One question asked in a thread, with the answer text when it was recorded."""

    key: str
    asker: str | None
    question: str | None
    answer: str | None
    status: str
    created_at: datetime
    reply: Mapping[str, Any] = field(default_factory=dict)
    """Where the answer went, as `complete` recorded it (Slack: {"ts": [...]}, the answer's messages)."""


class EventLedger:
    """Who answers which platform question, in Postgres, shared by every replica.

    A question (`platform`, `key`) moves through these states:

        claimed ──complete()──> answered
           │    ──complete(failed=True)──> failed
           └─── mark_deleted() from any state ──> deleted
        answered, failed ──revise()──> claimed (the edited text)
        claimed ──revise()──> claimed, the edit waiting; complete() hands it to the owner

    `claim` wins a question for this ledger's `owner` for `lease_seconds`. While the lease runs,
    every other claim of the same key, from any replica, gets None, and the event ids it carried
    are recorded. The owner keeps the lease alive with `renew` while it works (every third of the
    lease is a safe rhythm) and ends with `complete`. If the owner dies, its lease runs out and the
    next `claim` of that key, or any replica's `expired` poll, takes the question over with the
    attempt counted up, up to `max_attempts`: a question that many owners took and never finished
    is marked failed by the next `expired` poll. A claim is held by (owner, attempt): once taken over, the old holder's
    `renew`, `complete` and `release` return False or do nothing, so it learns that its answer
    may be a duplicate. `release` hands unfinished work over at once on a graceful shutdown.

    Leases are compared with the database's `now()`, never this process's clock.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        owner: str | None = None,
        lease_seconds: float = 60.0,
        max_attempts: int = 5,
        pseudonym: Pseudonym = plain,
        on_takeover: Callable[[str], None] | None = None,
        retry_seconds: float = 0.0,
    ) -> None:
        """`pseudonym`: what the `asker` column stores for an asker id (CANDOR_STORE_ASKERS);
        `on_takeover(platform)`: told of each question taken over from another replica (metrics);
        `retry_seconds`: how long a statement waits for a database that went away
        (CANDOR_DB_RETRY_SECONDS) before it fails with `StoreError`."""
        self.pseudonym = pseudonym
        self.retry_seconds = retry_seconds
        self.on_takeover = on_takeover
        if not (lease_seconds > 0 and math.isfinite(lease_seconds)):
            raise ConfigError(f"lease_seconds must be a positive number of seconds, got {lease_seconds!r}")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts!r}")
        self.max_attempts = max_attempts
        if owner is not None and not owner.strip():
            raise ConfigError("an event ledger owner must not be empty")
        self.engine = engine
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_seconds = float(lease_seconds)

    async def claim(
        self,
        platform: str,
        key: str,
        payload: Mapping[str, Any],
        *,
        event_id: str | None = None,
        question: str | None = None,
        team: str | None = None,
        conversation: str | None = None,
        thread: str | None = None,
        asker: str | None = None,
        hold: bool = True,
    ) -> Claim | None:
        """Win the question for this owner, or None when it is answered, failed, deleted or held by a live lease.

        `hold=False` records the question with a lease that has already run out: the next `expired`
        poll of any replica takes it (a process that only acknowledges events hands them over so).
        """
        params = {
            "platform": platform,
            "key": key,
            "max_attempts": self.max_attempts,
            "event_id": event_id,
            "team": team,
            "conversation": conversation,
            "thread": thread,
            "asker": self.pseudonym(asker),
            "question": None if question is None else clean_text(question),  # a NUL would lose the event
            "payload": dumps(dict(payload)),
            "owner": self.owner,
            "lease": self.lease_seconds if hold else 0.0,
            "token": str(uuid.uuid4()),
        }
        rows = await self._execute(f"claim {platform} event {key}", CLAIM, params)
        if not rows or not rows[0]["won"]:
            return None
        claim = _claim(rows[0], taken_over=rows[0]["attempt"] > 1)
        if claim.taken_over and self.on_takeover is not None:
            self.on_takeover(platform)
        return claim

    async def renew(self, claim: Claim) -> bool:
        """Extend the lease from now; False when the claim is no longer this owner's (taken over, or done)."""
        params = {**_held(claim), "lease": self.lease_seconds}
        return bool(await self._execute(f"renew the claim on {claim.platform} event {claim.key}", RENEW, params))

    async def complete(
        self,
        claim: Claim,
        *,
        trace_id: str | None = None,
        reply: Mapping[str, Any] | None = None,
        failed: bool = False,
        error: str | None = None,
    ) -> Completion | None:
        """Mark the question answered (or failed) with where the reply went; None when the claim was lost.

        None means another replica took the question over (or it was deleted) meanwhile: an answer
        already posted may be a duplicate. When the question was edited meanwhile (`revise`), the
        reply and trace are recorded but the question is not done: `Completion.revision` is the edit,
        for this owner to answer now. An owner that does not (it stopped) leaves a lease that runs
        out, and another replica answers the edit.
        """
        params = {
            **_held(claim),
            "status": "failed" if failed else "answered",
            "trace_id": _trace_id(trace_id),
            "reply": dumps(dict(reply or {})),
            "error": error,
            "lease": self.lease_seconds,
        }
        rows = await self._execute(f"complete {claim.platform} event {claim.key}", COMPLETE, params)
        if not rows:
            return None
        if rows[0]["status"] != "claimed":
            return Completion()
        return Completion(_claim(rows[0], taken_over=False))

    async def revise(
        self,
        platform: str,
        key: str,
        payload: Mapping[str, Any],
        *,
        question: str,
        revision: str,
        event_id: str | None = None,
        hold: bool = True,
    ) -> Claim | None:
        """An edit of the question `key`: its new `question` text and `payload`, for this owner to
        answer (the Claim: its answer replaces the one in `Claim.reply`), or None when there is nothing
        to do now.

        `revision` orders the edits of one question (text that sorts as they were made, e.g. Slack's
        `edited.ts`); an edit older than the newest known, or one whose text is the newest text
        already, is ignored (a redelivery, a retry, a change that is not to the text). A question
        being answered (by any replica) is not claimed again: the edit waits in its row, replacing an
        older waiting edit, and `complete` hands it to the owner once the answer in flight is
        recorded. Unknown and deleted questions are ignored. `hold=False`: as for `claim`.

        Why the edit waits rather than the answer in flight being discarded: no replica can stop
        another's answer, nor take back a message posted a moment before the edit came; "finish, then
        replace" is the one outcome the shared row alone guarantees, with one answer at a time
        written for a question (and none for an edit whose question is deleted meanwhile).
        """
        params = {
            "platform": platform,
            "key": key,
            "payload": dumps(dict(payload)),
            "question": clean_text(question),
            "revision": revision,
            "event_id": event_id,
            "owner": self.owner,
            "lease": self.lease_seconds if hold else 0.0,
            "token": str(uuid.uuid4()),
        }
        rows = await self._execute(f"revise {platform} event {key}", REVISE, params)
        if not rows or not rows[0]["won"]:
            return None
        return _claim(rows[0], taken_over=False)

    async def release(self, claim: Claim) -> None:
        """End the lease now, unanswered, so another replica takes the question over at once."""
        await self._execute(f"release {claim.platform} event {claim.key}", RELEASE, _held(claim))

    async def expired(self, platform: str, *, limit: int = 10) -> list[Claim]:
        """Take over up to `limit` questions of `platform` whose owner's lease ran out.

        Questions that `max_attempts` owners took and never finished are failed instead, and come
        back with `given_up` set: one UPDATE marks each, so exactly one replica gets it and tells
        the asker (a question is never dropped without a word)."""
        if limit < 1:
            return []
        exhausted = {"platform": platform, "max_attempts": self.max_attempts}
        given_up = []
        for row in await self._execute(f"give up exhausted {platform} events", GIVE_UP_EXHAUSTED, exhausted):
            log.error("gave up a question after %d attempts", row["attempt"], extra={"key": row["key"]})
            given_up.append(_claim(row, taken_over=True, given_up=True))
        params = {**exhausted, "limit": limit, "owner": self.owner, "lease": self.lease_seconds}
        rows = await self._execute(f"take over expired {platform} events", TAKE_OVER_EXPIRED, params)
        if self.on_takeover is not None:
            for row in rows:
                self.on_takeover(row["platform"])
        return given_up + [_claim(row, taken_over=True) for row in rows]

    async def get(self, platform: str, key: str) -> dict[str, Any] | None:
        """The ledger row as JSON data (timestamps in ISO form), or None when the key is unknown."""
        rows = await self._execute(f"read {platform} event {key}", SELECT_ROW, {"platform": platform, "key": key})
        return plain_dict(rows[0]) if rows else None

    async def by_reply(self, platform: str, fragment: Mapping[str, Any]) -> dict[str, Any] | None:
        """The latest row whose reply contains `fragment` (jsonb containment, indexed), e.g. the
        question a Teams message id answered: `{"activity_ids": ["1:abc"]}`."""
        params = {"platform": platform, "reply": dumps(dict(fragment))}
        rows = await self._execute(f"find the {platform} event of a reply", SELECT_BY_REPLY, params)
        return plain_dict(rows[0]) if rows else None

    async def update_reply(
        self,
        platform: str,
        key: str,
        reply: Mapping[str, Any],
        *,
        trace_id: str | None = None,
        question: str | None = None,
    ) -> bool:
        """Merge `reply` into the stored one (an edited question answered again); False when unknown or deleted."""
        params = {
            "platform": platform,
            "key": key,
            "reply": dumps(dict(reply)),
            "trace_id": _trace_id(trace_id),
            "question": None if question is None else clean_text(question),
        }
        return bool(await self._execute(f"update the reply of {platform} event {key}", UPDATE_REPLY, params))

    async def mark_deleted(self, platform: str, key: str) -> dict[str, Any] | None:
        """Mark the question and its edits deleted, their text removed; the question's row (its
        `reply` says which answer to delete) with `trace_ids`, the traces of the question and its
        edits (for their text to go too), or None when the question is unknown."""
        params = {"platform": platform, "key": key}
        rows = await self._execute(f"mark {platform} event {key} deleted", MARK_DELETED, params)
        original = next((row for row in rows if row["key"] == key), None)
        if original is None:
            return None
        found = plain_dict(original)
        traces = {str(row["trace_id"]) for row in rows if row["trace_id"] is not None}
        for row in rows:
            traces.update(str(t) for t in (row["reply"] or {}).get("earlier_traces") or ())
        found["trace_ids"] = sorted(traces)
        return found

    async def thread_turns(
        self, platform: str, team: str | None, conversation: str, thread: str, *, limit: int = 20
    ) -> list[ThreadTurn]:
        """The latest `limit` questions of a thread (claimed, answered or failed), oldest first."""
        if limit < 1:
            return []
        statement = THREAD_TURNS_NO_TEAM if team is None else THREAD_TURNS
        params = {"platform": platform, "team": team, "conversation": conversation, "thread": thread, "limit": limit}
        rows = await self._execute(f"read {platform} thread {conversation}/{thread}", statement, params)
        return [
            ThreadTurn(
                key=row["key"],
                asker=row["asker"],
                question=row["question"],
                answer=row["answer"],
                status=row["status"],
                created_at=row["created_at"],
                reply=row["reply"] or {},
            )
            for row in reversed(rows)
        ]

    async def _execute(self, what: str, statement: TextClause, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run one statement in its own transaction, its rows as dicts, riding through a database
        restart for up to `retry_seconds`; database failures become `StoreError`.

        A statement that committed but whose reply was lost runs again: a claim then finds the
        question already held (by this owner: the `expired` poll takes it over once its lease ends), a
        completion finds it no longer held (logged as superseded); both are safe."""

        async def once() -> list[dict[str, Any]]:
            async with self.engine.connect() as conn:
                # one statement is atomic on its own: autocommit saves the BEGIN and COMMIT round
                # trips, which an acknowledgement Slack is waiting for would otherwise pay
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                return [dict(row._mapping) for row in await conn.execute(statement, params)]

        try:
            return await ride_through(once, within=self.retry_seconds, what=what)
        except DATABASE_ERRORS as exc:
            raise StoreError(f"could not {what}: {_describe(exc)}") from exc


def _claim(row: Mapping[str, Any], *, taken_over: bool, given_up: bool = False) -> Claim:
    stored = row["payload"] or {}
    return Claim(
        platform=row["platform"],
        key=row["key"],
        owner=row["owner"],
        attempt=row["attempt"],
        payload={k: v for k, v in stored.items() if k not in LEDGER_KEYS},
        lease_until=row["lease_until"],
        taken_over=taken_over,
        given_up=given_up,
        question=row["question"],
        team=row["team"],
        conversation=row["conversation"],
        thread=row["thread"],
        asker=row["asker"],
        revision=stored.get("revision"),
        reply=dict(row["reply"] or {}),
    )


def _held(claim: Claim) -> dict[str, Any]:
    return {"platform": claim.platform, "key": claim.key, "owner": claim.owner, "attempt": claim.attempt}


def _trace_id(value: str | None) -> str | None:
    if value is None:
        return None
    canonical = parse_trace_id(value)
    if canonical is None:
        raise StoreError(f"trace id {value!r} is not a UUID")
    return canonical


def _describe(exc: BaseException) -> str:
    """The driver's message when there is one: SQLAlchemy's own text repeats the SQL and its parameters."""
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {cause}".strip()
