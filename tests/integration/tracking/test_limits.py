"""`QuestionLimits` on the real Postgres: questions per asker, conversation and anonymous address, shared
by every replica (two limiters on one database stand for two replicas)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from rag.errors import RateLimited
from rag.model.answers import Question
from rag.runtime import Candor
from rag.tracking.limits import QuestionLimits

HOUR = 3600


async def away_from_a_window_edge(window: int) -> None:
    """Counting must not cross into the next window mid-test: wait out the last 20 seconds of one."""
    left = window - time.time() % window
    if left < 20:
        await asyncio.sleep(left + 0.5)


def limits(candor: Candor, *, per_user: int = 3, per_conversation: int = 5) -> QuestionLimits:
    return QuestionLimits(
        candor.store.engine, per_user=per_user, per_conversation=per_conversation, window_seconds=HOUR
    )


def asked(asker: str | None, conversation: str | None = None, **more: object) -> Question:
    return Question("How many days of leave?", platform="slack", asker=asker, conversation=conversation, **more)  # type: ignore[arg-type]


async def test_an_asker_over_the_limit_is_refused_with_when_to_try_again(candor: Candor) -> None:
    await away_from_a_window_edge(HOUR)
    limiter, alice, bob = limits(candor), f"U{uuid.uuid4().hex[:8]}", f"U{uuid.uuid4().hex[:8]}"
    for _ in range(3):
        await limiter.admit(asked(alice))
    with pytest.raises(RateLimited) as refused:
        await limiter.admit(asked(alice))
    assert "you have asked more than 3 questions in 3600 seconds" in str(refused.value)
    assert 1 <= refused.value.retry_after <= HOUR
    assert f"try again in {refused.value.retry_after} seconds" in str(refused.value)
    await limiter.admit(asked(bob))  # someone else is still served


async def test_the_count_is_shared_by_replicas(candor: Candor) -> None:
    await away_from_a_window_edge(HOUR)
    one, two, asker = limits(candor), limits(candor), f"U{uuid.uuid4().hex[:8]}"
    await one.admit(asked(asker))
    await two.admit(asked(asker))
    await one.admit(asked(asker))
    with pytest.raises(RateLimited):
        await two.admit(asked(asker))


async def test_a_conversation_has_its_own_limit(candor: Candor) -> None:
    await away_from_a_window_edge(HOUR)
    limiter, channel = limits(candor), f"T1/C{uuid.uuid4().hex[:8]}"
    for _ in range(5):
        await limiter.admit(asked(f"U{uuid.uuid4().hex[:8]}", channel))
    with pytest.raises(RateLimited, match="this conversation has asked more than 5"):
        await limiter.admit(asked(f"U{uuid.uuid4().hex[:8]}", channel))


async def test_an_anonymous_browser_cannot_shed_its_count_with_a_new_cookie(candor: Candor) -> None:
    await away_from_a_window_edge(HOUR)
    limiter, address = limits(candor), f"198.51.100.{uuid.uuid4().int % 250}"
    address = f"{address}-{uuid.uuid4().hex[:6]}"  # unique per run of the suite
    for _ in range(3):
        await limiter.admit(Question("q", platform="web", asker=f"web-{uuid.uuid4().hex[:8]}", client_address=address))
    with pytest.raises(RateLimited):
        await limiter.admit(Question("q", platform="web", asker=f"web-{uuid.uuid4().hex[:8]}", client_address=address))


async def test_the_command_line_and_eval_are_not_limited_and_zero_means_none(candor: Candor) -> None:
    limiter, asker = limits(candor, per_user=1), f"U{uuid.uuid4().hex[:8]}"
    for platform in ("cli", "eval", "cli"):
        await limiter.admit(Question("q", platform=platform, asker=asker))  # type: ignore[arg-type]
    unlimited = limits(candor, per_user=0, per_conversation=0)
    for _ in range(5):
        await unlimited.admit(asked(asker, "T1/C1"))


async def test_the_table_keeps_digests_not_ids(candor: Candor) -> None:
    asker = f"U{uuid.uuid4().hex}"
    await limits(candor).admit(asked(asker, f"T1/{asker}"))
    async with candor.store.engine.connect() as connection:
        buckets = (await connection.execute(text("SELECT bucket FROM rate_counts"))).scalars().all()
    assert buckets and all(len(b) == 64 and asker not in b for b in buckets)


async def test_without_the_database_questions_are_let_through_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    engine = create_async_engine("postgresql+psycopg://candor@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    try:
        limiter = QuestionLimits(engine, per_user=1, per_conversation=1)
        with caplog.at_level(logging.WARNING, logger="candor.limits"):
            await limiter.admit(asked("U1", "T1/C1"))
            await limiter.admit(asked("U1", "T1/C1"))
    finally:
        await engine.dispose()
    assert any("rate limits not checked" in r.getMessage() for r in caplog.records)
