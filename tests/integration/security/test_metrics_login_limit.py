"""`/metrics` checks the admin token behind the dashboard's login limiter (issue 37): ten wrong tokens
within a minute lock the address out of both, and the right token then gets 429 too. Over real HTTP,
on the application `candor serve` builds."""

from __future__ import annotations

import aiohttp
from aiohttp.test_utils import TestServer

from bot.server import build_app
from rag.runtime import Candor
from rag.tracking.metrics import Metrics

TOKEN = "a-metrics-token-of-some-length"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def from_address(address: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0)))


async def test_wrong_metrics_tokens_lock_the_address_out_of_metrics_and_the_dashboard(candor: Candor) -> None:
    metrics = Metrics(spool_size=candor.tracker.spool_stats)
    app = build_app(candor, metrics=metrics, admin_token=TOKEN, reports=candor)
    async with TestServer(app, host="127.0.0.1") as server:
        async with from_address("127.0.0.1") as scraper:
            assert (await scraper.get(server.make_url("/metrics"), headers=bearer(TOKEN))).status == 200
            unconfigured = await scraper.get(server.make_url("/metrics"))  # no token: a 401, not a guess
            assert unconfigured.status == 401
            for guess in range(10):
                wrong = await scraper.get(server.make_url("/metrics"), headers=bearer(f"guess-{guess}"))
                assert wrong.status == 401, guess
            locked = await scraper.get(server.make_url("/metrics"), headers=bearer(TOKEN))
            assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0, "even the right token"
            assert "candor_" not in await locked.text()
            dashboard = await scraper.get(server.make_url("/dashboard"), headers=bearer(TOKEN))
            assert dashboard.status == 429, "the same limiter: the dashboard is locked for that address too"
        async with from_address("127.0.0.2") as elsewhere:  # another address is not locked out
            assert (await elsewhere.get(server.make_url("/metrics"), headers=bearer(TOKEN))).status == 200


async def test_wrong_dashboard_tokens_count_against_metrics_too(candor: Candor) -> None:
    metrics = Metrics(spool_size=candor.tracker.spool_stats)
    app = build_app(candor, metrics=metrics, admin_token=TOKEN, reports=candor)
    async with TestServer(app, host="127.0.0.1") as server, from_address("127.0.0.3") as guesser:
        for guess in range(10):
            wrong = await guesser.get(server.make_url("/dashboard"), headers=bearer(f"guess-{guess}"))
            assert wrong.status == 401, guess
        assert (await guesser.get(server.make_url("/metrics"), headers=bearer(TOKEN))).status == 429
