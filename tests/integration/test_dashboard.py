"""`GET /dashboard` over real HTTP: `bot.server.build_app` with the real core (`Candor`, the session's
database) on 127.0.0.1, an `aiohttp.ClientSession` as the browser or the script; and `candor serve`
as a process with CANDOR_ADMIN_TOKEN set.

Who gets in (a bearer header, or a cookie from one `?token=` visit) and who does not (nothing, a wrong
token, a wrong cookie, another scheme), what the page's headers promise, that bad parameters are 400s
and an unreachable database a 503 the server survives, and that without a token there is no route.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, CookieJar
from aiohttp.test_utils import TestServer, unused_port
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bot.dashboard import COOKIE, UNAVAILABLE, ReportService
from bot.report_html import render_html
from bot.server import build_app
from rag.config import load_settings
from rag.errors import ConfigError
from rag.reporting import Window, build_report, report_window
from rag.runtime import Candor
from tests.integration.test_processes import serve as serve_candor
from tests.integration.test_processes import stop

TOKEN = "s3cret-dashboard-token-for-tests"
EMPTY = "since=2019-01-01&until=2019-02-01"
"""A window nothing is dated in (tests/integration/test_report.py relies on it too): a fixed page."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@asynccontextmanager
async def served(
    candor: Candor, reports: ReportService | None = None, token: str | None = TOKEN
) -> AsyncIterator[ClientSession]:
    """`candor serve`'s app with the dashboard (when `token`), and a client with a cookie jar."""
    app = build_app(candor, reports=reports or candor, admin_token=token)
    async with (
        TestServer(app, host="127.0.0.1") as server,
        ClientSession(base_url=server.make_url("/"), cookie_jar=CookieJar(unsafe=True)) as session,
    ):
        yield session


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def expected_page(candor: Candor) -> str:
    return render_html(await build_report(candor.tracker.engine, report_window("2019-01-01", "2019-02-01")))


def assert_refused(status: int, headers: Any, body: str) -> None:
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert headers["Cache-Control"] == "no-store"
    assert "<html" not in body and "<svg" not in body and "Candor report" not in body, "no report data"


async def test_without_a_token_setting_there_is_no_dashboard(candor: Candor) -> None:
    async with served(candor, token=None) as http:
        for headers in ({}, bearer()):
            response = await http.get("/dashboard", headers=headers)
            assert response.status == 404
        assert (await http.get("/healthz")).status == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong-token-of-some-length"),
        bearer(TOKEN + "x"),
        bearer(TOKEN[:-1]),
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Cookie": f"{COOKIE}={TOKEN}"},
        {"Cookie": f"{COOKIE}=0000"},
    ],
    ids=["nothing", "wrong", "longer", "shorter", "basic", "empty-bearer", "token-as-cookie", "bad-cookie"],
)
async def test_anything_but_the_token_is_refused_without_the_report(candor: Candor, headers: dict[str, str]) -> None:
    async with served(candor) as http:
        response = await http.get(f"/dashboard?{EMPTY}", headers=headers)
        assert_refused(response.status, response.headers, await response.text())


async def test_the_bearer_token_gets_the_page_with_its_security_headers(candor: Candor) -> None:
    async with served(candor) as http:
        response = await http.get(f"/dashboard?{EMPTY}", headers=bearer())
        page = await response.text()
        assert response.status == 200 and response.content_type == "text/html"
        assert page == await expected_page(candor), "the page is the renderer's, of the core's report"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Content-Security-Policy"].startswith(CSP)
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        assert "Set-Cookie" not in response.headers, "a script with the header gets no cookie"
        lower = await http.get(f"/dashboard?{EMPTY}", headers={"Authorization": f"bearer {TOKEN}"})
        assert lower.status == 200, "the scheme is case-insensitive (RFC 7235)"


async def test_the_token_once_in_the_url_becomes_a_cookie_and_leaves_the_url(candor: Candor) -> None:
    async with served(candor) as http:
        wrong = await http.get(f"/dashboard?token=not-the-token&{EMPTY}", allow_redirects=False)
        assert_refused(wrong.status, wrong.headers, await wrong.text())
        assert "Set-Cookie" not in wrong.headers and len(http.cookie_jar) == 0

        response = await http.get(f"/dashboard?{EMPTY}&token={TOKEN}&by=day", allow_redirects=False)
        assert response.status == 303
        assert response.headers["Location"] == f"/dashboard?{EMPTY}&by=day", "the same URL, without the token"
        assert response.headers["Cache-Control"] == "no-store"
        cookie = response.cookies[COOKIE]
        assert cookie["httponly"] is True and cookie["samesite"] == "Strict" and cookie["path"] == "/dashboard"
        assert cookie.value and TOKEN not in cookie.value, "the cookie is not the token itself"

        followed = await http.get(response.headers["Location"])
        assert followed.status == 200 and "<svg" not in await followed.text(), "an empty window: no charts"
        assert "No answers in this window." in await followed.text()
        again = await http.get("/dashboard?since=2019-01-01&until=2019-02-01")
        assert again.status == 200 and await again.text() == await expected_page(candor)


async def test_the_cookie_opens_only_the_dashboard_of_this_token(candor: Candor) -> None:
    async with served(candor) as http:
        await http.get(f"/dashboard?token={TOKEN}", allow_redirects=False)
        stolen = {c.key: c.value for c in http.cookie_jar}
    async with served(candor, token="another-token-for-another-server") as other:
        response = await other.get("/dashboard", headers={"Cookie": f"{COOKIE}={stolen[COOKIE]}"})
        assert_refused(response.status, response.headers, await response.text())


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("since=last+tuesday", "'last tuesday' is neither a duration"),
        ("since=2019-02-01&until=2019-01-01", "the window is empty"),
        ("by=month", "by must be day or week, not 'month'"),
        ("until=soon", "'soon' is neither a duration"),
    ],
)
async def test_bad_parameters_are_a_400_with_the_message(candor: Candor, query: str, message: str) -> None:
    async with served(candor) as http:
        response = await http.get(f"/dashboard?{query}", headers=bearer())
        assert response.status == 400 and message in await response.text()
        unauthorised = await http.get(f"/dashboard?{query}")
        assert unauthorised.status == 401, "the token is checked before anything is read"


class GateLogAt:
    """The core's report, read from `engine` (here a database that is not there)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def report(self, window: Window) -> dict[str, Any]:
        return await build_report(self.engine, window)


async def test_an_unreachable_database_is_a_503_and_the_server_goes_on(candor: Candor) -> None:
    nowhere = create_async_engine(f"postgresql+psycopg://candor@127.0.0.1:{unused_port()}/candor")
    try:
        async with served(candor, reports=GateLogAt(nowhere)) as http:
            for _ in range(2):
                response = await http.get(f"/dashboard?{EMPTY}", headers=bearer())
                body = await response.text()
                assert response.status == 503 and body.strip() == UNAVAILABLE
                assert "Traceback" not in body and "psycopg" not in body
            assert (await http.get("/healthz")).status == 200
    finally:
        await nowhere.dispose()


@pytest.mark.slow
async def test_candor_serve_mounts_the_dashboard_when_the_token_is_set(candor: Candor, tmp_path: Path) -> None:
    url = candor.store.engine.url.render_as_string(hide_password=False)
    port = unused_port()
    process = serve_candor(tmp_path, port, {"CANDOR_DATABASE_URL": url, "CANDOR_ADMIN_TOKEN": TOKEN})
    try:
        async with ClientSession(f"http://127.0.0.1:{port}") as http:
            assert (await http.get(f"/dashboard?{EMPTY}")).status == 401
            response = await http.get(f"/dashboard?{EMPTY}", headers=bearer())
            assert response.status == 200 and await response.text() == await expected_page(candor)
    finally:
        code, stderr = stop(process)
    assert code == 0, stderr
    assert f"Dashboard: http://127.0.0.1:{port}/dashboard" in stderr and TOKEN not in stderr


def test_the_admin_token_setting_is_a_secret_and_not_a_short_one() -> None:
    settings = load_settings(admin_token=TOKEN)
    assert settings.admin_token is not None and settings.admin_token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.model_dump())
    assert load_settings().admin_token is None or "CANDOR_ADMIN_TOKEN" in os.environ
    with pytest.raises(ConfigError, match="CANDOR_ADMIN_TOKEN"):
        load_settings(admin_token="short")
