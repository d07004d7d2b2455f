"""Slack's hand-off to a person: "Ask a person" → a post in the triage channel → "Reply to asker" →
the expert's answer in the asker's thread, optionally kept as a curated answer.

On with `SLACK_TRIAGE_CHANNEL`. The button sits under a refusal, a low-confidence answer, an answer
with an unanswered part, and in the thank-you for a 👎. A click records the hand-off
(`rag.loop`; one per answer and asker, so a second click or Slack's retry finds the first) before
anything is posted, then posts to the triage channel and tells the asker, privately, where it went.
The expert's reply is stored before it is delivered, so a reply Slack refuses is not lost (the
expert is told). The asker gets it where they asked: the answer's thread, the DM, or (for a
private `/candor` answer, which has no thread) a direct message from the app.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.render.handoff import trace_url
from bot.server import ChatCore
from bot.slack.experts import SlackExperts, check_triage_channel
from bot.slack.handoff_blocks import (
    HANDOFF,
    HANDOFF_REPLY,
    HANDOFF_REPLY_CALLBACK,
    QUESTION_BLOCK,
    READERS_BLOCK,
    REPLY_BLOCK,
    expert_reply_text,
    read_handoff_value,
    readable,
    reply_form,
    reply_modal,
    triage_done_blocks,
    triage_message,
)
from bot.slack.people import whisper
from rag.errors import CandorError, ConfigError, NotFound, UnknownTrace
from rag.experts import reader_groups, refused
from rag.model.loop import HANDOFF_REASONS, CuratedAnswer, CuratedDraft, Handoff, HandoffReason

log = logging.getLogger("candor.slack")

PASSED_ON = "I've passed your question to the team in <#{channel}>. A person will answer you here."
ALREADY = "Your question is already with the team in <#{channel}>. A person will answer you here."
GONE = "That answer is no longer on record, so it could not be passed on."
FAILED = "Sorry, your question could not be passed on right now. The error is logged; please try again."
UNREADABLE = "That hand-off cannot be opened right now. The error is logged; please try again."
NOT_EXPERT = (
    "Only Candor's experts may answer hand-offs and keep curated answers. If you should be one, ask the "
    "person who runs Candor to add you to CANDOR_EXPERTS."
)


class SlackHandoffs:
    def __init__(
        self,
        core: ChatCore,
        client: AsyncWebClient,
        triage_channel: str,
        experts: SlackExperts,
        *,
        public_url: str | None = None,
    ) -> None:
        self.core = core
        self.client = client
        self.triage_channel = triage_channel
        self.experts = experts
        self.public_url = public_url
        """Where the dashboard is reached (CANDOR_PUBLIC_URL): the triage post links to the trace there."""
        self._channel_checked = False

    async def check_channel(self) -> bool:
        """Refuse a public or shared triage channel (`ConfigError`, naming it); True once it is
        known to be private. Slack unreachable: False (logged), and asked again before each post."""
        if not self._channel_checked:
            try:
                await check_triage_channel(self.client, self.triage_channel)
            except SlackApiError as exc:
                log.warning("could not check the triage channel %s yet: %s", self.triage_channel, exc)
                return False
            self._channel_checked = True
        return True

    def listen(self, bolt: AsyncApp) -> None:
        """Each listener acknowledges at once and works after Slack has its 200 (Bolt's lazy
        listeners): with `process_before_response` the 200 waits for the listener, and the work
        (posting, embedding a curated answer) can pass Slack's 3 s, after which Slack shows an
        error and the person clicks again. The reply form is checked before its acknowledgement,
        so that what is wrong shows in the form."""
        bolt.action(HANDOFF)(ack=_acknowledge, lazy=[self._on_ask])
        bolt.action(HANDOFF_REPLY)(ack=_acknowledge, lazy=[self._on_reply])
        bolt.view(HANDOFF_REPLY_CALLBACK)(ack=self._check_reply_form, lazy=[self._on_reply_form])

    # --- the asker: "Ask a person" --------------------------------------------------------------

    async def _on_ask(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        value = read_handoff_value(str(action.get("value") or ""))
        user = body["user"]["id"]
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        if not value or not channel:
            log.warning("an 'Ask a person' click without its answer", extra={"value": action.get("value")})
            return
        reason: HandoffReason = value["reason"] if value.get("reason") in HANDOFF_REASONS else "asked"
        try:
            handoff, _ = await self.core.loop.hand_off(
                value["trace"], platform="slack", asker=user, reason=reason, reply_to=_reply_to(body, value, channel)
            )
        except UnknownTrace:
            await self._whisper(channel, user, GONE)
            return
        except CandorError as exc:
            log.error("could not record a hand-off: %s", exc, extra={"trace_id": value["trace"]})
            await self._whisper(channel, user, FAILED)
            return
        try:  # never to a channel not known to be private
            if not await self.check_channel():
                await self._whisper(channel, user, FAILED)
                return
        except ConfigError as exc:
            log.error("hand-off not posted: %s", exc, extra={"handoff": handoff.id})
            await self._whisper(channel, user, FAILED)
            return
        try:  # one poster, whatever the clicks and replicas; a post that failed before is tried again
            posting = await self.core.loop.claim_triage(handoff.id)
            if posting and not await self._post_triage(handoff, channel):
                await self.core.loop.unclaim_triage(handoff.id)
                await self._whisper(channel, user, FAILED)
                return
        except CandorError as exc:
            log.error("could not post a hand-off: %s", exc, extra={"handoff": handoff.id})
            await self._whisper(channel, user, FAILED)
            return
        note = PASSED_ON if posting else ALREADY
        await self._whisper(channel, user, note.format(channel=self.triage_channel))

    async def _post_triage(self, handoff: Handoff, channel: str) -> bool:
        where = "a direct message" if channel.startswith("D") else f"<#{channel}>"
        text, blocks = triage_message(handoff, where=where, trace_url=trace_url(self.public_url, handoff.trace_id))
        try:
            sent = await self.client.chat_postMessage(
                channel=self.triage_channel, text=text, blocks=blocks, unfurl_links=False, unfurl_media=False
            )
        except SlackApiError as exc:
            log.error(
                "could not post a hand-off to the triage channel %s: %s (is the bot a member?)",
                self.triage_channel,
                exc.response.get("error"),
                extra={"trace_id": handoff.trace_id, "handoff": handoff.id},
            )
            return False
        await self.core.loop.note_triage(handoff.id, {"channel": self.triage_channel, "ts": sent["ts"], "where": where})
        return True

    # --- the expert: "Reply to asker" -----------------------------------------------------------

    async def _on_reply(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        user = body["user"]["id"]
        if not await self.experts.is_expert(user):
            refused("slack", user, "open the reply form of a hand-off")
            await self._whisper((body.get("channel") or {}).get("id") or self.triage_channel, user, NOT_EXPERT)
            return
        try:
            handoff = await self.core.loop.handoff(str(action.get("value") or ""))
        except CandorError as exc:
            log.warning("'Reply to asker' on a hand-off that cannot be read: %s", exc)
            channel = (body.get("channel") or {}).get("id")
            if channel:
                gone = "That hand-off is no longer on record." if isinstance(exc, NotFound) else UNREADABLE
                await self._whisper(channel, body["user"]["id"], gone)
            return
        try:
            await self.client.views_open(trigger_id=body["trigger_id"], view=reply_modal(handoff))
        except SlackApiError as exc:
            log.warning("the reply form could not open: %s", exc, extra={"handoff": handoff.id})

    async def _check_reply_form(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        problems = await self._form_problems(body, view)
        if problems:
            await ack(response_action="errors", errors=problems)
        else:
            await ack()

    async def _form_problems(self, body: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, str]:
        """What is wrong with a sent reply form: the sender is no expert, the reply is empty, or a
        curated answer lacks its question or a choice of readers that can be honoured."""
        if not await self.experts.is_expert(body["user"]["id"]):
            refused("slack", body["user"]["id"], "send a reply to a hand-off")
            return {REPLY_BLOCK: NOT_EXPERT}
        form = reply_form(view)
        problems = _missing(form)
        if problems or not form["curate"]:
            return problems
        try:
            handoff = await self.core.loop.handoff(str(view.get("private_metadata") or ""))
            reader_groups(form["readers"], form["groups"], handoff.cited)
        except ConfigError as exc:
            return {READERS_BLOCK: f"{str(exc)[:1].upper()}{str(exc)[1:]}."}
        except CandorError:
            return {}  # the hand-off cannot be read now: the reply path reports it
        return {}

    async def _on_reply_form(self, body: dict[str, Any], view: dict[str, Any]) -> None:
        if await self._form_problems(body, view):
            return  # refused in the form
        form = reply_form(view)
        expert = body["user"]["id"]
        name = await self.experts.name(expert, body["user"])
        try:
            handoff, now = await self.core.loop.reply_to_handoff(
                str(view.get("private_metadata") or ""), form["reply"], by=expert, by_name=name
            )
        except (CandorError, ValueError) as exc:
            log.error("could not store a reply to a hand-off: %s", exc)
            await self._tell_expert(expert, "Your reply could not be stored, so it was not sent. The error is logged.")
            return
        if not now:
            by = handoff.replied_by_name or "someone"
            await self._tell_expert(expert, f"{by} has answered this question already; your reply was not sent.")
            return
        await self._deliver(handoff, expert)
        curated = await self._curate(handoff, form, expert, name) if form["curate"] else None
        await self._mark_done(handoff, expert, curated)

    async def _deliver(self, handoff: Handoff, expert: str) -> None:
        text, blocks = expert_reply_text(handoff, expert=expert)
        target = handoff.reply_to
        try:
            await self.client.chat_postMessage(
                channel=str(target.get("channel") or handoff.asker),
                thread_ts=target.get("thread_ts"),
                text=text,
                blocks=blocks,
                unfurl_links=False,
            )
        except SlackApiError as exc:
            log.error("could not deliver a reply to the asker: %s", exc, extra={"handoff": handoff.id})
            await self._tell_expert(
                expert, f"Your reply is stored with the question, but Slack refused to post it to the asker: {exc}"
            )

    async def _curate(self, handoff: Handoff, form: Mapping[str, Any], expert: str, name: str) -> CuratedAnswer | None:
        try:
            draft = CuratedDraft(
                question=form["question"],
                answer=form["reply"],
                author=expert,
                author_name=name,
                access_groups=reader_groups(form["readers"], form["groups"], handoff.cited),
                handoff_id=handoff.id,
                trace_id=handoff.trace_id,
            )
            return await self.core.loop.curate(draft)
        except ConfigError as exc:
            await self._tell_expert(
                expert, f"Your reply was sent, but it could not be kept as a curated answer: {exc}."
            )
        except CandorError as exc:
            log.error("could not keep a curated answer: %s", exc, extra={"handoff": handoff.id})
            await self._tell_expert(expert, "Your reply was sent, but keeping it as a curated answer failed (logged).")
        return None

    async def _mark_done(self, handoff: Handoff, expert: str, curated: CuratedAnswer | None) -> None:
        triage = handoff.triage or {}
        if not triage.get("ts"):
            return
        where, url = str(triage.get("where") or "Slack"), trace_url(self.public_url, handoff.trace_id)
        _, blocks = triage_message(handoff, where=where, trace_url=url)
        try:
            await self.client.chat_update(
                channel=str(triage["channel"]),
                ts=str(triage["ts"]),
                text=f"Answered by a person: {readable(handoff.question)[:200]}",
                blocks=triage_done_blocks(handoff, blocks, expert=expert, curated=curated),
            )
        except SlackApiError as exc:
            log.warning("could not mark the triage post answered: %s", exc, extra={"handoff": handoff.id})

    # --- plumbing ----------------------------------------------------------------------------------

    async def _whisper(self, channel: str, user: str, text: str) -> None:
        await whisper(self.client, channel, user, text)

    async def _tell_expert(self, expert: str, text: str) -> None:
        await self._whisper(self.triage_channel, expert, text)


async def _acknowledge(ack: AsyncAck) -> None:
    await ack()


def _missing(form: Mapping[str, Any]) -> dict[str, str]:
    if not form["reply"]:
        return {REPLY_BLOCK: "Write the answer first."}
    if form["curate"] and not form["question"]:
        return {QUESTION_BLOCK: "A curated answer needs its question."}
    return {}


def _reply_to(body: Mapping[str, Any], value: Mapping[str, Any], channel: str) -> dict[str, Any]:
    """Where the asker waits: the answer's thread (from the button's value when it sits in an
    ephemeral note, else from the message it is on), the DM, or (a private answer with no thread)
    a direct message from the app."""
    message = body.get("message") or {}
    thread = value.get("thread") or message.get("thread_ts")
    if (body.get("container") or {}).get("is_ephemeral") and not thread:  # a DM of two people is not ours either
        return {"channel": body["user"]["id"], "thread_ts": None, "direct": True}
    return {"channel": channel, "thread_ts": thread}
