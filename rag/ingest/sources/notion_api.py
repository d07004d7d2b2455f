"""The HTTP side of the Notion source, through the maintained client `notion-client` (its
`AsyncClient`, httpx-based, which sends `Notion-Version: 2025-09-03`: pages, blocks, data sources).

Retries are the client's own, and there is one layer of them: a 429 `rate_limited` is waited out
for its `Retry-After` (at most `max_wait_seconds`, twice), and a 500 or 503 to a GET is tried twice
more with back-off. Requests are paced to `requests_per_second` (Notion allows an average of three)
by an httpx request hook, so retries are paced too. A PDF is downloaded from the block's file URL (a
pre-signed S3 URL that expires within the hour) by a second client that sends no token, so the
integration's secret goes to Notion only. Both go out through the guarded client
(`outbound.Outbound`, under httpx by `outbound_httpx`): every address checked, redirects followed
by hand, the token sent to the API's origin only, each answer read whole up to `max_bytes`.

Every failure is an `ItemError` with a line a person can act on; the connector turns it into a
`SourceError` while listing (then nothing stored is removed) and a skipped page while fetching. A
refused token says which environment variable holds it (never its value).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx
from notion_client import APIErrorCode, APIResponseError, AsyncClient
from notion_client.client import RetryOptions
from notion_client.errors import HTTPResponseError, NotionClientErrorBase, RequestTimeoutError

from rag.errors import ItemError
from rag.ingest.sources.guard import Network
from rag.ingest.sources.notion_blocks import CHILDREN
from rag.ingest.sources.outbound import Outbound
from rag.ingest.sources.outbound_httpx import OutboundTransport

log = logging.getLogger("candor.sync.notion")

_PAGE_SIZE = 100
"""Results per request: the most Notion's list endpoints give."""
_MAX_RESULT_PAGES = 1000
_MAX_DEPTH = 12
"""Levels of nested blocks read below a page (Notion's editor nests far less)."""
_MAX_BLOCKS = 20_000
_NO_DESCENT = frozenset({"child_page", "child_database"})
"""Blocks whose children are documents of their own, not part of this page."""


class NotionApi:
    def __init__(
        self,
        token: str,
        *,
        refused: str,
        base_url: str = "https://api.notion.com",
        requests_per_second: float = 3.0,
        timeout_seconds: float = 30.0,
        max_wait_seconds: float = 60.0,
        max_bytes: int = 50_000_000,
        network: Network | None = None,
    ) -> None:
        self.refused = refused
        """What a 401 says: which variable to check (the connector words it)."""
        self._interval = 1.0 / requests_per_second
        self._next = 0.0
        self._pace_lock = asyncio.Lock()
        self._timeout = timeout_seconds
        network = network or Network()
        api = Outbound(network, owners=[base_url], timeout_seconds=timeout_seconds, max_bytes=max_bytes)
        sdk_log = logging.getLogger("candor.sync.notion.client")
        self.client = AsyncClient(
            client=httpx.AsyncClient(event_hooks={"request": [self._pace]}, transport=OutboundTransport(api)),
            auth=token,
            base_url=base_url.rstrip("/"),
            timeout_ms=int(timeout_seconds * 1000),
            retry=RetryOptions(
                max_retries=2, initial_retry_delay_ms=500, max_retry_delay_ms=int(max_wait_seconds * 1000)
            ),
            logger=sdk_log,
            log_level=logging.ERROR,
        )
        self._files = Outbound(network, owners=(), timeout_seconds=timeout_seconds, max_bytes=max_bytes)

    async def _pace(self, request: httpx.Request) -> None:
        """Wait so requests start at most `requests_per_second` apart."""
        async with self._pace_lock:
            now = time.monotonic()
            wait = self._next - now
            self._next = max(now, self._next) + self._interval
        if wait > 0:
            await asyncio.sleep(wait)

    async def _call(self, what: str, request: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
        try:
            found = await request()
        except APIResponseError as exc:
            if exc.code == APIErrorCode.Unauthorized or exc.status == 401:
                raise ItemError(f"HTTP 401 unauthorized: {self.refused}") from exc
            if exc.code == APIErrorCode.RateLimited:
                raise ItemError(f"Notion kept answering 429 rate_limited for {what}") from exc
            raise ItemError(f"Notion answered {exc.status} {exc.code} for {what}") from exc
        except HTTPResponseError as exc:
            raise ItemError(f"Notion answered {exc.status} for {what}") from exc
        except RequestTimeoutError as exc:
            raise ItemError(f"Notion did not answer within {self._timeout:g} s ({what})") from exc
        except NotionClientErrorBase as exc:
            raise ItemError(f"Notion refused {what}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise ItemError(f"Notion could not be reached ({type(exc).__name__}: {exc})"[:300]) from exc
        if not isinstance(found, dict):
            raise ItemError(f"Notion's answer for {what} is not a JSON object")
        return found

    async def _all(self, what: str, request: Callable[[str | None], Awaitable[Any]]) -> list[dict[str, Any]]:
        """Every result of a paginated list, following `next_cursor` while `has_more`."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_RESULT_PAGES):
            page = await self._call(what, functools.partial(request, cursor))
            found.extend(r for r in page.get("results") or [] if isinstance(r, dict))
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return found
        raise ItemError(f"{what} did not end after {_MAX_RESULT_PAGES} pages of results")

    async def search(self) -> list[dict[str, Any]]:
        """Every page and data source shared with the integration (`POST /v1/search`, no query)."""

        def one(cursor: str | None) -> Awaitable[Any]:
            body: dict[str, Any] = {"page_size": _PAGE_SIZE}
            if cursor:
                body["start_cursor"] = cursor
            return self.client.search(**body)  # type: ignore[return-value]

        return await self._all("the search of the workspace", one)

    async def rows(self, data_source_id: str) -> list[dict[str, Any]]:
        """Every row (page) of a data source (`POST /v1/data_sources/{id}/query`)."""

        def one(cursor: str | None) -> Awaitable[Any]:
            body: dict[str, Any] = {"page_size": _PAGE_SIZE}
            if cursor:
                body["start_cursor"] = cursor
            return self.client.data_sources.query(data_source_id, **body)  # type: ignore[return-value]

        return await self._all(f"the rows of data source {data_source_id}", one)

    async def block(self, block_id: str) -> dict[str, Any] | None:
        """One block (`GET /v1/blocks/{id}`); None when Notion says it does not exist or is not shared."""
        try:
            return await self._call(f"block {block_id}", lambda: self.client.blocks.retrieve(block_id))
        except ItemError as exc:
            cause = exc.__cause__
            if isinstance(cause, APIResponseError) and cause.code == APIErrorCode.ObjectNotFound:
                return None
            raise

    async def children(self, block_id: str) -> list[dict[str, Any]]:
        """A block's (or page's) child blocks, every page of them (`GET /v1/blocks/{id}/children`)."""

        def one(cursor: str | None) -> Awaitable[Any]:
            query: dict[str, Any] = {"page_size": _PAGE_SIZE}
            if cursor:
                query["start_cursor"] = cursor
            return self.client.blocks.children.list(block_id, **query)  # type: ignore[return-value]

        return await self._all(f"the blocks of {block_id}", one)

    async def block_tree(self, page_id: str) -> list[dict[str, Any]]:
        """A page's blocks, each with its nested blocks under `children` (read where `has_children`
        says there are some; child pages and databases are not descended into)."""
        budget = [_MAX_BLOCKS]

        async def below(block_id: str, depth: int) -> list[dict[str, Any]]:
            blocks = await self.children(block_id)
            budget[0] -= len(blocks)
            if budget[0] < 0:
                raise ItemError(f"more than {_MAX_BLOCKS} blocks")
            for block in blocks:
                if block.get("has_children") and block.get("type") not in _NO_DESCENT and depth < _MAX_DEPTH:
                    block[CHILDREN] = await below(str(block["id"]), depth + 1)
            return blocks

        return await below(page_id, 0)

    async def download(self, url: str) -> bytes:
        """A Notion-hosted file's bytes from its pre-signed URL (no token sent), at most `max_bytes`."""
        try:
            reply = await self._files.get(url)
        except TimeoutError as exc:
            raise ItemError(f"the file did not download within {self._timeout:g} s") from exc
        except aiohttp.ClientError as exc:
            raise ItemError(f"the file could not be downloaded ({type(exc).__name__})") from exc
        if reply.status != 200:
            raise ItemError(f"the file's URL answered {reply.status}")
        return reply.body

    async def aclose(self) -> None:
        await self.client.aclose()
        await self._files.aclose()
