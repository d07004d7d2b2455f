"""Answering one claimed Slack question, after the event was acknowledged.

A `Job` is everything needed to answer a question, stored as the claim's payload in the event
ledger (`rag.tracking.events`), so that another replica can answer it when this one dies. The
`Responder` runs a job: it shows that work is under way (👀, or in an assistant thread its status,
stage by stage: bot/slack/progress.py), decides who can read the conversation, passes the thread's
earlier turns as history, asks the core, posts the Block Kit messages and records where they went.
`bot.worker.Worker` runs responders: leases, takeover, drain.

A slash command's answer goes to the command's `response_url`, which reaches the asker wherever
the command was typed, the bot a member there or not (a channel it was never invited to, a DM
between two people). Slack takes 5 posts there within 30 minutes; what it refuses (a takeover
after half an hour, an answer of more than 5 messages) goes by `chat.postEphemeral`, which works
only where the bot is a member.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.server import ChatCore
from bot.slack.blocks import SlackMessage, answer_messages, escape, failure_message, response_url_body
from bot.slack.history import thread_history
from bot.slack.progress import NoProgress, Progress, Reaction, ThreadStatus, quietly
from bot.slack.thread import ThreadReader
from bot.worker import EventClaims
from rag import Claim, Completion
from rag.errors import CandorError, QuestionError
from rag.model.answers import Audience, Question, Turn
from rag.model.progress import ProgressListener

log = logging.getLogger("candor.slack")

PLATFORM = "slack"
AUDIENCE_TTL_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class Job:
    """One question to answer, as the claim's payload stores it."""

    team: str
    channel: str
    ts: str
    """The question message's ts (for a slash command, the trigger id)."""
    user: str
    text: str
    thread_ts: str | None = None
    """The thread the question was asked in (None: top level)."""
    reply_thread: str | None = None
    """Where the answer goes: a thread ts, or None to answer in place (a DM)."""
    channel_type: str | None = None
    private: bool = False
    """A slash command: answered with an ephemeral message only the asker sees."""
    response_url: str | None = None
    """A slash command's `response_url`, where its answer goes (None in a claim stored before it
    was kept: answered by `chat.postEphemeral`)."""
    progress: Literal["reaction", "status", "none"] = "reaction"
    replaces: tuple[str, ...] = ()
    """An edited question: the ts of the answer messages to replace (set from `Claim.reply` when the
    claim is a revision)."""
    original_key: str | None = None
    """An edit claimed under a key of its own (`<key>/edit/<edited ts>`, before edits became revisions
    of the question's row; such claims may still be in the ledger): the original question's key."""

    @property
    def key(self) -> str:
        return f"{self.team}/{self.channel}/{self.ts}"

    @property
    def thread_root(self) -> str:
        """The thread this question belongs to, as the ledger records it (its own ts at top level)."""
        return self.thread_ts or self.ts

    def as_payload(self) -> dict[str, Any]:
        return {**asdict(self), "replaces": list(self.replaces)}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Job:
        fields = {k: v for k, v in payload.items() if k in cls.__dataclass_fields__}
        fields["replaces"] = tuple(fields.get("replaces") or ())
        return cls(**fields)


class Responder:
    """Runs one job against the core and the Slack Web API."""

    def __init__(
        self,
        core: ChatCore,
        ledger: EventClaims,
        client: AsyncWebClient,
        *,
        ask_human: str | None = None,
        handoff: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.ledger = ledger
        self.client = client
        self.ask_human = ask_human
        self.handoff = handoff
        """Answers that may want a person carry an "Ask a person" button (a triage channel is set)."""
        self.clock = clock
        self._audiences: dict[str, tuple[float, Audience]] = {}
        self.thread = ThreadReader(client)
        """Reads the thread of a follow-up (`conversations.replies`), never waiting out a rate limit."""

    async def run(self, claim: Claim) -> None:
        """Answer the claim, then each edit of the question that arrived meanwhile (the newest text
        only, replacing the answer just posted: `EventLedger.complete` hands it on)."""
        current: Claim | None = claim
        while current is not None:
            job = Job.from_payload(current.payload)
            progress = self._progress(job)
            await progress.start()
            try:
                current = await self._answer(current, job, progress.heard)
            finally:
                await progress.stop()

    async def abandoned(self, claim: Claim) -> None:
        """The question was given up (every replica that took it stopped before answering): say so
        in its thread, and take away the 👀 a dead replica may have left."""
        job = Job.from_payload(claim.payload)
        await self._progress(job).stop()
        await self.deliver_failure(job, None)

    async def _answer(self, claim: Claim, job: Job, progress: ProgressListener | None = None) -> Claim | None:
        """Answer one job (`progress` hears each stage); the edit to answer next, if one came meanwhile."""
        if claim.revision is not None:  # an edited question: its answer replaces the one given
            job = replace(job, replaces=tuple(claim.reply.get("ts") or ()))
        trace_id: str | None = None
        try:
            question = Question(
                job.text,
                asker=job.user,
                platform="slack",
                conversation=f"{job.team}/{job.channel}",
                thread=job.thread_root,
                history=await self._history(job),
                audience=await self.audience(job.channel, job.channel_type),
                private_reply=job.private,
                progress=progress,
            )
            answer = await self.core.answer(question)
            trace_id = answer.trace_id
            messages = answer_messages(answer, ask_human=self.ask_human, handoff=self.handoff)
            posted = await self._deliver(job, messages, trace_id)
        except QuestionError as exc:
            await self._deliver(job, [SlackMessage(escape(f"I couldn't take that question: {exc}."), ())])
            return _edit_next(await self.ledger.complete(claim, failed=True, error=str(exc)))
        except Exception as exc:  # CandorError, Slack, the network, or a defect: the asker hears of it
            expected = isinstance(exc, CandorError | SlackApiError | OSError)
            log.error(
                "answering a Slack question failed (trace %s): %s",
                trace_id,
                exc,
                exc_info=not expected,
                extra={"key": claim.key, "trace_id": trace_id},
            )
            await self.deliver_failure(job, trace_id)
            return _edit_next(await self.ledger.complete(claim, trace_id=trace_id, failed=True, error=str(exc)))
        reply = {"channel": job.channel, "ts": posted, "answer_text": answer.text, "route": answer.route}
        completion = await self.ledger.complete(claim, trace_id=trace_id, reply=reply)
        if completion is None:
            await self._superseded(claim, job, posted, trace_id)
        if job.original_key is not None:
            await self.ledger.update_reply(PLATFORM, job.original_key, reply, trace_id=trace_id, question=job.text)
        return _edit_next(completion)

    async def _superseded(self, claim: Claim, job: Job, posted: Sequence[str], trace_id: str | None) -> None:
        """The claim was lost while answering: the question was deleted meanwhile (remove the answer
        just posted, and its text from the trace), or another replica took it over (two answers may
        show; logged)."""
        row = await self.ledger.get(PLATFORM, claim.key)
        if row is not None and row["status"] == "deleted":
            for ts in posted:
                await quietly(self.client.chat_delete(channel=job.channel, ts=ts), "chat.delete")
            if trace_id is not None:
                await self.forget(trace_id)
            return
        log.warning("another replica took this question over while it was answered here", extra={"key": claim.key})

    async def forget(self, trace_id: str) -> None:
        """The question was deleted in Slack: its text leaves the trace too (a failure is logged; the
        retention purge removes it later)."""
        try:
            await self.core.forget(trace_id)
        except CandorError as exc:
            log.error("could not remove the text of a deleted question: %s", exc, extra={"trace_id": trace_id})

    async def audience(self, channel: str, channel_type: str | None = None) -> Audience:
        """Who can read the channel; when Slack cannot say, the safe answer: public."""
        if channel_type == "im":
            return "direct"
        cached = self._audiences.get(channel)
        if cached is not None and self.clock() - cached[0] < AUDIENCE_TTL_SECONDS:
            return cached[1]
        try:
            info = (await self.client.conversations_info(channel=channel)).get("channel") or {}
        except SlackApiError as exc:
            log.warning("conversations.info failed for %s (%s): answering as in a public channel", channel, exc)
            return "public"
        audience = _audience_of(info)
        self._audiences[channel] = (self.clock(), audience)
        return audience

    async def _history(self, job: Job) -> tuple[Turn, ...]:
        """The thread before the question: the ledger's questions and answers, merged with what
        people said around them as Slack has it (`bot.slack.history`); the ledger's alone when
        Slack cannot say."""
        if job.thread_ts is None:
            return ()
        turns = await self.ledger.thread_turns(PLATFORM, job.team, job.channel, job.thread_ts)
        messages = await self.thread.read(job.channel, job.thread_ts, before=job.ts, key=job.key)
        return thread_history(turns, messages, before=job.ts, skip=(job.key, job.original_key))

    async def _deliver(self, job: Job, messages: Sequence[SlackMessage], trace_id: str | None = None) -> list[str]:
        """Post (or replace, or whisper) the messages; the ts of what now shows the answer (none for
        a whisper: an ephemeral message cannot be edited or deleted later)."""
        if job.private:
            await self._whisper(job, messages, trace_id)
            return []
        posted: list[str] = []
        for i, message in enumerate(messages):
            blocks = list(message.blocks) or None
            if i < len(job.replaces):
                await self.client.chat_update(channel=job.channel, ts=job.replaces[i], text=message.text, blocks=blocks)
                posted.append(job.replaces[i])
            else:
                sent = await self.client.chat_postMessage(
                    channel=job.channel,
                    thread_ts=job.reply_thread,
                    text=message.text,
                    blocks=blocks,
                    unfurl_links=False,
                    unfurl_media=False,
                )
                posted.append(str(sent["ts"]))
        for stale in job.replaces[len(messages) :]:
            await quietly(self.client.chat_delete(channel=job.channel, ts=stale), "chat.delete")
        return posted

    async def _whisper(self, job: Job, messages: Sequence[SlackMessage], trace_id: str | None) -> None:
        """A slash command's messages, seen by the asker only: through its `response_url`, and what
        that refuses by `chat.postEphemeral` (whose failure propagates, for the caller to log)."""
        unsent = messages
        if job.response_url is not None:
            unsent = await self._respond(job, job.response_url, messages, trace_id)
        for message in unsent:
            await self.client.chat_postEphemeral(
                channel=job.channel, user=job.user, text=message.text, blocks=list(message.blocks) or None
            )

    async def _respond(
        self, job: Job, url: str, messages: Sequence[SlackMessage], trace_id: str | None
    ) -> Sequence[SlackMessage]:
        """Post the messages to `url` in order; those not taken, from the first it refused (once it
        has refused one, expired or used up, it will refuse the rest)."""
        for i, message in enumerate(messages):
            refused = await post_to_response_url(url, message)
            if refused is not None:
                log.warning(
                    "a slash command's response_url refused message %d of %d (%s): sending the rest with "
                    "chat.postEphemeral, which works only where the bot is a member",
                    i + 1,
                    len(messages),
                    refused,
                    extra={"key": job.key, "trace_id": trace_id},
                )
                return messages[i:]
        return ()

    async def deliver_failure(self, job: Job, trace_id: str | None) -> None:
        try:
            await self._deliver(job, [failure_message(trace_id, handoff=self.handoff)], trace_id)
        except (SlackApiError, OSError) as exc:
            log.error(
                "could not tell the asker that answering failed (trace %s): %s",
                trace_id,
                exc,
                extra={"key": job.key, "trace_id": trace_id},
            )

    def _progress(self, job: Job) -> Progress:
        """How the job shows it is under way: 👀 in a channel, the status of an assistant thread."""
        if job.progress == "reaction" and not job.private:
            return Reaction(self.client, job.channel, job.ts)
        if job.progress == "status" and job.thread_ts:
            return ThreadStatus(self.client, job.channel, job.thread_ts)
        return NoProgress()


def _edit_next(completion: Completion | None) -> Claim | None:
    return completion.revision if completion is not None else None


def _audience_of(info: Mapping[str, Any]) -> Audience:
    if info.get("is_im"):
        return "direct"
    if info.get("is_ext_shared") or info.get("is_shared") or info.get("is_pending_ext_shared"):
        return "shared"
    if info.get("is_private") or info.get("is_mpim") or info.get("is_group"):
        return "private"
    return "public"


async def post_to_response_url(url: str, message: SlackMessage) -> str | None:
    """Post one message to a `response_url`, ephemeral; None when Slack took it, else why not: the
    status and Slack's reason (`expired_url` past 30 minutes, `used_url` past 5 posts) or the
    network error. Never raises for Slack's or the network's sake: the caller decides what next."""
    try:
        sent = await AsyncWebhookClient(url).send_dict(response_url_body(message))
    except (aiohttp.ClientError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if sent.status_code == 200 else f"{sent.status_code} {sent.body}".strip()
