"""The Slack adapter on `slack_bolt`'s `AsyncApp`: events in, claims and jobs out.

Listeners do the quick part only: decide whether a message is a question for Candor, claim it in
the event ledger (so retries, duplicates and the app_mention/message pair are answered once, by
one replica), hand the claim to the `Worker`, and return. `process_before_response=True` makes
Bolt acknowledge after the listener has returned: the claim is in Postgres before Slack hears
"200", so an acknowledged question cannot be lost. The answer follows from the worker.

HTTP mode mounts `POST /slack/events` on `candor serve`'s aiohttp app (Bolt verifies the signing
secret: unsigned, wrongly signed or stale requests get 401); Socket Mode connects out when
`SLACK_APP_TOKEN` is set. One workspace per installation: the bot token's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.server import ChatCore
from bot.slack.blocks import (
    home_view,
)
from bot.slack.config import SlackConfig
from bot.slack.experts import SlackExperts
from bot.slack.feedback import SlackFeedback
from bot.slack.handoff import SlackHandoffs
from bot.slack.history import reads_as_question
from bot.slack.jobs import PLATFORM, Job, Responder
from bot.slack.review import SlackReview
from bot.worker import EventClaims, Worker
from rag.errors import StoreError

log = logging.getLogger("candor.slack")

EVENTS_PATH = "/slack/events"
SLACK_LAST_RETRY = 3
"""Slack retries an event three times (X-Slack-Retry-Num 1, 2, 3) when it gets no 200."""
SUGGESTED_PROMPTS = (
    {"title": "What can you answer?", "message": "Which documents do you answer from?"},
    {"title": "A policy question", "message": "How many days of annual leave do employees get?"},
    {"title": "A product question", "message": "How much does the Team plan cost per month?"},
)


class SlackAdapter:
    """Builds the Bolt app, its listeners and the worker; mounts on an aiohttp app."""

    def __init__(
        self,
        config: SlackConfig,
        core: ChatCore,
        ledger: EventClaims,
        *,
        drain_seconds: float = 30.0,
        poll_seconds: float | None = None,
    ):
        self.config = config
        self.core = core
        self.ledger = ledger
        self.drain_seconds = drain_seconds
        self.client = AsyncWebClient(
            token=config.bot_token,
            base_url=config.api_url or AsyncWebClient.BASE_URL,
            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3), AsyncConnectionErrorRetryHandler()],
        )
        self.responder = Responder(
            core, ledger, self.client, ask_human=config.ask_human, handoff=config.triage_channel is not None
        )
        self.handoffs = (
            SlackHandoffs(
                core,
                self.client,
                config.triage_channel,
                SlackExperts(self.client, config.experts),
                public_url=config.public_url,
            )
            if config.triage_channel
            else None
        )
        poll = poll_seconds if poll_seconds is not None else max(0.5, ledger.lease_seconds / 2)
        self.worker = Worker(self.responder, ledger, PLATFORM, poll_seconds=poll)
        if config.concurrency is not None:
            self.worker.concurrency = config.concurrency
        self.feedback = SlackFeedback(core, self.client, offer_handoff=self.handoffs is not None)
        self.review = (
            SlackReview(
                core,
                self.client,
                ledger,
                config.review_channel,
                sample=config.review_sample,
                every_days=config.review_every_days,
                queue_url=f"{config.public_url.rstrip('/')}/dashboard/review" if config.public_url else None,
            )
            if config.review_channel
            else None
        )
        self.bolt = AsyncApp(
            client=self.client,
            signing_secret=config.signing_secret or "",
            request_verification_enabled=config.signing_secret is not None,
            process_before_response=True,
        )
        self._socket: AsyncSocketModeHandler | None = None
        self._listen()

    # --- mounting ----------------------------------------------------------------------------

    def mount(self, app: web.Application) -> None:
        """HTTP mode at /slack/events when a signing secret is set; Socket Mode when an app token is."""
        if self.config.signing_secret is not None:
            app.router.add_post(EVENTS_PATH, self._http)
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._stop)

    async def _http(self, request: web.Request) -> web.Response:
        response = await self.bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    async def _start(self, app: web.Application) -> None:
        if self.handoffs is not None:  # a public or shared triage channel: refuse to start, naming it
            await self.handoffs.check_channel()
        if self.config.answers_here:
            self.worker.start()
        if self.review is not None:
            self.review.start()
        if self.config.app_token is not None:
            self._socket = AsyncSocketModeHandler(self.bolt, self.config.app_token, web_client=self.client)
            await self._socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("Slack Socket Mode connected")

    async def _stop(self, app: web.Application) -> None:
        if self.review is not None:
            await self.review.stop()
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
        await self.worker.drain(self.drain_seconds)

    async def answer_until(self, stop: asyncio.Event, *, grace: Callable[[], float]) -> None:
        """The answering process's life: take questions from the ledger until `stop`, then drain for
        `grace()` seconds (0 when the server process is gone) and release what is left."""
        self.worker.start()
        await stop.wait()
        await self.worker.drain(grace())

    # --- listeners ---------------------------------------------------------------------------

    def _listen(self) -> None:
        self.bolt.event("app_mention")(self._on_mention)
        self.bolt.event("message")(self._on_message)
        self.bolt.event("app_home_opened")(self._on_home)
        self.bolt.event("assistant_thread_started")(self._on_assistant_thread)
        self.bolt.command("/candor")(self._on_command)
        self.feedback.listen(self.bolt)
        if self.handoffs is not None:
            self.handoffs.listen(self.bolt)
        if self.review is not None:
            self.review.listen(self.bolt)
        self.bolt.error(self._on_error)

    async def _on_mention(self, event: dict[str, Any], body: dict[str, Any], request: AsyncBoltRequest) -> None:
        thread = event.get("thread_ts")
        await self._question(
            event, body, reply_thread=thread or event["ts"], channel_type=event.get("channel_type"), request=request
        )

    async def _on_message(
        self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext, request: AsyncBoltRequest
    ) -> None:
        subtype = event.get("subtype")
        if subtype == "message_changed":
            await self._on_edit(event, body)
            return
        if subtype == "message_deleted":
            await self._on_delete(event, body)
            return
        if subtype not in (None, "file_share", "thread_broadcast") or event.get("bot_id"):
            return
        user, text = event.get("user"), event.get("text") or ""
        if user is None or user == context.bot_user_id:
            return
        channel_type, thread = event.get("channel_type"), event.get("thread_ts")
        if channel_type == "im":
            progress = "status" if thread else "reaction"
            await self._question(
                event, body, reply_thread=thread, channel_type="im", progress=progress, request=request
            )
            return
        if f"<@{context.bot_user_id}>" in text or not thread or thread == event.get("ts"):
            return  # a mention is answered from app_mention; a top-level message is not for the bot
        turns = await self.ledger.thread_turns(PLATFORM, _team(body, event), event["channel"], thread)
        if turns and (user == turns[0].asker or reads_as_question(text)):
            await self._question(event, body, reply_thread=thread, channel_type=channel_type, request=request)

    async def _question(
        self,
        event: dict[str, Any],
        body: dict[str, Any],
        *,
        reply_thread: str | None,
        channel_type: str | None,
        progress: str = "reaction",
        request: AsyncBoltRequest | None = None,
    ) -> None:
        job = Job(
            team=_team(body, event),
            channel=event["channel"],
            ts=event["ts"],
            user=event.get("user") or "",
            text=event.get("text") or "",
            thread_ts=event.get("thread_ts"),
            reply_thread=reply_thread,
            channel_type=channel_type,
            progress="status" if progress == "status" else "reaction",
        )
        try:
            await self._claim(job, body.get("event_id"))
        except StoreError as exc:
            await self._unclaimed(job, exc, _retry_number(request))
            raise

    async def _unclaimed(self, job: Job, exc: StoreError, retry: int) -> None:
        """The ledger is out of reach: the listener fails, so Bolt answers 500 and Slack sends the
        event again (up to three retries over about five minutes). The asker hears of it only when
        Slack's last retry fails too; until then a retry may still be answered normally."""
        log.error("could not claim a Slack question (retry %d): %s", retry, exc, extra={"key": job.key})
        if retry >= SLACK_LAST_RETRY:
            await self.responder.deliver_failure(job, None)

    async def _claim(self, job: Job, event_id: str | None, key: str | None = None) -> None:
        """Claim the job (an edit under its own key, outside the thread's turns) and start it."""
        claim = await self.ledger.claim(
            PLATFORM,
            key or job.key,
            job.as_payload(),
            event_id=event_id,
            question=job.text,
            team=job.team,
            conversation=job.channel,
            thread=None if job.original_key else job.thread_root,
            asker=job.user,
            hold=self.config.answers_here,
        )
        if claim is not None and self.config.answers_here:
            self.worker.submit(claim)

    async def _on_edit(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """An edited question is answered again, its answer replaced in place (`Responder`). The
        ledger decides when (`EventLedger.revise`): at once when it was answered; after the answer
        being written, by whichever replica writes it, when it is still being answered. Edits that
        leave the text as it was (an unfurl, a link preview) and older edits Slack delivers late
        change nothing; messages Candor never took as questions are not in the ledger."""
        message = event.get("message") or {}
        edited = (message.get("edited") or {}).get("ts")
        if not edited or not message.get("ts"):
            return
        thread, im = message.get("thread_ts"), event.get("channel_type") == "im"
        job = Job(
            team=_team(body, event),
            channel=event["channel"],
            ts=str(message["ts"]),
            user=message.get("user") or "",
            text=message.get("text") or "",
            thread_ts=thread,
            reply_thread=thread or (None if im else str(message["ts"])),
            channel_type=event.get("channel_type"),
            progress="status" if im and thread else "reaction",
        )
        claim = await self.ledger.revise(
            PLATFORM,
            job.key,
            job.as_payload(),
            question=job.text,
            revision=str(edited),
            event_id=body.get("event_id"),
            hold=self.config.answers_here,
        )
        if claim is not None and self.config.answers_here:
            self.worker.submit(claim)

    async def _on_delete(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        deleted = event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
        row = await self.ledger.mark_deleted(PLATFORM, f"{_team(body, event)}/{event['channel']}/{deleted}")
        for ts in ((row or {}).get("reply") or {}).get("ts") or ():
            try:
                await self.client.chat_delete(channel=event["channel"], ts=ts)
            except SlackApiError as exc:
                log.warning("could not delete the answer to a deleted question: %s", exc)
        for trace_id in (row or {}).get("trace_ids") or ():
            await self.responder.forget(trace_id)

    async def _on_home(self, event: dict[str, Any]) -> None:
        view = home_view(await self.core.knowledge_base_summary(), ask_human=self.config.ask_human)
        await self.client.views_publish(user_id=event["user"], view=view)

    async def _on_assistant_thread(self, event: dict[str, Any]) -> None:
        thread = event.get("assistant_thread") or {}
        await self.client.assistant_threads_setSuggestedPrompts(
            channel_id=thread["channel_id"], thread_ts=thread["thread_ts"], prompts=list(SUGGESTED_PROMPTS)
        )

    async def _on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """`/candor question`: answered privately through the command's `response_url`, which works
        where the bot is not a member (a channel it was never invited to, a DM between two people)."""
        text = (command.get("text") or "").strip()
        if not text:
            await ack("Ask me a question after the command, e.g. `/candor how do I request annual leave?`")
            return
        job = Job(
            team=command.get("team_id") or "",
            channel=command["channel_id"],
            ts=command.get("trigger_id") or "",
            user=command["user_id"],
            text=text,
            private=True,
            response_url=command.get("response_url") or None,
            progress="none",
        )
        await self._claim(job, None, key=f"{job.team}/command/{job.ts}")
        await ack("Looking that up… (only you will see the answer)")

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("Slack listener failed: %s", error, exc_info=error, extra={"event_id": body.get("event_id")})


def _retry_number(request: AsyncBoltRequest | None) -> int:
    values = request.headers.get("x-slack-retry-num", []) if request is not None else []
    try:
        return int(values[0]) if values else 0
    except ValueError:
        return 0


def _team(body: dict[str, Any], event: dict[str, Any]) -> str:
    return str(body.get("team_id") or event.get("team") or "")
