"""The answering process: `candor serve` acknowledges Slack events, a child process answers them.

Answers are CPU-bound between their awaits; in the process that acknowledges events they share the
event loop with the acknowledgements Slack waits for. With `CANDOR_SLACK_ANSWER_PROCESS` on (off by
default: on a 2-core machine the child competes for the same cores and acknowledgements were no
faster, see docs/slack.md), the server process records
each question in the event ledger with a lease that has already run out, and a child process
(`candor slack-worker`) polls the ledger every 0.1 s and answers. The ledger's lease protocol is
unchanged: several servers (replicas) each with their child share the work, and a child that dies
mid-answer leaves a lease that runs out for another to take.

`AnswerProcess` (in the server) starts the child, restarts it when it exits unexpectedly, and on
shutdown sends it SIGTERM and waits while it finishes the answers in flight. The child
(`run_answer_process`) stops on SIGTERM/SIGINT, and also when its parent is gone (a SIGKILLed
server): then it releases its work at once for another replica instead of finishing it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence

from aiohttp import web

from bot.server import settle_heap
from bot.slack.app import SlackAdapter
from bot.slack.config import slack_config
from rag import Candor

log = logging.getLogger("candor.slack")

POLL_SECONDS = 0.1
RESTART_DELAY_SECONDS = 1.0
ORPHAN_CHECK_SECONDS = 1.0
NICENESS = 10


class AnswerProcess:
    """The child process that answers, supervised from the server process."""

    def __init__(self, command: Sequence[str] | None = None, *, drain_seconds: float = 30.0) -> None:
        self.command = list(command or [sys.executable, "-m", "bot.cli", "slack-worker"])
        self.drain_seconds = drain_seconds
        self.process: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._supervisor: asyncio.Task[None] | None = None

    def mount(self, app: web.Application) -> None:
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._stop)

    async def _start(self, app: web.Application) -> None:
        await self._spawn()
        self._supervisor = asyncio.create_task(self._supervise(), name="slack:answer-process")

    async def _spawn(self) -> None:
        self.process = await asyncio.create_subprocess_exec(*self.command)
        log.info("Slack answer process started (pid %d)", self.process.pid)

    async def _supervise(self) -> None:
        while not self._stopping:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            log.error("the Slack answer process exited (code %s); starting another", code)
            await asyncio.sleep(RESTART_DELAY_SECONDS)
            if not self._stopping:
                await self._spawn()

    async def _stop(self, app: web.Application) -> None:
        self._stopping = True
        process = self.process
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), self.drain_seconds + 10)
            except TimeoutError:
                log.error("the Slack answer process did not stop in time; killing it")
                process.kill()
                await process.wait()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor


async def run_answer_process(candor: Candor, *, drain_seconds: float = 30.0) -> None:
    """The child's whole life: answer from the ledger until told to stop or orphaned."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICENESS)  # answering is background work: acknowledging comes first on a busy machine
    adapter = SlackAdapter(
        slack_config(candor.settings, answers_here=True), candor, candor.events, poll_seconds=POLL_SECONDS
    )
    settle_heap()
    stop = asyncio.Event()
    orphaned = False
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    parent = os.getppid()

    async def watch_parent() -> None:
        nonlocal orphaned
        while not stop.is_set():
            await asyncio.sleep(ORPHAN_CHECK_SECONDS)
            if os.getppid() != parent:
                log.error("the server process is gone: releasing unfinished answers for another replica")
                orphaned = True
                stop.set()

    watcher = asyncio.create_task(watch_parent())
    try:
        await adapter.answer_until(stop, grace=lambda: 0.0 if orphaned else drain_seconds)
    finally:
        watcher.cancel()
