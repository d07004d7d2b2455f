"""The review queue offered in Slack: a weekly sample of answers posted to a review channel, labelled
with a click per sentence (`SLACK_REVIEW_CHANNEL`).

Once a week (`CANDOR_REVIEW_EVERY_DAYS`), the first replica to claim the week in the event ledger
(platform `review`, key ``<channel>/<ISO week>``: one post per week whatever the number of replicas)
posts the opening message and, in its thread, the week's sample (`CANDOR_REVIEW_SAMPLE` answers and
their refusals, the same sample the dashboard's queue shows). Answers made with access groups are not
posted: the channel's readers may not hold them; the opening says how many were left for the
dashboard. A click stores the label at once (`Candor.store_review_label`, checked like any label),
with the clicker's name as the labeller, and the message shows who labelled the item how.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.server import ChatCore
from bot.slack.people import display_name, whisper
from bot.slack.review_blocks import (
    REVIEW_ACTION,
    abstention_message,
    answer_message,
    labelled,
    nothing_to_review,
    opening,
    read_value,
)
from bot.worker import EventClaims
from rag import AuditRequest
from rag.errors import AuditError, CandorError

log = logging.getLogger("candor.slack")

PLATFORM = "review"
CHECK_EVERY_SECONDS = 3600.0
FIRST_CHECK_SECONDS = 60.0
"""A replica that starts checks a minute later: start-up (and a rolling deploy) comes first."""


class SlackReview:
    def __init__(
        self,
        core: ChatCore,
        client: AsyncWebClient,
        ledger: EventClaims,
        channel: str,
        *,
        sample: int = 10,
        every_days: int = 7,
        queue_url: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.core = core
        self.client = client
        self.ledger = ledger
        self.channel = channel
        self.sample = sample
        self.every_days = every_days
        self.queue_url = queue_url
        self.clock = clock
        self.first_check_seconds = FIRST_CHECK_SECONDS
        self._task: asyncio.Task[None] | None = None

    def listen(self, bolt: AsyncApp) -> None:
        """Acknowledged at once; the label is stored after Slack has its 200 (a lazy listener: see
        `bot.slack.handoff.SlackHandoffs.listen`)."""
        bolt.action(re.compile(f"^{REVIEW_ACTION}"))(ack=_acknowledge, lazy=[self._on_label])

    def start(self) -> None:
        self._task = asyncio.create_task(self._weekly(), name="slack:review")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _weekly(self) -> None:
        await asyncio.sleep(self.first_check_seconds)
        while True:
            try:
                await self.post_due()
            except (CandorError, SlackApiError, OSError) as exc:
                log.error("the weekly review sample could not be posted (tried again within the hour): %s", exc)
            except Exception:  # a defect: logged with its traceback, and the schedule goes on
                log.exception("the weekly review sample failed unexpectedly (tried again within the hour)")
            await asyncio.sleep(CHECK_EVERY_SECONDS)

    def period(self, now: datetime) -> str:
        """The review period `now` falls in: a week (ISO) by default, else n-day blocks since 1970."""
        if self.every_days == 7:
            year, week, _ = now.isocalendar()
            return f"{year}-W{week:02d}"
        return f"d{int(now.timestamp() // 86400) // self.every_days}"

    async def post_due(self) -> bool:
        """Post this period's sample unless a replica has (True when this call posted it)."""
        now = self.clock()
        key = f"{self.channel}/{self.period(now)}"
        claim = await self.ledger.claim(
            PLATFORM, key, {"channel": self.channel}, question=None, conversation=self.channel
        )
        if claim is None:
            return False
        try:
            posted = await self._post(now)
        except BaseException:
            # handed back at once, not failed: the next check (any replica's) posts the week again
            await asyncio.shield(self.ledger.release(claim))
            raise
        await self.ledger.complete(claim, reply={"channel": self.channel, "ts": posted})
        return True

    async def _post(self, now: datetime) -> list[str]:
        since = now - timedelta(days=self.every_days)
        queue = await self.core.review_queue(AuditRequest(since, now, sample=self.sample, seed=self.period(now)))
        answers = [a for a in queue["answers"] if not a.get("restricted")]
        refusals = [a for a in queue["abstentions"] if not a.get("restricted")]
        held_back = len(queue["answers"]) + len(queue["abstentions"]) - len(answers) - len(refusals)
        if not answers and not refusals:
            sent = await self.client.chat_postMessage(channel=self.channel, text=nothing_to_review(self.every_days))
            return [str(sent["ts"])]
        text, blocks = opening(
            len(answers), len(refusals), days=self.every_days, held_back=held_back, queue_url=self.queue_url
        )
        top = await self.client.chat_postMessage(channel=self.channel, text=text, blocks=blocks)
        posted = [str(top["ts"])]
        for item_text, item_blocks in [*map(answer_message, answers), *map(abstention_message, refusals)]:
            sent = await self.client.chat_postMessage(
                channel=self.channel, thread_ts=posted[0], text=item_text, blocks=item_blocks, unfurl_links=False
            )
            posted.append(str(sent["ts"]))
        log.info("posted the review sample", extra={"answers": len(answers), "abstentions": len(refusals)})
        return posted

    async def _on_label(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        value = str(action.get("value") or "")
        item = read_value(value)
        user = body["user"]["id"]
        channel = (body.get("channel") or {}).get("id") or self.channel
        if not item:
            return
        label = {
            "trace_id": item["t"],
            "kind": item.get("k"),
            "position": item.get("p"),
            "part": item.get("q"),
            "label": item["l"],
            "labeller": f"{await display_name(self.client, user, body['user'])} (Slack)",
        }
        try:
            await self.core.store_review_label(label)
        except AuditError as exc:
            await self._whisper(channel, user, f"That label was not stored: {exc}")
            return
        except CandorError as exc:
            log.error("could not store a review label from Slack: %s", exc)
            await self._whisper(channel, user, "That label could not be stored right now; click again in a moment.")
            return
        message = body.get("message") or {}
        try:
            await self.client.chat_update(
                channel=channel,
                ts=message["ts"],
                text=message.get("text") or "Review",
                blocks=labelled(message.get("blocks") or [], value, label=item["l"], user=user),
            )
        except (SlackApiError, KeyError) as exc:
            log.warning("the review message could not show its label: %s", exc)

    async def _whisper(self, channel: str, user: str, text: str) -> None:
        await whisper(self.client, channel, user, text)


async def _acknowledge(ack: AsyncAck) -> None:
    await ack()
