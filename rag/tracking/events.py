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

The statements it runs are in `rag.tracking.event_queries`; the claims it hands out, in
`rag.tracking.claims`.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import TextClause
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import ConfigError, StoreError
from rag.model.types import clean_text
from rag.tracking import event_queries as sql
from rag.tracking.claims import Claim, Completion, ThreadTurn, claim_from_row, held, turn_from_row
from rag.tracking.pseudonyms import Pseudonym, plain
from rag.tracking.records import dumps, parse_trace_id, plain_dict

log = logging.getLogger("candor.events")


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
        rows = await self._execute(f"claim {platform} event {key}", sql.CLAIM, params)
        if not rows or not rows[0]["won"]:
            return None
        claim = claim_from_row(rows[0], taken_over=rows[0]["attempt"] > 1)
        if claim.taken_over and self.on_takeover is not None:
            self.on_takeover(platform)
        return claim

    async def renew(self, claim: Claim) -> bool:
        """Extend the lease from now; False when the claim is no longer this owner's (taken over, or done)."""
        params = {**held(claim), "lease": self.lease_seconds}
        return bool(await self._execute(f"renew the claim on {claim.platform} event {claim.key}", sql.RENEW, params))

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
            **held(claim),
            "status": "failed" if failed else "answered",
            "trace_id": _trace_id(trace_id),
            "reply": dumps(dict(reply or {})),
            "error": error,
            "lease": self.lease_seconds,
        }
        rows = await self._execute(f"complete {claim.platform} event {claim.key}", sql.COMPLETE, params)
        if not rows:
            return None
        if rows[0]["status"] != "claimed":
            return Completion()
        return Completion(claim_from_row(rows[0], taken_over=False))

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
        rows = await self._execute(f"revise {platform} event {key}", sql.REVISE, params)
        if not rows or not rows[0]["won"]:
            return None
        return claim_from_row(rows[0], taken_over=False)

    async def release(self, claim: Claim) -> None:
        """End the lease now, unanswered, so another replica takes the question over at once."""
        await self._execute(f"release {claim.platform} event {claim.key}", sql.RELEASE, held(claim))

    async def expired(self, platform: str, *, limit: int = 10) -> list[Claim]:
        """Take over up to `limit` questions of `platform` whose owner's lease ran out.

        Questions that `max_attempts` owners took and never finished are failed instead, and come
        back with `given_up` set: one UPDATE marks each, so exactly one replica gets it and tells
        the asker (a question is never dropped without a word)."""
        if limit < 1:
            return []
        exhausted = {"platform": platform, "max_attempts": self.max_attempts}
        given_up = []
        for row in await self._execute(f"give up exhausted {platform} events", sql.GIVE_UP_EXHAUSTED, exhausted):
            log.error("gave up a question after %d attempts", row["attempt"], extra={"key": row["key"]})
            given_up.append(claim_from_row(row, taken_over=True, given_up=True))
        params = {**exhausted, "limit": limit, "owner": self.owner, "lease": self.lease_seconds}
        rows = await self._execute(f"take over expired {platform} events", sql.TAKE_OVER_EXPIRED, params)
        if self.on_takeover is not None:
            for row in rows:
                self.on_takeover(row["platform"])
        return given_up + [claim_from_row(row, taken_over=True) for row in rows]

    async def get(self, platform: str, key: str) -> dict[str, Any] | None:
        """The ledger row as JSON data (timestamps in ISO form), or None when the key is unknown."""
        rows = await self._execute(f"read {platform} event {key}", sql.SELECT_ROW, {"platform": platform, "key": key})
        return plain_dict(rows[0]) if rows else None

    async def by_reply(self, platform: str, fragment: Mapping[str, Any]) -> dict[str, Any] | None:
        """The latest row whose reply contains `fragment` (jsonb containment, indexed), e.g. the
        question a Teams message id answered: `{"activity_ids": ["1:abc"]}`."""
        params = {"platform": platform, "reply": dumps(dict(fragment))}
        rows = await self._execute(f"find the {platform} event of a reply", sql.SELECT_BY_REPLY, params)
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
        return bool(await self._execute(f"update the reply of {platform} event {key}", sql.UPDATE_REPLY, params))

    async def mark_deleted(self, platform: str, key: str) -> dict[str, Any] | None:
        """Mark the question and its edits deleted, their text removed; the question's row (its
        `reply` says which answer to delete) with `trace_ids`, the traces of the question and its
        edits (for their text to go too), or None when the question is unknown."""
        params = {"platform": platform, "key": key}
        rows = await self._execute(f"mark {platform} event {key} deleted", sql.MARK_DELETED, params)
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
        statement = sql.THREAD_TURNS_NO_TEAM if team is None else sql.THREAD_TURNS
        params = {"platform": platform, "team": team, "conversation": conversation, "thread": thread, "limit": limit}
        rows = await self._execute(f"read {platform} thread {conversation}/{thread}", statement, params)
        return [turn_from_row(row) for row in reversed(rows)]

    async def _execute(self, what: str, statement: TextClause, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """`sql.run`: one statement in its own transaction, riding through a database restart for up
        to `retry_seconds`; database failures become `StoreError`."""
        return await sql.run(self.engine, what, statement, params, within=self.retry_seconds)


def _trace_id(value: str | None) -> str | None:
    if value is None:
        return None
    canonical = parse_trace_id(value)
    if canonical is None:
        raise StoreError(f"trace id {value!r} is not a UUID")
    return canonical
