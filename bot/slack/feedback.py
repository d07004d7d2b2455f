"""Slack's 👍/👎: the vote on an answer, its private thank-you (with the offer of a person after a 👎
when hand-offs are on) and the optional reason form.

Unlike the hand-off's, these listeners do their work before Slack has its 200: the vote is in
Postgres when Slack hears the click was taken (`process_before_response`). The reason form opens
first, before the vote is stored: its `trigger_id` lives 3 s.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.server import ChatCore
from bot.slack.blocks import (
    FEEDBACK_DOWN,
    FEEDBACK_REASON_CALLBACK,
    FEEDBACK_UP,
    REASON_ACTION,
    REASON_BLOCK,
    SlackMessage,
    feedback_ack,
    feedback_reason_modal,
)
from bot.slack.handoff_blocks import vote_note_blocks
from bot.slack.jobs import post_to_response_url
from bot.slack.people import whisper
from rag.errors import CandorError, UnknownTrace
from rag.model.answers import Feedback, Rating

log = logging.getLogger("candor.slack")


class SlackFeedback:
    def __init__(self, core: ChatCore, client: AsyncWebClient, *, offer_handoff: bool = False) -> None:
        self.core = core
        self.client = client
        self.offer_handoff = offer_handoff
        """After a 👎, the thank-you offers "Ask a person" (a triage channel is set)."""

    def listen(self, bolt: AsyncApp) -> None:
        bolt.action(FEEDBACK_UP)(self._on_vote)
        bolt.action(FEEDBACK_DOWN)(self._on_vote)
        bolt.view(FEEDBACK_REASON_CALLBACK)(self._on_reason)

    async def _on_vote(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        rating: Rating = "up" if action["action_id"] == FEEDBACK_UP else "down"
        user, channel = body["user"]["id"], (body.get("channel") or {}).get("id")
        if rating == "down":
            # first: the trigger id lives 3 s, and storing the vote and whispering may take longer
            await self._ask_reason(body["trigger_id"], action["value"])
        note = await self._store_vote(Feedback(action["value"], rating, user=user, platform="slack"))
        offer = rating == "down" and self.offer_handoff
        thread = (body.get("message") or {}).get("thread_ts")
        blocks = vote_note_blocks(note, action["value"], thread=thread) if offer else None
        if (body.get("container") or {}).get("is_ephemeral") and body.get("response_url"):
            # a private answer (a slash command's), perhaps where the bot is not a member and
            # chat.postEphemeral fails: thanked through the click's own response_url
            refused = await post_to_response_url(body["response_url"], SlackMessage(note, tuple(blocks or ())))
            if refused is None:
                return
            log.warning("the thank-you for a vote could not go to its response_url (%s)", refused)
        if channel:
            await whisper(self.client, channel, user, note, blocks)

    async def _ask_reason(self, trigger_id: str, trace_id: str) -> None:
        """The optional reason form for a 👎; the vote counts without it, so a form that cannot open
        (the trigger expired) is logged and the vote goes on."""
        try:
            await self.client.views_open(trigger_id=trigger_id, view=feedback_reason_modal(trace_id))
        except SlackApiError as exc:
            log.warning("the reason form for a 👎 could not open: %s", exc, extra={"trace_id": trace_id})

    async def _on_reason(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        await ack()
        reason = ((view.get("state") or {}).get("values") or {}).get(REASON_BLOCK, {}).get(REASON_ACTION, {})
        comment = (reason.get("value") or "").strip()
        if comment:
            feedback = Feedback(
                view["private_metadata"], "down", user=body["user"]["id"], platform="slack", comment=comment
            )
            await self._store_vote(feedback)

    async def _store_vote(self, feedback: Feedback) -> str:
        try:
            await self.core.record_feedback(feedback)
        except UnknownTrace:
            return "That answer is no longer on record, so your vote could not be stored."
        except CandorError as exc:
            log.error("storing Slack feedback failed: %s", exc, extra={"trace_id": feedback.trace_id})
            return "Sorry, your vote could not be stored right now. The error is logged."
        return feedback_ack(feedback.rating)
