"""An httpx transport over the guarded client, so a library that speaks httpx (notion-client) goes
out through `outbound.Outbound` like every other source: the same address checks, redirects
followed by hand, credentials to the source's own origin only, and bodies read whole up to a limit.

A refusal (`outbound.Refused`, `OffSite`, `TooLarge`) reaches the caller as the `ItemError` it is;
a timeout becomes httpx's `ReadTimeout` and a failed connection its `ConnectError`, which the
library already turns into its own errors.
"""

from __future__ import annotations

import aiohttp
import httpx

from rag.ingest.sources.outbound import Outbound

_HOP_HEADERS = frozenset({"host", "content-length", "connection", "transfer-encoding", "accept-encoding"})
"""Set by aiohttp for the hop it makes (a redirect to another host needs its own `Host`)."""
_DECODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})
"""aiohttp has decoded the body already: httpx must not decode it again."""


class OutboundTransport(httpx.AsyncBaseTransport):
    def __init__(self, client: Outbound) -> None:
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        data = await request.aread()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        try:
            reply = await self.client.request(request.method, str(request.url), headers=headers, data=data or None)
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"no answer within {self.client.timeout_seconds:g} s", request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}", request=request) from exc
        kept = [(k, v) for k, v in reply.headers.items() if k.lower() not in _DECODED]
        return httpx.Response(reply.status, headers=kept, content=reply.body, request=request)

    async def aclose(self) -> None:
        await self.client.aclose()
