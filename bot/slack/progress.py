"""Showing that a Slack question is being answered, in each place's own way.

In a channel: 👀 on the question while it is answered, and nothing else (no messages: a channel is
not told about stages). In an assistant thread: the thread's status (`assistant.threads.setStatus`),
"is thinking…" at once, then the stage the core says is running ("is searching the documents…",
"is checking 4 sentences…"), and cleared at the end. A slash command's answer shows nothing
until it comes.

Slack shows the status after the app's name, and limits how often it may be set: a status is set
at most once a second per thread (`STATUS_EVERY_SECONDS`); stages that come faster wait, and the
latest replaces those still waiting (`Coalescer`). The stages carry counts, never draft text (the
critic decides what is delivered), and every failure is cosmetic: logged, never fatal to the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from rag.model.progress import Stage

log = logging.getLogger("candor.slack")

THINKING_REACTION = "eyes"
THINKING_STATUS = "is thinking…"
STATUS_EVERY_SECONDS = 1.0
"""The least time between two status updates of one thread."""


class Progress(Protocol):
    """How one answer shows that it is under way: started, told each stage, stopped."""

    async def start(self) -> None: ...

    def heard(self, stage: Stage) -> None: ...

    async def stop(self) -> None: ...


class NoProgress:
    """A slash command's answer: nothing shows until it comes."""

    async def start(self) -> None:
        pass

    def heard(self, stage: Stage) -> None:
        pass

    async def stop(self) -> None:
        pass


class Reaction:
    """👀 on the question while it is answered; stages are not shown in a channel."""

    def __init__(self, client: AsyncWebClient, channel: str, ts: str) -> None:
        self.client, self.channel, self.ts = client, channel, ts

    async def start(self) -> None:
        added = self.client.reactions_add(channel=self.channel, timestamp=self.ts, name=THINKING_REACTION)
        await quietly(added, "reactions.add")

    def heard(self, stage: Stage) -> None:
        pass

    async def stop(self) -> None:
        removed = self.client.reactions_remove(channel=self.channel, timestamp=self.ts, name=THINKING_REACTION)
        await quietly(removed, "reactions.remove")


def status_text(stage: Stage) -> str:
    """The stage as an assistant thread's status, read after the app's name ("is ranking 24 passages…")."""
    phrase = stage.phrase
    return f"is {phrase[:1].lower()}{phrase[1:]}…"


class Coalescer:
    """When a status may be set: at most once every `every` seconds. One offered sooner waits, a
    newer one replaces it (the latest wins), and one equal to what shows is dropped. Sends nothing
    itself: the caller asks how long to `wait`, then `take`s what to send."""

    def __init__(self, every: float = STATUS_EVERY_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self.pending: str | None = None
        self.shown: str | None = None
        self._sent_at: float | None = None

    def offer(self, text: str) -> None:
        self.pending = None if text == self.shown else text

    def sent(self, text: str) -> None:
        """`text` was set just now (outside `take`: the first status)."""
        self.shown, self._sent_at = text, self.clock()
        if self.pending == text:
            self.pending = None

    def wait(self) -> float | None:
        """Seconds until the waiting status may be set (0: now); None when none waits."""
        if self.pending is None:
            return None
        if self._sent_at is None:
            return 0.0
        return max(0.0, self._sent_at + self.every - self.clock())

    def take(self) -> str | None:
        """The waiting status, if it may be set now (it counts as sent); else None."""
        text = self.pending
        if text is None or self.wait() != 0.0:
            return None
        self.pending = None
        self.sent(text)
        return text


class ThreadStatus:
    """An assistant thread's status while one answer is made: "is thinking…", then each stage the
    core reports (coalesced), cleared at the end. A status Slack refuses stops the stage updates
    of this answer (the thread may not be an assistant thread); the clear is still sent."""

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        *,
        every: float = STATUS_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.channel, self.thread_ts = client, channel, thread_ts
        self._coalescer = Coalescer(every, clock)
        self._wake = asyncio.Event()
        self._closing = asyncio.Event()
        self._publisher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if await self._set(THINKING_STATUS):
            self._coalescer.sent(THINKING_STATUS)
            self._publisher = asyncio.create_task(self._publish(), name=f"slack status {self.thread_ts}")

    def heard(self, stage: Stage) -> None:
        """The core's progress listener: cheap, never raises; the publisher sets the status."""
        if self._publisher is None or self._closing.is_set():
            return
        self._coalescer.offer(status_text(stage))
        self._wake.set()

    async def stop(self) -> None:
        """No more stages (a status still waiting is dropped); the status is cleared."""
        self._closing.set()
        self._wake.set()
        if self._publisher is not None:
            try:
                await self._publisher
            except Exception:  # a defect in the publisher: the status is cosmetic, the answer is not
                log.exception("the assistant thread's status updates failed")
            self._publisher = None
        await self._set("")

    async def _publish(self) -> None:
        while not self._closing.is_set():
            wait = self._coalescer.wait()
            if wait is None:
                await self._wake.wait()
                self._wake.clear()
            elif wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), timeout=wait)
            else:
                text = self._coalescer.take()
                if text is not None and not await self._set(text):
                    return  # refused: no more stage updates for this answer

    async def _set(self, status: str) -> bool:
        call = self.client.assistant_threads_setStatus(channel_id=self.channel, thread_ts=self.thread_ts, status=status)
        return await quietly(call, "assistant.threads.setStatus")


async def quietly(call: Awaitable[Any], what: str) -> bool:
    """A cosmetic call (a reaction, a status): whether it was made; its failure is logged, never
    fatal to the answer."""
    try:
        await call
    except (SlackApiError, OSError) as exc:
        log.warning("%s failed: %s", what, exc)
        return False
    return True
