"""`GET /metrics`: the Prometheus text format, for a scraper.

Protected like the dashboard: with CANDOR_ADMIN_TOKEN set, a scrape must send it
(`Authorization: Bearer <token>`; Prometheus' `authorization` scrape setting), compared in constant
time, and a wrong one counts against the dashboard's login limiter (`admin_limit`: the same one):
after 10 wrong tokens within a minute the address gets 429 for a minute, even with the right token.
A scrape that sends no token gets 401 and is not counted (a scraper not yet configured, not a guess).
Without a token the route exists only on a server listening on a loopback address (a scraper on the
same host). `candor serve` decides which (`bot.server.build_app`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.web.admin_limit import login_limiter
from bot.web.dashboard_auth import LoginLimiter
from bot.web.identity import Network, client_of

log = logging.getLogger("candor.web.metrics")

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="candor"'}


class MetricsSource(Protocol):
    content_type: str

    def exposition(self) -> bytes: ...


def add_routes(
    app: web.Application,
    source: MetricsSource,
    *,
    token: str | None,
    limiter: LoginLimiter | None = None,
    trusted_proxies: Sequence[Network] = (),
) -> None:
    """Mount `/metrics`; wrong tokens count in `limiter` (default: the application's, `login_limiter`),
    by the address a proxy in `trusted_proxies` forwarded for."""
    app.router.add_get("/metrics", _handler(source, token, login_limiter(app, limiter), tuple(trusted_proxies)))


def _handler(source: MetricsSource, token: str | None, limiter: LoginLimiter, trusted: tuple[Network, ...]) -> Handler:
    expected = None if token is None else f"Bearer {token}".encode()

    async def metrics(request: web.Request) -> web.Response:
        if expected is not None:
            address = client_of(request, trusted).address
            wait = limiter.retry_after(address)
            if wait is not None:  # locked out: the token is not even compared
                headers = {**_CHALLENGE, "Retry-After": str(wait)}
                return web.Response(status=429, text="Too many wrong tokens: try again later.\n", headers=headers)
            offered = request.headers.get("Authorization")
            if offered is None or not hmac.compare_digest(offered.encode(), expected):
                if offered is not None:
                    limiter.failed(address)
                    log.warning("metrics: a wrong admin token from %s", address, extra={"remote": address})
                text = "Send the admin token: Authorization: Bearer <token>\n"
                return web.Response(status=401, text=text, headers=_CHALLENGE)
            limiter.succeeded(address)
        return web.Response(body=source.exposition(), headers={"Content-Type": source.content_type})

    return metrics
