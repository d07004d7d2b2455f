"""`GET /metrics`: the Prometheus text format, for a scraper.

Protected like the dashboard: with CANDOR_ADMIN_TOKEN set, a scrape must send it
(`Authorization: Bearer <token>`; Prometheus' `authorization` scrape setting), compared in constant
time; without a token the route exists only on a server listening on a loopback address (a scraper
on the same host). `candor serve` decides which (`bot.server.build_app`).
"""

from __future__ import annotations

import hmac
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler


class MetricsSource(Protocol):
    content_type: str

    def exposition(self) -> bytes: ...


def add_routes(app: web.Application, source: MetricsSource, *, token: str | None) -> None:
    app.router.add_get("/metrics", _handler(source, token))


def _handler(source: MetricsSource, token: str | None) -> Handler:
    expected = None if token is None else f"Bearer {token}".encode()

    async def metrics(request: web.Request) -> web.Response:
        offered = request.headers.get("Authorization", "").encode()
        if expected is not None and not hmac.compare_digest(offered, expected):
            return web.Response(
                status=401,
                text="Send the admin token: Authorization: Bearer <token>\n",
                headers={"WWW-Authenticate": 'Bearer realm="candor"'},
            )
        return web.Response(body=source.exposition(), headers={"Content-Type": source.content_type})

    return metrics
