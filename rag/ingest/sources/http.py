"""One GET of a source's API, bounded the way every source client needs: throttling waited out (its
Retry-After, bounded, a few times), refused credentials and an unreachable service turned into one
`ItemError` line a person can act on, and a body larger than the client's limit refused (the
guarded client, `outbound.Outbound`, reads it whole and refuses it with its size).

Confluence and Graph call it; Drive keeps its own loop, as it reads the reason inside a 403 to tell
throttling from refusal and renews its token on a 401.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from rag.errors import ItemError
from rag.ingest.sources.outbound import Outbound
from rag.ingest.sources.retry_after import retry_after

log = logging.getLogger("candor.sync")


@dataclass(frozen=True, slots=True)
class Limits:
    service: str
    """How lines name the service ("Confluence", "Graph")."""
    refused: str
    """What a 401 or 403 says: which variables to check (never their values)."""
    timeout_seconds: float
    max_wait_seconds: float
    retries: int = 2
    throttled: Collection[int] = (429,)
    """Statuses that mean "wait and ask again" (Graph adds 503)."""


async def bounded_get(
    client: Outbound,
    url: str,
    params: Mapping[str, str] | None,
    limits: Limits,
    *,
    auth: aiohttp.BasicAuth | None = None,
    headers: Callable[[], Awaitable[Mapping[str, str]]] | None = None,
) -> tuple[int, bytes]:
    """(status, body) of one GET through the guarded client (`b""` unless 200, read whole, refused
    above the client's limit). `auth` and `headers` go to the client's own origin only (see
    `Outbound`); `headers` is asked again before each try (a bearer token may be renewed meanwhile)."""
    path = urlsplit(url).path
    for attempt in range(limits.retries + 1):
        sent = dict(await headers()) if headers is not None else None
        try:
            reply = await client.get(url, params=params, headers=sent, auth=auth)
        except TimeoutError as exc:
            raise ItemError(f"{limits.service} did not answer within {limits.timeout_seconds:g} s") from exc
        except aiohttp.ClientError as exc:
            raise ItemError(f"{limits.service} could not be reached ({type(exc).__name__}: {exc})"[:300]) from exc
        if reply.status in limits.throttled and attempt < limits.retries:
            wait = retry_after(reply.headers.get("Retry-After"), limits.max_wait_seconds)
            log.info("%s %s: %s, waiting %.1f s", limits.service, path, reply.status, wait)
            await asyncio.sleep(wait)
            continue
        if reply.status in (401, 403):
            raise ItemError(f"HTTP {reply.status} from {limits.service}: {limits.refused}")
        return reply.status, reply.body if reply.status == 200 else b""
    raise ItemError(f"{limits.service} kept answering 429 after {limits.retries} waits")  # pragma: no cover


def json_object(service: str, url: str, body: bytes) -> dict[str, Any]:
    """A 200's body as the JSON object an API answers with; `ItemError` when it is not one."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ItemError(f"{service}'s answer to {urlsplit(url).path} is not JSON") from exc
    if not isinstance(data, dict):
        raise ItemError(f"{service}'s answer to {urlsplit(url).path} is not a JSON object")
    return data
