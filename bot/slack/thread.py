"""Reading a thread's messages from Slack (`conversations.replies`), for a follow-up's history.

The bot token reads a thread where the bot is a member, with the history scope of the conversation
(`channels:history`, `groups:history`, `im:history`, `mpim:history`; all in `manifest.yml`). Slack
returns a thread oldest first, a page at a time; the reader asks only for what was posted before
the question (`latest`) and reads at most `MAX_PAGES` pages of `PAGE_SIZE`.

History is a help, never a condition: when Slack will not say (not a member, a missing scope, a
rate limit, the network, a thread longer than the reader reads), `read` logs one warning and
returns None, and the follow-up is read with the ledger's questions and answers alone. So a rate
limit is not waited out: this reader's client has no rate-limit retry (the answer's client does),
and the whole read has `READ_SECONDS`. Nothing read is kept: each question reads its own thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("candor.slack")

PAGE_SIZE = 200
"""Messages asked for per call (Slack allows up to 1,000; 15 for a commercially distributed app
outside the Marketplace, which also gets one call a minute: a longer thread falls back)."""
MAX_PAGES = 5
"""Calls per question: a thread with more messages before the question falls back to the ledger."""
READ_SECONDS = 5.0
"""The whole read, every page: past it the answer goes on without the thread."""


class _TooLong(Exception):
    """The thread has more messages before the question than the reader reads."""


class ThreadReader:
    """`conversations.replies` for one question at a time, on a client of its own that shares the
    answer client's token and address but never waits out a rate limit."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        page_size: int = PAGE_SIZE,
        max_pages: int = MAX_PAGES,
        seconds: float = READ_SECONDS,
    ) -> None:
        if page_size < 1 or max_pages < 1 or seconds <= 0:
            raise ValueError("page_size, max_pages and seconds must be positive")
        self.client = AsyncWebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=max(1, int(seconds)),
            ssl=client.ssl,
            proxy=client.proxy,
            headers=client.headers,
            retry_handlers=[AsyncConnectionErrorRetryHandler()],
        )
        self.page_size = page_size
        self.max_pages = max_pages
        self.seconds = seconds

    async def read(self, channel: str, thread: str, *, before: str, key: str) -> list[Mapping[str, Any]] | None:
        """The thread's messages posted before `before` (the question's ts), oldest first; None when
        Slack would not give them (logged once, with the question's `key`)."""
        try:
            async with asyncio.timeout(self.seconds):
                return await self._pages(channel, thread, before)
        except (SlackClientError, aiohttp.ClientError, OSError, _TooLong) as exc:  # OSError: timeouts too
            log.warning(
                "could not read Slack thread %s/%s (%s): its follow-up is read with the questions Candor "
                "was asked there and its answers only",
                channel,
                thread,
                _reason(exc),
                extra={"key": key},
            )
            return None

    async def _pages(self, channel: str, thread: str, before: str) -> list[Mapping[str, Any]]:
        messages: list[Mapping[str, Any]] = []
        cursor: str | None = None
        for _ in range(self.max_pages):
            page = await self.client.conversations_replies(
                channel=channel, ts=thread, latest=before, limit=self.page_size, cursor=cursor
            )
            found, metadata = page.get("messages"), page.get("response_metadata")
            if isinstance(found, list):
                messages.extend(m for m in found if isinstance(m, Mapping))
            cursor = metadata.get("next_cursor") if isinstance(metadata, Mapping) else None
            if not page.get("has_more") or not cursor or not isinstance(cursor, str):
                return messages
        raise _TooLong(f"more than {self.max_pages * self.page_size} messages before the question")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"{exc.response.status_code} {exc.response.get('error')}"
    if isinstance(exc, TimeoutError):
        return "no reply in time"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
