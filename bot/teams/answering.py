"""Answering one claimed Teams question after its turn: what `bot.worker.Worker` runs (`run`,
`abandoned`), and what the adapter runs in the turn for an `expectReplies` request (`answer`).

The question's conversation is reached proactively (`continue_conversation`) with a typing
indicator until the answer goes out; an edit that arrived meanwhile is answered next, replacing the
answer in place; a question deleted meanwhile has its answer deleted. Where the answer went is
recorded in the event ledger, so that votes and edits find it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from botbuilder.schema import ConversationReference

from bot.server import ChatCore
from bot.teams.cards import answer_activity, failure_activity
from bot.teams.delivery import Delivery, Send
from bot.teams.handoff_cards import with_handoff_offer, with_offer
from bot.teams.job import TeamsJob
from bot.worker import EventClaims
from rag import Claim, Completion
from rag.errors import CandorError, DeliveryError, QuestionError, StoreError
from rag.model.answers import Question, Turn

log = logging.getLogger("candor.teams")

PLATFORM = "teams"
CHAT_HISTORY_MINUTES = 30
"""A personal or group chat never ends: earlier turns count as context for this long."""


class TeamsResponder:
    def __init__(
        self,
        core: ChatCore,
        ledger: EventClaims,
        delivery: Delivery,
        *,
        ask_human: str | None = None,
        offer_handoff: bool = False,
    ) -> None:
        self.core = core
        self.ledger = ledger
        self.delivery = delivery
        self.ask_human = ask_human
        self.offer_handoff = offer_handoff
        """Answers that may want a person carry "Ask a person" (a triage channel is set)."""

    async def run(self, claim: Claim) -> None:
        """Answer a claimed question proactively, with a typing indicator until the answer goes out;
        then each edit of it that arrived meanwhile (the newest text only: `EventLedger.complete`
        hands it on), updating that answer in place."""
        current: Claim | None = claim
        while current is not None:
            current = await self._run_one(current)

    async def _run_one(self, claim: Claim) -> Claim | None:
        job = TeamsJob.from_payload(claim.payload)
        reference = ConversationReference.deserialize(job.reference)
        answered = claim.reply.get("activity_ids") or []
        replaced = str(answered[0]) if claim.revision is not None and answered else None
        typing = asyncio.create_task(self.delivery.keep_typing(reference))

        async def send(activity: Mapping[str, Any]) -> str | None:
            typing.cancel()
            if replaced is not None:  # an edited question: its answer replaces the one given
                return await self.delivery.update(reference, replaced, activity)
            return await self.delivery.proactive(reference, activity)

        try:
            return await self.answer(claim, job, send)
        finally:
            typing.cancel()

    async def abandoned(self, claim: Claim) -> None:
        """The question was given up (every replica that took it stopped before answering): say so."""
        reference = ConversationReference.deserialize(TeamsJob.from_payload(claim.payload).reference)

        async def send(activity: Mapping[str, Any]) -> str | None:
            return await self.delivery.proactive(reference, activity)

        await self._tell(send, failure_activity(None), claim)

    async def answer(self, claim: Claim, job: TeamsJob, send: Send) -> Claim | None:
        """Answer one job; the edit to answer next, if one came meanwhile."""
        trace_id: str | None = None
        try:
            question = Question(
                job.text,
                asker=job.user,
                platform="teams",
                conversation=job.where,
                thread=job.conversation,
                history=await self._history(claim.key, job),
                audience=job.audience,
            )
            answer = await self.core.answer(question)
            trace_id = answer.trace_id
            activity = answer_activity(answer, ask_human=self.ask_human)
            sent = await send(with_handoff_offer(activity, answer) if self.offer_handoff else activity)
        except QuestionError as exc:
            await self._tell(send, {"type": "message", "text": f"I couldn't take that question: {exc}."}, claim)
            return _edit_next(await self.ledger.complete(claim, failed=True, error=str(exc)))
        except Exception as exc:  # CandorError, or a defect: either way the asker hears of it
            log.error(
                "answering a Teams question failed: %s",
                exc,
                exc_info=not isinstance(exc, CandorError),
                extra={"key": claim.key, "trace_id": trace_id},
            )
            if not isinstance(exc, DeliveryError):
                failure = failure_activity(trace_id)
                if self.offer_handoff and trace_id is not None:  # made but never delivered: as a refusal
                    failure = with_offer(failure, trace_id, "abstained")
                await self._tell(send, failure, claim)
            return _edit_next(await self.ledger.complete(claim, trace_id=trace_id, failed=True, error=str(exc)))
        reply = {
            "activity_ids": [sent] if sent else [],
            "conversation": job.conversation,
            "answer_text": answer.text,
            "route": answer.route,
        }
        return await self._record_reply(claim, job, reply, trace_id)

    async def _record_reply(
        self, claim: Claim, job: TeamsJob, reply: Mapping[str, Any], trace_id: str | None
    ) -> Claim | None:
        """Where the answer went, so that votes on it find its trace: a delivered answer is never
        marked failed; a claim lost meanwhile is `_superseded`. The edit to answer next, if any."""
        for attempt in range(3):
            try:
                completion = await self.ledger.complete(claim, trace_id=trace_id, reply=reply)
                if completion is None:
                    await self._superseded(claim, job, reply, trace_id)
                return _edit_next(completion)
            except StoreError as exc:
                log.warning("could not record a delivered Teams answer (try %d): %s", attempt + 1, exc)
                await asyncio.sleep(1.0 * (attempt + 1))
        log.error("a delivered Teams answer is not recorded; votes on it will not find it", extra={"key": claim.key})
        return None

    async def _superseded(self, claim: Claim, job: TeamsJob, reply: Mapping[str, Any], trace_id: str | None) -> None:
        """The claim was lost while answering: the question was deleted meanwhile (the answer just
        sent is deleted, and its text leaves the trace), or another replica took it over (the reply
        is recorded all the same, for votes to find its trace)."""
        row = await self.ledger.get(PLATFORM, claim.key)
        if row is None or row["status"] != "deleted":
            await self.ledger.update_reply(PLATFORM, claim.key, reply, trace_id=trace_id)
            return
        reference = ConversationReference.deserialize(job.reference)
        for activity_id in reply.get("activity_ids") or ():
            try:
                await self.delivery.delete(reference, str(activity_id))
            except DeliveryError as exc:
                log.warning(
                    "could not delete the answer to a deleted Teams question: %s", exc, extra={"key": claim.key}
                )
        if trace_id is not None:
            await self.forget(trace_id)

    async def _tell(self, send: Send, activity: Mapping[str, Any], claim: Claim) -> None:
        """A message about a failure: if it cannot be delivered either, logged."""
        try:
            await send(activity)
        except DeliveryError as exc:
            log.error("could not tell the asker that answering failed: %s", exc, extra={"key": claim.key})

    async def _history(self, key: str, job: TeamsJob) -> tuple[Turn, ...]:
        """The conversation's earlier questions and answers: the whole thread in a channel; in a
        personal or group chat, which never ends, only the last `CHAT_HISTORY_MINUTES`."""
        turns = await self.ledger.thread_turns(PLATFORM, job.tenant, job.conversation, job.conversation)
        if job.conversation_type in ("personal", "groupChat") and turns:
            since = turns[-1].created_at - timedelta(minutes=CHAT_HISTORY_MINUTES)
            turns = [turn for turn in turns if turn.created_at >= since]
        history: list[Turn] = []
        for turn in turns:
            if turn.key == key or not turn.question:
                continue
            history.append(Turn(turn.question, author=turn.asker))
            if turn.answer:
                history.append(Turn(turn.answer, from_bot=True))
        return tuple(history)

    async def forget(self, trace_id: str) -> None:
        """The question was deleted in Teams: its text leaves the trace (a failure is logged; the
        retention purge removes it later)."""
        try:
            await self.core.forget(trace_id)
        except CandorError as exc:
            log.error("could not remove the text of a deleted question: %s", exc, extra={"trace_id": trace_id})


def _edit_next(completion: Completion | None) -> Claim | None:
    return completion.revision if completion is not None else None
