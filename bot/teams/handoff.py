"""Teams' hand-off to a person: "Ask a person" → a card in the triage channel → "Reply to asker" → the
expert's answer in the asker's conversation, optionally kept as a curated answer.

On with `TEAMS_TRIAGE_CHANNEL`. The action sits under a refusal, a low-confidence answer, an answer
with an unanswered part, and in the thank-you for a 👎 (`bot.teams.handoff_cards`); both arrive as
``adaptiveCard/action`` invokes (`on_action`). A click records the hand-off (`rag.loop`; one per
answer and asker, so a second click finds the first) before anything is posted, then starts a new
thread in the triage channel through the click's serviceUrl and tenant (the channel belongs to the
askers' organisation, and Candor is installed in its team), and tells the asker in their
conversation. A post that failed is tried again on the next click.

The expert's reply is taken from the triage channel only. It is stored before it is delivered, so a
reply Teams refuses is not lost: the form stays, says so, and can be sent again. Delivered (in the
asker's thread in a channel, with an @mention), it may be kept as a curated answer; the triage card
then says who replied, for whoever clicked at once and for everyone through an edit of the post.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import ClientError
from botbuilder.core import InvokeResponse, TurnContext
from botbuilder.schema import Activity, ConversationReference
from msrest.exceptions import ClientException

from bot.render.handoff import trace_url
from bot.server import ChatCore
from bot.teams.delivery import Delivery
from bot.teams.experts import TeamsExperts, check_triage_team
from bot.teams.handoff_cards import (
    HANDOFF_VERB,
    REPLY_VERB,
    ReplyForm,
    attachment,
    expert_reply_activity,
    invoke_card,
    invoke_error,
    invoke_message,
    note_activity,
    read_action,
    read_ask,
    read_reply_form,
    triage_activity,
    triage_card,
    triage_done_card,
    vote_offer_activity,
)
from bot.teams.job import channel_data
from rag.errors import CandorError, ConfigError, DeliveryError, NotFound, UnknownTrace
from rag.experts import reader_groups
from rag.experts import refused as log_refused
from rag.model.loop import CuratedAnswer, CuratedDraft, Handoff

log = logging.getLogger("candor.teams")

PASSED_ON = "I've passed your question to the team. A person will answer you here."
ALREADY = "Your question is already with the team. A person will answer you here."
GONE = "That answer is no longer on record, so it could not be passed on."
FAILED = "Sorry, your question could not be passed on right now. The error is logged; please try again."
NOT_HERE = "Replies to hand-offs are taken from the triage channel only."
UNREADABLE = "That hand-off cannot be opened right now. The error is logged; please try again."
NOT_EXPERT = (
    "Only Candor's experts may answer hand-offs and keep curated answers. If you should be one, ask the "
    "person who runs Candor to add you to CANDOR_EXPERTS."
)


class TeamsHandoffs:
    def __init__(
        self,
        core: ChatCore,
        delivery: Delivery,
        triage_channel: str,
        experts: TeamsExperts,
        *,
        public_url: str | None = None,
    ) -> None:
        self.core = core
        self.delivery = delivery
        self.triage_channel = triage_channel
        self.experts = experts
        self.public_url = public_url
        """Where the dashboard is reached (CANDOR_PUBLIC_URL): the triage card links to the trace there."""
        self._team_checked = False

    async def _check_team(self, context: TurnContext) -> bool:
        """The triage channel's team has no guests (asked once, before the first post); a team
        with guests, or one that cannot be read, gets no post (logged, naming the channel)."""
        if not self._team_checked:
            try:
                await check_triage_team(context, self.triage_channel)
            except ConfigError as exc:
                log.error("hand-off not posted: %s", exc)
                return False
            except (ClientException, ClientError) as exc:  # the connector refused or is unreachable: no post
                log.error("hand-off not posted: the triage channel's team could not be read: %s", exc)
                return False
            self._team_checked = True
        return True

    def _trace(self, handoff: Handoff) -> str | None:
        return trace_url(self.public_url, handoff.trace_id)

    async def on_action(self, context: TurnContext) -> InvokeResponse:
        """An ``adaptiveCard/action`` invoke: its answer, shown to whoever clicked."""
        verb, data = read_action(context.activity.value)
        if verb == HANDOFF_VERB:
            body = await self._on_ask(context, data)
        elif verb == REPLY_VERB:
            body = await self._on_reply(context, data)
        else:
            log.warning("an adaptive card action Candor does not know: %r", verb)
            body = invoke_error(400, "Candor does not know this action.")
        return InvokeResponse(status=200, body=body)

    async def offer(self, context: TurnContext, trace_id: str) -> None:
        """After a 👎: the thank-you, with the offer of a person, in the voter's conversation."""
        try:
            await self.delivery.in_turn(context, vote_offer_activity(trace_id))
        except DeliveryError as exc:  # the vote is stored either way
            log.warning("could not offer a person after a 👎: %s", exc, extra={"trace_id": trace_id})

    # --- the asker: "Ask a person" --------------------------------------------------------------

    async def _on_ask(self, context: TurnContext, data: Mapping[str, Any]) -> dict[str, Any]:
        activity = context.activity
        asked = read_ask(data)
        if asked is None:
            log.warning("an 'Ask a person' click without its answer", extra={"data": dict(data)})
            return invoke_error(400, "That action does not name an answer.")
        trace_id, reason = asked
        try:
            handoff, _ = await self.core.loop.hand_off(
                trace_id, platform="teams", asker=_user_id(activity), reason=reason, reply_to=_reply_to(activity)
            )
        except UnknownTrace:
            return invoke_message(GONE)
        except CandorError as exc:
            log.error("could not record a hand-off: %s", exc, extra={"trace_id": trace_id})
            return invoke_message(FAILED)
        if not await self._check_team(context):
            return invoke_message(FAILED)
        try:  # one poster, whatever the clicks and replicas; a post that failed before is tried again
            if not await self.core.loop.claim_triage(handoff.id):
                return invoke_message(ALREADY)
            if not await self._post_triage(handoff, activity):
                await self.core.loop.unclaim_triage(handoff.id)
                return invoke_message(FAILED)
        except CandorError as exc:
            log.error("could not post a hand-off: %s", exc, extra={"handoff": handoff.id})
            return invoke_message(FAILED)
        try:
            await self.delivery.in_turn(context, note_activity(PASSED_ON))
        except DeliveryError as exc:  # the click's own answer says it as well
            log.warning("could not tell the asker their question was passed on: %s", exc, extra={"handoff": handoff.id})
        return invoke_message(PASSED_ON)

    async def _post_triage(self, handoff: Handoff, activity: Activity) -> bool:
        tenant = channel_data(activity, "tenant") or None
        try:
            conversation, post = await self.delivery.to_channel(
                activity.service_url,
                self.triage_channel,
                tenant,
                triage_activity(handoff, trace_url=self._trace(handoff)),
            )
        except DeliveryError as exc:
            log.error(
                "could not post a hand-off to the triage channel %s: %s (is Candor installed in its team?)",
                self.triage_channel,
                exc,
                extra={"trace_id": handoff.trace_id, "handoff": handoff.id},
            )
            return False
        triage = {
            "channel": self.triage_channel,
            "conversation": conversation,
            "activity_id": post,
            "service_url": activity.service_url,
        }
        try:
            await self.core.loop.note_triage(handoff.id, triage)
        except CandorError as exc:  # posted: the reply still works; a second click would post again
            log.error("could not note where a hand-off was posted: %s", exc, extra={"handoff": handoff.id})
        return True

    # --- the expert: "Reply to asker" -----------------------------------------------------------

    async def _on_reply(self, context: TurnContext, data: Mapping[str, Any]) -> dict[str, Any]:
        activity = context.activity
        if not self._in_triage_channel(activity):
            log.warning("a reply to a hand-off from outside the triage channel", extra={"user": _user_id(activity)})
            return invoke_error(403, NOT_HERE)
        if not await self.experts.is_expert(context, _user_id(activity)):
            log_refused("teams", _user_id(activity), "send a reply to a hand-off")
            return invoke_error(403, NOT_EXPERT)
        form = read_reply_form(data)
        try:
            handoff = await self.core.loop.handoff(form.handoff_id)
        except CandorError as exc:
            log.warning("'Reply to asker' on a hand-off that cannot be read: %s", exc)
            gone = "That hand-off is no longer on record." if isinstance(exc, NotFound) else UNREADABLE
            return invoke_message(gone)
        problem = form.problem(handoff)
        if problem is not None:
            return invoke_card(triage_card(handoff, form=form, problem=problem, trace_url=self._trace(handoff)))
        expert = activity.from_property
        by = _user_id(activity)
        name = self.experts.name(by, expert.name if expert else None)
        try:
            handoff, now = await self.core.loop.reply_to_handoff(handoff.id, form.reply, by=by, by_name=name)
        except (CandorError, ValueError) as exc:
            log.error("could not store a reply to a hand-off: %s", exc, extra={"handoff": handoff.id})
            problem = "Your reply could not be stored, so it was not sent. The error is logged; send it again."
            return invoke_card(triage_card(handoff, form=form, problem=problem, trace_url=self._trace(handoff)))
        if not now:  # answered already (the form sent twice, or by someone else): sent once
            first = handoff.replied_by_name or "someone"
            return invoke_card(
                triage_done_card(handoff, expert=first, curated=None, notes=(), trace_url=self._trace(handoff))
            )
        refused = await self._deliver(handoff, name)
        if refused is not None:
            problem = (
                f"Your reply is stored with the question, but Teams did not deliver it ({refused}). Send it again."
            )
            return invoke_card(triage_card(handoff, form=form, problem=problem, trace_url=self._trace(handoff)))
        notes: list[str] = []
        curated = await self._curate(handoff, form, by, name, notes) if form.curate else None
        done = triage_done_card(handoff, expert=name, curated=curated, notes=notes, trace_url=self._trace(handoff))
        await self._mark_done(context, handoff, done)
        return invoke_card(done)

    async def _deliver(self, handoff: Handoff, expert: str) -> str | None:
        """The reply, where the asker waits; None once delivered, else why not."""
        stored = handoff.reply_to.get("reference")
        if not isinstance(stored, Mapping):
            log.error("a hand-off without the asker's conversation", extra={"handoff": handoff.id})
            return "the asker's conversation is not on record"
        try:
            reference = ConversationReference.deserialize(dict(stored))
            await self.delivery.proactive(reference, expert_reply_activity(handoff, expert=expert))
        except DeliveryError as exc:
            log.error("could not deliver a reply to the asker: %s", exc, extra={"handoff": handoff.id})
            return str(exc)
        return None

    async def _curate(
        self, handoff: Handoff, form: ReplyForm, expert: str, name: str, notes: list[str]
    ) -> CuratedAnswer | None:
        try:
            draft = CuratedDraft(
                question=form.question,
                answer=handoff.reply_text or form.reply,
                author=expert,
                author_name=name,
                access_groups=reader_groups(form.readers, form.groups, handoff.cited),
                handoff_id=handoff.id,
                trace_id=handoff.trace_id,
            )
            return await self.core.loop.curate(draft)
        except ConfigError as exc:
            notes.append(f"Your reply was sent, but it could not be kept as a curated answer: {exc}")
        except CandorError as exc:
            log.error("could not keep a curated answer: %s", exc, extra={"handoff": handoff.id})
            notes.append("Your reply was sent, but keeping it as a curated answer failed (logged).")
        return None

    async def _mark_done(self, context: TurnContext, handoff: Handoff, done: Mapping[str, Any]) -> None:
        """Everyone in the triage channel sees the post answered (the invoke's card shows only to
        the expert who clicked)."""
        post = context.activity.reply_to_id or (handoff.triage or {}).get("activity_id")
        if not post:
            return
        try:
            await self.delivery.update_in_turn(
                context, str(post), {"type": "message", "attachments": [attachment(done)]}
            )
        except DeliveryError as exc:
            log.warning("could not mark the triage post answered: %s", exc, extra={"handoff": handoff.id})

    def _in_triage_channel(self, activity: Activity) -> bool:
        conversation = (activity.conversation.id if activity.conversation else None) or ""
        return self.triage_channel in (channel_data(activity, "channel"), conversation.split(";", 1)[0])


def _user_id(activity: Activity) -> str:
    """Who clicked: their Entra object id (the same in every conversation), else their Teams id."""
    user = activity.from_property
    return str((user.aad_object_id or user.id) if user else "") or "unknown"


def _reply_to(activity: Activity) -> dict[str, Any]:
    """Where the asker waits: their conversation, addressed as a reply to the message the action sat
    on; in a channel, that message's thread."""
    reference = TurnContext.get_conversation_reference(activity)
    kind = (activity.conversation.conversation_type if activity.conversation else None) or "personal"
    if activity.reply_to_id:
        reference.activity_id = activity.reply_to_id
        conversation = reference.conversation
        if kind == "channel" and conversation is not None and ";messageid=" not in (conversation.id or ""):
            conversation.id = f"{conversation.id};messageid={activity.reply_to_id}"
    return {
        "reference": reference.serialize(),
        "reply_to_id": activity.reply_to_id,
        "conversation_type": kind,
        "tenant": channel_data(activity, "tenant"),
    }
