"""Jobs in flight for a chat adapter: lease renewal, takeover of expired claims, drain on shutdown.

A chat adapter claims each question in the event ledger (`rag.tracking.events`) and hands the claim
to a `Worker`, which runs the adapter's responder on it while renewing the claim's lease, polls
the ledger for claims whose replica died (their lease ran out) and takes them over, and on
shutdown lets the answers in flight finish for a grace period, then releases the rest for another
replica at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag import Claim, Completion, ThreadTurn
from rag.errors import StoreError

log = logging.getLogger("candor.worker")


class EventClaims(Protocol):
    """The event ledger (`rag.tracking.events.EventLedger`)."""

    lease_seconds: float

    async def claim(
        self,
        platform: str,
        key: str,
        payload: Mapping[str, Any],
        *,
        event_id: str | None = None,
        question: str | None = None,
        team: str | None = None,
        conversation: str | None = None,
        thread: str | None = None,
        asker: str | None = None,
        hold: bool = True,
    ) -> Claim | None: ...

    async def renew(self, claim: Claim) -> bool: ...

    async def complete(
        self,
        claim: Claim,
        *,
        trace_id: str | None = None,
        reply: Mapping[str, Any] | None = None,
        failed: bool = False,
        error: str | None = None,
    ) -> Completion | None: ...

    async def revise(
        self,
        platform: str,
        key: str,
        payload: Mapping[str, Any],
        *,
        question: str,
        revision: str,
        event_id: str | None = None,
        hold: bool = True,
    ) -> Claim | None: ...

    async def expired(self, platform: str, *, limit: int = 10) -> list[Claim]: ...

    async def get(self, platform: str, key: str) -> dict[str, Any] | None: ...

    async def update_reply(
        self,
        platform: str,
        key: str,
        reply: Mapping[str, Any],
        *,
        trace_id: str | None = None,
        question: str | None = None,
    ) -> bool: ...

    async def mark_deleted(self, platform: str, key: str) -> dict[str, Any] | None: ...

    async def by_reply(self, platform: str, fragment: Mapping[str, Any]) -> dict[str, Any] | None: ...

    async def thread_turns(
        self, platform: str, team: str | None, conversation: str, thread: str, *, limit: int = 20
    ) -> list[ThreadTurn]: ...

    async def release(self, claim: Claim) -> None: ...


class Responder(Protocol):
    async def run(self, claim: Claim) -> None: ...

    async def abandoned(self, claim: Claim) -> None:
        """Tell the asker that their question was given up (`Claim.given_up`): no replica could answer it."""
        ...


@dataclass(slots=True)
class Worker:
    """Jobs in flight, lease renewal, takeover of expired claims, and the drain on shutdown."""

    responder: Responder
    ledger: EventClaims
    platform: str
    poll_seconds: float = 5.0
    concurrency: int = field(default_factory=lambda: os.cpu_count() or 2)
    """Answers made at once. The pipeline is CPU-bound between its awaits: more answers in parallel
    than cores only slow each other down, and delay the acknowledgements the event loop owes the platform."""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _poller: asyncio.Task[None] | None = None
    _slots: asyncio.Semaphore | None = None

    def submit(self, claim: Claim, run: Callable[[Claim], Awaitable[None]] | None = None) -> asyncio.Task[None]:
        """Answer the claim in the background (with `run`, not the responder, when given); the task
        may be awaited by a caller that must answer within its request."""
        task = asyncio.create_task(self._run(claim, run or self.responder.run), name=f"{self.platform}:{claim.key}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _run(self, claim: Claim, run: Callable[[Claim], Awaitable[None]]) -> None:
        renewing = asyncio.create_task(self._renew(claim))  # a claim waiting for a slot stays ours
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        try:
            async with self._slots:
                await run(claim)
        except asyncio.CancelledError:
            with contextlib.suppress(StoreError):
                await self.ledger.release(claim)  # unfinished at shutdown: another replica answers it now
            raise
        except Exception as exc:  # the responder handles what it expects: this one is failed, not retried
            log.exception("unexpected error answering a question", extra={"key": claim.key})
            with contextlib.suppress(StoreError):
                await self.ledger.complete(claim, failed=True, error=f"unexpected error: {type(exc).__name__}: {exc}")
        finally:
            renewing.cancel()

    async def _renew(self, claim: Claim) -> None:
        while True:
            await asyncio.sleep(self.ledger.lease_seconds / 3)
            try:
                if not await self.ledger.renew(claim):
                    return
            except StoreError as exc:
                log.warning("could not renew the lease on %s: %s", claim.key, exc)

    def start(self) -> None:
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll(), name=f"{self.platform}:takeover")

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            try:
                for claim in await self.ledger.expired(self.platform):
                    if claim.given_up:
                        self.submit(claim, self.responder.abandoned)
                        continue
                    log.info("taking a question from the ledger", extra={"key": claim.key, "attempt": claim.attempt})
                    self.submit(claim)
            except StoreError as exc:
                log.warning("could not look for abandoned questions: %s", exc)

    async def drain(self, grace_seconds: float) -> None:
        """Stop taking over; let the jobs in flight finish for up to `grace_seconds`, then release the rest."""
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        if not self.tasks:
            return
        _, pending = await asyncio.wait(set(self.tasks), timeout=grace_seconds)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
            log.warning("released %d unfinished answers for another replica", len(pending))
