"""Faults on the production shape (tests/cluster.py): two `candor serve` replicas on a standalone
Postgres, Slack and Teams faked, a model writer faked. Each test injects one fault while questions
are being answered and checks what the users saw and what was stored: every question answered
exactly once, every vote stored, and a clear message wherever a fault could not be hidden.
`benchmarks/faults.py` runs all of them together under load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from bot.render.wording import FAILURE_NOTE
from tests.cluster import (
    Asked,
    Cluster,
    Deliverer,
    cluster,
    new_question,
    slack_answers,
    teams_answers,
)
from tests.fakes.bot_connector import Call as TeamsCall
from tests.fakes.slack_api import Call as SlackCall

pytestmark = pytest.mark.slow

QUESTIONS = [
    "How many vacation days do employees get?",
    "How much is the home office stipend?",
    "Who approves expense reports?",
    "What is the parental leave policy?",
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("cluster"), replicas=2, writer_delay=0.2, lease_seconds=4) as running:
        yield running


def answers(made: Cluster) -> dict[str, list[SlackCall] | list[TeamsCall]]:
    return {**slack_answers(made.slack), **teams_answers(made.teams)}


def text_of(call: SlackCall | TeamsCall) -> str:
    return str(call.params.get("text", "")) if isinstance(call, SlackCall) else str(call.body.get("text", ""))


async def answered(made: Cluster, asked: list[Asked], within: float = 120.0) -> dict[str, SlackCall | TeamsCall]:
    """Each question's first answer, once every question has one."""
    deadline = time.monotonic() + within
    while True:
        found = answers(made)
        if all(a.key in found for a in asked):
            return {a.key: found[a.key][0] for a in asked}
        assert time.monotonic() < deadline, f"unanswered: {[a.text for a in asked if a.key not in found]}"
        await asyncio.sleep(0.25)


def questions(first: int, count: int) -> list[Asked]:
    return [
        new_question(n, "slack" if n % 2 == 0 else "teams", QUESTIONS[n % len(QUESTIONS)])
        for n in range(first, first + count)
    ]


async def settle(made: Cluster, seconds: float) -> None:
    """Wait until nothing was delivered for `seconds` (past a lease: a duplicate would show by then)."""
    last, quiet_since = -1, time.monotonic()
    while time.monotonic() - quiet_since < seconds:
        now = len(made.slack.calls) + len(made.teams.calls)
        if now != last:
            last, quiet_since = now, time.monotonic()
        await asyncio.sleep(0.25)


def assert_once_each(made: Cluster, asked: list[Asked]) -> None:
    found = answers(made)
    counts = {a.text + a.key: len(found.get(a.key, [])) for a in asked}
    assert all(n == 1 for n in counts.values()), counts
    failures = [a.key for a in asked if any(text_of(m).startswith(FAILURE_NOTE[:40]) for m in found[a.key])]
    assert failures == []


async def test_a_postgres_restart_while_answering_loses_no_question_and_no_vote(made: Cluster) -> None:
    asked = questions(0, 12)
    before = made.count("SELECT count(*) FROM feedback")
    async with Deliverer(made.replicas, made.teams.service_url) as deliverer:
        await asyncio.gather(*(deliverer.ask(a) for a in asked[:6]))
        restarting = asyncio.create_task(asyncio.to_thread(made.restart_postgres))  # answers are under way
        await asyncio.sleep(0.2)
        await asyncio.gather(*(deliverer.ask(a) for a in asked[6:]))  # some arrive while it is down
        await restarting
        assert all(a.acked is not None for a in asked), [a.statuses for a in asked]
        first = await answered(made, asked)
        # votes right after the restart, on every answer, from both platforms
        votes = await asyncio.gather(*(deliverer.vote(a, first[a.key]) for a in asked))
    assert [v.status for v in votes] == [200] * len(asked)
    await settle(made, 6)
    assert_once_each(made, asked)
    deadline = time.monotonic() + 30  # a vote the restart spooled is written by the replay (every 2 s)
    stored = made.count("SELECT count(*) FROM feedback") - before
    while stored < len(asked) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        stored = made.count("SELECT count(*) FROM feedback") - before
    assert stored == len(asked)


async def test_a_replica_killed_mid_answer_leaves_its_questions_to_the_other(made: Cluster) -> None:
    victim = made.replicas[0]
    made.writer.fake.delay = 3.0  # answers stay in flight long enough to be cut off
    try:
        asked = questions(100, 8)
        async with Deliverer([victim], made.teams.service_url) as deliverer:  # all claimed by the victim
            await asyncio.gather(*(deliverer.ask(a) for a in asked))
        assert all(a.acked is not None for a in asked)
        await asyncio.sleep(1.0)
        victim.kill()
        taken_before = made.count("SELECT count(*) FROM platform_events WHERE attempt > 1")
        await answered(made, asked, within=90)  # the other replica takes them over when their leases end
        await settle(made, 6)
        assert_once_each(made, asked)
        assert made.count("SELECT count(*) FROM platform_events WHERE attempt > 1") > taken_before
    finally:
        made.writer.fake.delay = 0.2
        victim.start()


async def test_with_the_writer_down_answers_come_from_the_offline_writer_and_the_model_returns(made: Cluster) -> None:
    def writer_gates() -> dict[bool, int]:
        rows = made.sql("SELECT passed, count(*) FROM gate_outcomes WHERE gate = 'writer' GROUP BY passed")
        return {row[0] == "t": int(row[1]) for row in rows}

    before = writer_gates()
    made.writer.down()
    try:
        down = questions(200, 2)
        async with Deliverer(made.replicas, made.teams.service_url) as deliverer:
            await asyncio.gather(*(deliverer.ask(a) for a in down))
            first = await answered(made, down)
    finally:
        made.writer.up()
    assert not any(text_of(call).startswith(FAILURE_NOTE[:40]) for call in first.values())
    assert writer_gates().get(False, 0) == before.get(False, 0) + 2  # the extractive writer answered, recorded
    back = questions(300, 2)
    async with Deliverer(made.replicas, made.teams.service_url) as deliverer:
        await asyncio.gather(*(deliverer.ask(a) for a in back))
        await answered(made, back)
    assert writer_gates().get(True, 0) >= before.get(True, 0) + 2  # the model writes again
    assert_once_each(made, down + back)
