"""`bot.worker.Worker` over the real event ledger: what it does with an answer that raises."""

from __future__ import annotations

import asyncio
import uuid

from bot.worker import Worker
from rag.runtime import Candor
from rag.tracking.events import Claim, EventLedger


class Crashing:
    """A responder with a defect: it raises what no adapter expects."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, claim: Claim) -> None:
        self.runs += 1
        raise AttributeError("'TeamsAdapter' object has no attribute '_keep_typing'")


async def test_an_unexpected_error_fails_the_question_instead_of_passing_it_round(candor: Candor) -> None:
    platform = f"worker-{uuid.uuid4().hex[:8]}"
    ledger = EventLedger(candor.store.engine, lease_seconds=0.3)
    responder = Crashing()
    worker = Worker(responder, ledger, platform, poll_seconds=0.1)
    worker.start()
    try:
        claim = await ledger.claim(platform, "k1", {"text": "hello"})
        assert claim is not None
        await worker.submit(claim)
        await asyncio.sleep(1.0)  # several polls, each past the lease
    finally:
        await worker.drain(1.0)
    row = await ledger.get(platform, "k1")
    assert row is not None and row["status"] == "failed"
    assert "AttributeError" in row["error"] and "_keep_typing" in row["error"]
    assert responder.runs == 1
