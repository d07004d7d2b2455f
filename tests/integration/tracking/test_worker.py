"""`bot.worker.Worker` over the real event ledger: what it does with an answer that raises."""

from __future__ import annotations

import asyncio
import uuid

from bot.worker import Worker
from rag.runtime import Candor
from rag.tracking.claims import Claim
from rag.tracking.events import EventLedger


class Crashing:
    """A responder with a defect: it raises what no adapter expects."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, claim: Claim) -> None:
        self.runs += 1
        raise AttributeError("'TeamsAdapter' object has no attribute '_keep_typing'")

    async def abandoned(self, claim: Claim) -> None:
        raise AssertionError("a failed question is not given up: it was never abandoned")


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


class Recording:
    """A replica's responder that records what it is asked to do."""

    def __init__(self) -> None:
        self.runs = 0
        self.abandoned_keys: list[str] = []

    async def run(self, claim: Claim) -> None:
        self.runs += 1

    async def abandoned(self, claim: Claim) -> None:
        self.abandoned_keys.append(claim.key)


async def test_a_question_given_up_is_announced_once_by_one_of_the_replicas(candor: Candor) -> None:
    platform = f"worker-{uuid.uuid4().hex[:8]}"
    responders = [Recording(), Recording()]
    workers = [
        Worker(
            responder, EventLedger(candor.store.engine, lease_seconds=0.3, max_attempts=1), platform, poll_seconds=0.1
        )
        for responder in responders
    ]
    dead = EventLedger(candor.store.engine, owner="dead", lease_seconds=0.3)  # takes it and dies
    assert await dead.claim(platform, "k1", {"text": "hello"}) is not None
    for worker in workers:
        worker.start()
    try:
        for _ in range(40):
            if any(r.abandoned_keys for r in responders):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # further polls by both replicas
    finally:
        for worker in workers:
            await worker.drain(1.0)
    told = [key for r in responders for key in r.abandoned_keys]
    assert told == ["k1"]
    assert sum(r.runs for r in responders) == 0  # the one attempt allowed was the dead replica's
    row = await dead.get(platform, "k1")
    assert row is not None and row["status"] == "failed" and "given up after 1 attempts" in row["error"]
