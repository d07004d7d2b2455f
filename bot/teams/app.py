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
import contextlib
import logging
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

from aiohttp import web
from botbuilder.core import ActivityHandler, InvokeResponse, TurnContext
from botbuilder.integration.aiohttp import CloudAdapter, ConfigurationBotFrameworkAuthentication
from botbuilder.schema import Activity, ChannelAccount, ConversationReference, Entity

from bot.server import ChatCore
from bot.teams.cards import answer_activity, failure_activity, typing_activity, welcome_activity
from bot.teams.feedback import feedback_from_invoke
from bot.worker import EventClaims, Worker
from rag.answers import Audience, Feedback, Question
from rag.config import Settings
from rag.errors import CandorError, QuestionError, UnknownTrace
from rag.tracking.events import Claim

log = logging.getLogger("candor.teams")

PLATFORM = "teams"
MESSAGES_PATH = "/api/messages"
TYPING_EVERY_SECONDS = 3.0
_COMMAND_WORD = re.compile(r"^\s*(?:ask|help)\b[\s:,-]*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TeamsConfig:
    app_id: str | None = None
    """None: anonymous local development (no token checked either way); logged loudly."""
    app_password: str | None = None
    app_type: str = "MultiTenant"
    tenant_id: str | None = None
    ask_human: str | None = None

    @property
    def anonymous(self) -> bool:
        return not self.app_id


def teams_config(settings: Settings) -> TeamsConfig:
    password = settings.microsoft_app_password
    return TeamsConfig(
        app_id=settings.microsoft_app_id or None,
        app_password=password.get_secret_value() if password is not None else None,
        app_type=settings.microsoft_app_type,
        tenant_id=settings.microsoft_app_tenant_id,
        ask_human=settings.slack_ask_human,
    )


@dataclass(frozen=True, slots=True)
class TeamsJob:
    """One question to answer, as the claim's payload stores it."""

    reference: dict[str, Any]
    """The serialised `ConversationReference` the answer is sent to."""
    text: str
    user: str
    conversation: str
    conversation_type: str
    tenant: str

    def as_payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> TeamsJob:
        return cls(**{k: v for k, v in payload.items() if k in cls.__dataclass_fields__})

    @property
    def audience(self) -> Audience:
        """Personal chats are direct; a group chat is private; a team channel counts as public."""
        return {"personal": "direct", "groupChat": "private"}.get(self.conversation_type, "public")  # type: ignore[return-value]


def _tenant(activity: Activity) -> str:
    """The tenant from `channelData.tenant.id` (botbuilder 4.17 drops `conversation.tenantId` when reading)."""
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    return str((data.get("tenant") or {}).get("id") or "")


def question_text(activity: Activity) -> str:
    """The message without the bot's @mention and without a leading command word ("ask", "help")."""
    text = TurnContext.remove_recipient_mention(activity) if activity.recipient else activity.text
    return _COMMAND_WORD.sub("", (text or "").replace("&nbsp;", " ")).strip()


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
    ) -> None:
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
        self.cloud = CloudAdapter(ConfigurationBotFrameworkAuthentication(settings))
        self.cloud.on_turn_error = self._on_turn_error
        self.bot = _CandorBot(self)
        poll = poll_seconds if poll_seconds is not None else max(0.5, ledger.lease_seconds / 2)
        self.worker = Worker(self, ledger, PLATFORM, poll_seconds=poll)

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
        invoke = await self.cloud.process_activity(auth, activity, self.bot.on_turn)
        if invoke:
            return web.json_response(data=invoke.body, status=invoke.status)
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
        text = question_text(activity)
        if not text:
            await context.send_activity(_activity(await self._welcome()))
            return
        reference = TurnContext.get_conversation_reference(activity)
        tenant = _tenant(activity)
        job = TeamsJob(
            reference=reference.serialize(),
            text=text,
            user=activity.from_property.id if activity.from_property else "",
            conversation=conversation.id if conversation else "",
            conversation_type=kind,
            tenant=tenant,
        )
        claim = await self.ledger.claim(
            PLATFORM,
            f"{tenant}/{job.conversation}/{activity.id}",
            job.as_payload(),
            event_id=activity.id,
            question=text,
            team=tenant,
            conversation=job.conversation,
            thread=job.conversation,
            asker=job.user,
        )
        if claim is not None:
            self.worker.submit(claim)

    async def feedback(self, context: TurnContext) -> InvokeResponse:
        activity = context.activity
        try:
            rating, comment = feedback_from_invoke(activity.value or {})
        except ValueError as exc:
            log.warning("a Teams feedback invoke could not be read: %s", exc)
            return InvokeResponse(status=400)
        row = await self.ledger.by_reply(PLATFORM, {"activity_ids": [activity.reply_to_id]})
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
        return InvokeResponse(status=200)

    async def _welcome(self) -> dict[str, Any]:
        return welcome_activity(await self.core.knowledge_base_summary(), ask_human=self.config.ask_human)

    async def welcome(self, context: TurnContext) -> None:
        await context.send_activity(_activity(await self._welcome()))

    # --- after the turn: answer (the Worker calls run) ---------------------------------------

    async def run(self, claim: Claim) -> None:
        job = TeamsJob.from_payload(claim.payload)
        reference = ConversationReference.deserialize(job.reference)
        sent: list[str] = []
        trace_id: str | None = None
        failed: str | None = None

        async def deliver(activity: dict[str, Any]) -> None:
            async def send(context: TurnContext) -> None:
                response = await context.send_activity(_activity(activity))
                if response is not None and response.id:
                    sent.append(response.id)

            await self.cloud.continue_conversation(reference, send, bot_app_id=self.config.app_id or "")

        typing = asyncio.create_task(self._keep_typing(reference))
        try:
            question = Question(
                job.text,
                asker=job.user,
                platform="teams",
                conversation=f"{job.tenant}/{job.conversation}",
                thread=job.conversation,
                audience=job.audience,
            )
            answer = await self.core.answer(question)
            trace_id = answer.trace_id
            typing.cancel()
            await deliver(answer_activity(answer, ask_human=self.config.ask_human))
        except QuestionError as exc:
            failed = str(exc)
            typing.cancel()
            await deliver({"type": "message", "text": f"I couldn't take that question: {exc}."})
        except CandorError as exc:
            failed = str(exc)
            log.error("answering a Teams question failed: %s", exc, extra={"key": claim.key, "trace_id": trace_id})
            typing.cancel()
            with contextlib.suppress(Exception):
                await deliver(failure_activity(trace_id))
        finally:
            typing.cancel()
        reply = {"activity_ids": sent, "conversation": job.conversation}
        await self.ledger.complete(claim, trace_id=trace_id, reply=reply, failed=failed is not None, error=failed)

    async def _keep_typing(self, reference: ConversationReference) -> None:
        async def send(context: TurnContext) -> None:
            await context.send_activity(_activity(typing_activity()))

        while True:
            try:
                await self.cloud.continue_conversation(reference, send, bot_app_id=self.config.app_id or "")
            except Exception as exc:  # a typing indicator is cosmetic: never fatal to the answer
                log.warning("typing indicator failed: %s", exc)
            await asyncio.sleep(TYPING_EVERY_SECONDS)


class _CandorBot(ActivityHandler):  # type: ignore[misc]
    def __init__(self, adapter: TeamsAdapter) -> None:
        super().__init__()
        self.adapter = adapter

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        await self.adapter.record(turn_context)

    async def on_members_added_activity(self, members_added: list[ChannelAccount], turn_context: TurnContext) -> None:
        bot_id = turn_context.activity.recipient.id if turn_context.activity.recipient else None
        if any(member.id == bot_id for member in members_added):
            await self.adapter.welcome(turn_context)

    async def on_invoke_activity(self, turn_context: TurnContext) -> InvokeResponse:
        if turn_context.activity.name == "message/submitAction":
            return await self.adapter.feedback(turn_context)
        return await super().on_invoke_activity(turn_context)


class _AIMessageEntity(Entity):  # type: ignore[misc]
    """The schema.org Message entity (AI label and citations) with every field serialised: botbuilder's
    `Entity` keeps unknown fields when reading but drops them when writing."""

    _attribute_map: ClassVar[dict[str, dict[str, str]]] = {
        **Entity._attribute_map,
        "at_type": {"key": "@type", "type": "str"},
        "at_context": {"key": "@context", "type": "str"},
        "at_id": {"key": "@id", "type": "str"},
        "additional_type": {"key": "additionalType", "type": "[str]"},
        "citation": {"key": "citation", "type": "[object]"},
    }

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(type=data.get("type"))
        self.at_type = data.get("@type")
        self.at_context = data.get("@context")
        self.at_id = data.get("@id")
        self.additional_type = data.get("additionalType")
        self.citation = data.get("citation")


def _activity(data: Mapping[str, Any]) -> Activity:
    """A renderer's plain activity as botbuilder's `Activity`, the AI-label entity intact."""
    entities = [_AIMessageEntity(e) for e in data.get("entities", ()) if e.get("@type") == "Message"]
    activity = Activity.deserialize({k: v for k, v in data.items() if k != "entities"})
    if entities:
        activity.entities = entities
    return activity
