"""`bot.slack.thread.ThreadReader` with the real `slack_sdk` client against the fake Slack on 127.0.0.1:
a thread read page by page up to the question, and every way Slack can refuse it ending in None and
one warning (the answer then goes on with the ledger's turns: tests/integration/slack/test_slack.py)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.thread import ThreadReader
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_events import message


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as running:
        yield running


def reader(fake: FakeSlack, *, max_pages: int = 5) -> ThreadReader:
    return ThreadReader(AsyncWebClient(token="xoxb-test", base_url=fake.api_url), page_size=2, max_pages=max_pages)


def thread(fake: FakeSlack, channel: str, replies: int) -> tuple[str, list[str]]:
    root = fake.said(message("Where do expense questions go?", user="U2", channel=channel))
    said = [fake.said(message(f"reply {n}", user="U3", channel=channel, thread_ts=root["ts"])) for n in range(replies)]
    return root["ts"], [root["ts"], *(m["ts"] for m in said)]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "candor.slack" and r.levelno == logging.WARNING]


async def test_the_thread_is_read_page_by_page_up_to_the_question(fake: FakeSlack) -> None:
    root, posted = thread(fake, "C1", 6)
    read = await reader(fake).read("C1", root, before=posted[5], key="T/C1/q")
    assert read is not None and [m["ts"] for m in read] == posted[:5]  # the question and later: not asked for
    calls = fake.calls_to("conversations.replies")
    assert [c.params.get("cursor") is not None for c in calls] == [False, True, True]
    assert {c.params["latest"] for c in calls} == {posted[5]} and {c.params["limit"] for c in calls} == {"2"}


@pytest.mark.parametrize("refusal", ["too long", "not a member", "private, not a member", "rate limited"])
async def test_a_thread_slack_will_not_give_is_none_with_one_warning(
    fake: FakeSlack, caplog: pytest.LogCaptureFixture, refusal: str
) -> None:
    channel = {"private, not a member": "G0PRIV"}.get(refusal, "C0OUT")
    root, posted = thread(fake, channel, 6)
    if refusal == "not a member":
        fake.channel(channel, member=False)
    elif refusal == "private, not a member":
        fake.channel(channel, member=False, is_private=True)
    elif refusal == "rate limited":
        fake.rate_limit("conversations.replies", retry_after=60)
    with caplog.at_level(logging.WARNING, logger="candor.slack"):
        read = await reader(fake, max_pages=2).read(channel, root, before=posted[-1], key="T/C/q")
    assert read is None
    (warning,) = warnings(caplog)
    expected = {
        "too long": "more than 4 messages before the question",
        "not a member": "not_in_channel",
        "private, not a member": "channel_not_found",
        "rate limited": "429 ratelimited",
    }[refusal]
    assert expected in warning and root in warning
    assert len(fake.calls_to("conversations.replies")) == (2 if refusal == "too long" else 1)  # no retry
