"""The Teams adapter on botbuilder's `CloudAdapter`: activities in, claims and proactive answers out.

The HTTP turn only records the question: the message is claimed in the event ledger (platform
"teams", keyed by conversation and activity id, so a redelivered activity is answered once) and
handed to the `Worker`; the turn returns at once. The answer goes out afterwards through
`continue_conversation` with the stored conversation reference, so a slow answer never meets
Teams' timeouts, with a typing indicator repeated while it is made. A replica that dies leaves a
lease that runs out; another answers (`bot.worker`).

Everything botbuilder stays in this folder, so that moving to the Microsoft 365 Agents SDK (the
`microsoft-agents-*` packages succeeding the archived Bot Framework SDK) changes one folder.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from types import SimpleNamespace
from typing import Any

from aiohttp import web
from botbuilder.core import ActivityHandler, InvokeResponse, TurnContext
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
    ConfigurationServiceClientCredentialFactory,
)
from botbuilder.schema import Activity, ChannelAccount, DeliveryModes

from bot.server import ChatCore
from bot.teams.answering import PLATFORM, TeamsResponder
from bot.teams.cards import failure_activity, welcome_activity
from bot.teams.credentials import ReusedCredentials
from bot.teams.delivery import Delivery, to_activity
from bot.teams.experts import TeamsExperts
from bot.teams.feedback import feedback_from_invoke
from bot.teams.handoff import TeamsHandoffs
from bot.teams.handoff_cards import invoke_message
from bot.teams.job import (
    channel_data,
    event_type,
    job_of,
    mentions_recipient,
    question_text,
    revision_of,
)
from bot.worker import EventClaims, Worker
from rag import Claim
from rag.config import Settings
from rag.errors import CandorError, ConfigError, StoreError, UnknownTrace
from rag.experts import Experts
from rag.model.answers import Feedback

log = logging.getLogger("candor.teams")

MESSAGES_PATH = "/api/messages"
REPLY_RECORD_SECONDS = 5.0
"""How long a vote on an answer waits for the answer's record (see `TeamsAdapter._answer_of`)."""


@dataclass(frozen=True, slots=True)
class TeamsConfig:
    app_id: str | None = None
    """None: anonymous local development (no token checked either way); logged loudly."""
    app_password: str | None = None
    app_type: str = "MultiTenant"
    tenant_id: str | None = None
    tenants: frozenset[str] | None = None
    """The tenants whose messages are answered; None: any (the emulator, or an explicit `*`)."""
    ask_human: str | None = None
    triage_channel: str | None = None
    """Where "Ask a person" hands questions to the team (`bot.teams.handoff`); None: no hand-offs."""
    public_url: str | None = None
    """CANDOR_PUBLIC_URL: triage cards link to the trace's dashboard page there."""
    experts: Experts = field(default_factory=Experts)
    """Who may answer hand-offs and keep curated answers (CANDOR_EXPERTS)."""
    concurrency: int | None = None
    """Answers made at once (`CANDOR_ANSWER_CONCURRENCY`); None: the worker's default, the CPU count."""

    @property
    def anonymous(self) -> bool:
        return not self.app_id


def teams_config(settings: Settings) -> TeamsConfig:
    """The Teams part of the settings; an authenticated bot must name the organisations it answers."""
    password = settings.microsoft_app_password
    tenants = settings.teams_tenant_ids
    if settings.microsoft_app_id and not tenants:
        raise ConfigError(
            "MICROSOFT_APP_ID needs MICROSOFT_APP_TENANT_ID or CANDOR_TEAMS_TENANTS: the organisations "
            "the bot answers (comma-separated tenant ids; `*` for any organisation, a public app)"
        )
    experts = Experts.parse(settings.experts)
    if settings.teams_triage_channel and not experts.configured("teams"):
        raise ConfigError(
            "TEAMS_TRIAGE_CHANNEL is set but CANDOR_EXPERTS names no Teams expert: nobody could answer the "
            "hand-offs posted there. Add teams:<Entra object id> or teams-team:<team id> entries to "
            "CANDOR_EXPERTS, or unset TEAMS_TRIAGE_CHANNEL"
        )
    return TeamsConfig(
        experts=experts,
        tenants=None if "*" in tenants or not settings.microsoft_app_id else tenants,
        app_id=settings.microsoft_app_id or None,
        app_password=password.get_secret_value() if password is not None else None,
        app_type=settings.microsoft_app_type,
        tenant_id=settings.microsoft_app_tenant_id,
        ask_human=settings.teams_ask_human,
        triage_channel=settings.teams_triage_channel,
        public_url=settings.public_url,
        concurrency=settings.answer_concurrency,
    )


class TeamsAdapter:
    """The CloudAdapter, the bot, and the worker that answers after the turn."""

    def __init__(
        self,
        config: TeamsConfig,
        core: ChatCore,
        ledger: EventClaims,
        *,
        drain_seconds: float = 30.0,
        poll_seconds: float | None = None,
        auth_overrides: Mapping[str, str] | None = None,
        send_attempts: int = 4,
        backoff_seconds: float = 1.0,
    ) -> None:
        """`send_attempts` and `backoff_seconds`: the retries of a reply the Bot Connector refuses."""
        self.config = config
        self.core = core
        self.ledger = ledger
        self.drain_seconds = drain_seconds
        settings = SimpleNamespace(
            APP_ID=config.app_id or "",
            APP_PASSWORD=config.app_password or "",
            APP_TYPE=config.app_type,
            APP_TENANTID=config.tenant_id or "",
            **dict(auth_overrides or {}),
        )
        credentials = ReusedCredentials(ConfigurationServiceClientCredentialFactory(settings))
        self.cloud = CloudAdapter(ConfigurationBotFrameworkAuthentication(settings, credentials_factory=credentials))
        self.cloud.on_turn_error = self._on_turn_error
        self.bot = _CandorBot(self)
        self.delivery = Delivery(self.cloud, config.app_id, attempts=send_attempts, backoff_seconds=backoff_seconds)
        self.handoffs = (
            TeamsHandoffs(
                core, self.delivery, config.triage_channel, TeamsExperts(config.experts), public_url=config.public_url
            )
            if config.triage_channel
            else None
        )
        self.responder = TeamsResponder(
            core, ledger, self.delivery, ask_human=config.ask_human, offer_handoff=self.handoffs is not None
        )
        poll = poll_seconds if poll_seconds is not None else max(0.5, ledger.lease_seconds / 2)
        self.worker = Worker(self.responder, ledger, PLATFORM, poll_seconds=poll)
        if config.concurrency is not None:
            self.worker.concurrency = config.concurrency

    def mount(self, app: web.Application) -> None:
        app.router.add_post(MESSAGES_PATH, self._http)
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._stop)

    async def _http(self, request: web.Request) -> web.Response:
        """Authenticate, then run the turn. botbuilder's own `process` answers 401 only for some
        token failures (an expired or foreign-signed token, or none at all, gives 500): every
        failure to authenticate is a 401 here, logged."""
        if "application/json" not in request.headers.get("Content-Type", ""):
            raise web.HTTPUnsupportedMediaType()
        try:
            activity = Activity().deserialize(await request.json())
        except ValueError as exc:
            raise web.HTTPBadRequest(text="not a Bot Framework activity") from exc
        if not activity.type:
            raise web.HTTPBadRequest(text="not a Bot Framework activity")
        try:
            auth = await self.cloud.bot_framework_authentication.authenticate_request(
                activity, request.headers.get("Authorization", "")
            )
        except Exception as exc:  # PermissionError, PyJWT's errors, and botbuilder's IndexError/AttributeError
            log.warning("refused a Teams request: %s: %s", type(exc).__name__, exc)
            raise web.HTTPUnauthorized() from None
        tenant = channel_data(activity, "tenant")
        if self.config.tenants is not None and tenant not in self.config.tenants:
            log.warning(
                "refused a Teams %s from tenant %r, which CANDOR_TEAMS_TENANTS does not name",
                activity.type,
                tenant,
                extra={"tenant": tenant, "conversation": activity.conversation.id if activity.conversation else None},
            )
            raise web.HTTPForbidden()
        invoke = await self.cloud.process_activity(auth, activity, self.bot.on_turn)
        if invoke:  # an invoke's answer, or the replies of an `expectReplies` turn (a Model)
            body = invoke.body.serialize() if hasattr(invoke.body, "serialize") else invoke.body
            return web.json_response(data=body, status=invoke.status)
        return web.Response(status=201)

    async def _start(self, app: web.Application) -> None:
        if self.config.anonymous:
            log.warning(
                "MICROSOFT_APP_ID is not set: /api/messages accepts requests WITHOUT authentication "
                "(local development only; never expose this server)"
            )
        self.worker.start()

    async def _stop(self, app: web.Application) -> None:
        await self.worker.drain(self.drain_seconds)

    async def _on_turn_error(self, context: TurnContext, error: Exception) -> None:
        log.error("Teams turn failed: %s", error, exc_info=error)

    # --- the turn: record the question -------------------------------------------------------

    async def record(self, context: TurnContext) -> None:
        activity = context.activity
        conversation = activity.conversation
        kind = (conversation.conversation_type if conversation else None) or "personal"
        if kind != "personal" and not mentions_recipient(activity):
            return  # with others in the conversation, only a message that @mentions Candor is for it
        text = question_text(activity)
        if not text:
            await context.send_activity(to_activity(await self._welcome()))
            return
        job = job_of(activity, text)
        tenant = job.tenant
        key = f"{tenant}/{job.conversation}/{activity.id}"
        try:
            claim = await self.ledger.claim(
                PLATFORM,
                key,
                job.as_payload(),
                event_id=activity.id,
                question=text,
                team=tenant,
                conversation=job.conversation,
                thread=job.conversation,
                asker=job.user,
            )
        except StoreError as exc:  # without the ledger no replica could answer it: say so now
            log.error("could not record a Teams question: %s", exc, extra={"key": key})
            await self.delivery.in_turn(context, failure_activity())
            return
        if claim is None:
            return  # redelivered: answered (or being answered) already
        if activity.delivery_mode == DeliveryModes.expect_replies:
            # The caller wants the replies in the HTTP response: answer within the turn (an edit made
            # meanwhile is answered after it, through the connector, as `run` answers it).
            async def in_turn(claim: Claim) -> None:
                edit = await self.responder.answer(claim, job, partial(self.delivery.in_turn, context))
                if edit is not None:
                    await self.responder.run(edit)

            await self.worker.submit(claim, in_turn)
        else:
            self.worker.submit(claim)

    async def edited(self, context: TurnContext) -> None:
        """A question edited in Teams (`messageUpdate`, `editMessage`): answered again, its answer
        updated in place (`run`). The ledger decides when (`EventLedger.revise`): at once when it
        was answered; after the answer being written, by whichever replica writes it, when it is
        still being answered. An edit that leaves the text as it was changes nothing; messages
        Candor never took as questions are not in the ledger."""
        activity = context.activity
        text = question_text(activity)
        if not text:
            return
        job = job_of(activity, text)
        key = f"{job.tenant}/{job.conversation}/{activity.id}"
        try:
            claim = await self.ledger.revise(
                PLATFORM, key, job.as_payload(), question=text, revision=revision_of(activity)
            )
        except StoreError as exc:  # the earlier answer stays; Teams does not send the edit again
            log.error("could not record an edited Teams question: %s", exc, extra={"key": key})
            return
        if claim is not None:
            self.worker.submit(claim)

    async def feedback(self, context: TurnContext) -> InvokeResponse:
        activity = context.activity
        try:
            rating, comment = feedback_from_invoke(activity.value or {})
        except ValueError as exc:
            log.warning("a Teams feedback invoke could not be read: %s", exc)
            return InvokeResponse(status=400)
        try:
            row = await self._answer_of(activity.reply_to_id)
        except StoreError as exc:  # Teams tells the voter it failed; the vote is in the log
            log.error(
                "could not store Teams feedback: %s",
                exc,
                extra={"reply_to": activity.reply_to_id, "rating": rating, "comment": comment},
            )
            return InvokeResponse(status=503)
        if row is None or not row.get("trace_id"):
            log.warning(
                "Teams feedback for a message Candor has no record of", extra={"reply_to": activity.reply_to_id}
            )
            return InvokeResponse(status=200)
        user = activity.from_property.id if activity.from_property else None
        try:
            await self.core.record_feedback(
                Feedback(str(row["trace_id"]), rating, user=user, platform="teams", comment=comment)
            )
        except UnknownTrace:
            log.warning("Teams feedback for a trace that is gone", extra={"trace_id": row["trace_id"]})
        except CandorError as exc:
            log.error("storing Teams feedback failed: %s", exc, extra={"trace_id": row["trace_id"]})
            return InvokeResponse(status=500)
        else:
            if rating == "down" and self.handoffs is not None:
                await self.handoffs.offer(context, str(row["trace_id"]))
        return InvokeResponse(status=200)

    async def _answer_of(self, reply_id: str | None) -> dict[str, Any] | None:
        """The ledger row of the question `reply_id` answered. An answer is recorded just after Teams
        accepted it, so a vote cast at once (or while the database is slow) may come first: it waits
        up to REPLY_RECORD_SECONDS for the record."""
        deadline = asyncio.get_running_loop().time() + REPLY_RECORD_SECONDS
        while True:
            row = await self.ledger.by_reply(PLATFORM, {"activity_ids": [reply_id]})
            if (row is not None and row.get("trace_id")) or asyncio.get_running_loop().time() >= deadline:
                return row
            await asyncio.sleep(0.25)

    async def deleted(self, context: TurnContext) -> None:
        """A question deleted in Teams: its answer is deleted too, and its text leaves the ledger and
        the trace (a failure to delete the answer is logged; the text goes regardless)."""
        activity = context.activity
        conversation = activity.conversation.id if activity.conversation else ""
        key = f"{channel_data(activity, 'tenant')}/{conversation}/{activity.id}"
        try:
            row = await self.ledger.mark_deleted(PLATFORM, key)
        except StoreError as exc:
            log.error("could not record a deleted Teams question: %s", exc, extra={"key": key})
            return
        if row is None:
            return
        for reply_id in (row.get("reply") or {}).get("activity_ids") or ():
            try:
                await context.delete_activity(reply_id)
            except Exception as exc:  # botbuilder's ErrorResponseException, the network: the answer stays
                log.warning("could not delete the answer to a deleted Teams question: %s", exc, extra={"key": key})
        for trace_id in row.get("trace_ids") or ():
            await self.responder.forget(trace_id)

    async def _welcome(self) -> dict[str, Any]:
        return welcome_activity(await self.core.knowledge_base_summary(), ask_human=self.config.ask_human)

    async def welcome(self, context: TurnContext) -> None:
        await context.send_activity(to_activity(await self._welcome()))


class _CandorBot(ActivityHandler):  # type: ignore[misc]
    def __init__(self, adapter: TeamsAdapter) -> None:
        super().__init__()
        self.adapter = adapter

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        await self.adapter.record(turn_context)

    async def on_message_update_activity(self, turn_context: TurnContext) -> None:
        if event_type(turn_context.activity) == "editMessage":  # not "undeleteMessage"
            await self.adapter.edited(turn_context)

    async def on_message_delete_activity(self, turn_context: TurnContext) -> None:
        await self.adapter.deleted(turn_context)

    async def on_members_added_activity(self, members_added: list[ChannelAccount], turn_context: TurnContext) -> None:
        bot_id = turn_context.activity.recipient.id if turn_context.activity.recipient else None
        if any(member.id == bot_id for member in members_added):
            await self.adapter.welcome(turn_context)

    async def on_invoke_activity(self, turn_context: TurnContext) -> InvokeResponse:
        if turn_context.activity.name == "message/submitAction":
            return await self.adapter.feedback(turn_context)
        if turn_context.activity.name == "adaptiveCard/action":
            if self.adapter.handoffs is None:  # a card from before TEAMS_TRIAGE_CHANNEL was unset
                return InvokeResponse(status=200, body=invoke_message("Asking a person is not set up here."))
            return await self.adapter.handoffs.on_action(turn_context)
        return await super().on_invoke_activity(turn_context)
