"""`/dashboard` over real HTTP: `bot.server.build_app` with the real core (`Candor`, the session's
database), run by `candor serve`'s own runner (`bot.server.app_runner`, its access log included) on
127.0.0.1, an `aiohttp.ClientSession` as the browser or the script; and `candor serve` as a process
with CANDOR_ADMIN_TOKEN set.

Who gets in (a bearer header, or the cookie of a login through the form) and who does not (nothing, a
wrong token, a token in the URL, an expired or foreign cookie, another scheme, another site's form),
that the token never reaches the access log, the login limiter, what the pages' headers promise,
that bad parameters are 400s and an unreachable database a 503 the server survives, and that
without a token there is no route.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, CookieJar, TCPConnector, web
from aiohttp.test_utils import unused_port
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bot.render.report_html import render_html
from bot.server import app_runner, build_app
from bot.web.dashboard import COOKIE, TOO_MANY, UNAVAILABLE, WRONG_TOKEN, ReportService
from bot.web.dashboard import add_routes as add_dashboard_routes
from bot.web.dashboard_auth import LoginLimiter
from rag.config import load_settings
from rag.errors import ConfigError
from rag.insights.report.build import Window, build_report, report_window
from rag.runtime import Candor
from tests.integration.cli.test_processes import serve as serve_candor
from tests.integration.cli.test_processes import stop

TOKEN = "s3cret-dashboard-token-for-tests"
EMPTY = "since=2019-01-01&until=2019-02-01"
"""A window nothing is dated in (tests/integration/insights/test_report.py relies on it too): a fixed page."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[ClientSession]:
    """`app` served as `candor serve` serves it, and a client with a cookie jar."""
    runner = app_runner(app, shutdown_timeout=1)
    await runner.setup()
    port = unused_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with ClientSession(f"http://127.0.0.1:{port}", cookie_jar=CookieJar(unsafe=True)) as session:
            yield session
    finally:
        await runner.cleanup()


def served(candor: Candor, reports: ReportService | None = None, token: str | None = TOKEN) -> Any:
    """`candor serve`'s app with the dashboard (when `token`), and a client."""
    return running(build_app(candor, reports=reports or candor, admin_token=token))


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def cookie_of(token: str, issued_at: int) -> str:
    """The dashboard's cookie, made here by its documented formula."""
    mac = hmac.new(token.encode(), f"candor-dashboard:{issued_at}".encode(), hashlib.sha256).hexdigest()
    return f"{issued_at}.{mac}"


def origin_of(http: ClientSession) -> dict[str, str]:
    """What a browser sends with a form posted from the server's own page."""
    return {"Origin": base_of(http), "Sec-Fetch-Site": "same-origin"}


def base_of(http: ClientSession) -> str:
    """The server's address the session was made for (aiohttp keeps it private)."""
    return str(http._base_url).rstrip("/")


async def log_in(http: ClientSession, token: str = TOKEN, **fields: str) -> Any:
    return await http.post(
        "/dashboard/login", data={"token": token, **fields}, headers=origin_of(http), allow_redirects=False
    )


async def expected_page(candor: Candor, *, sources: str | None = None) -> str:
    """The report page of the EMPTY window, with its link to the review queue of the same window (and `sources`)."""
    report = await build_report(candor.tracker.engine, report_window("2019-01-01", "2019-02-01"))
    return render_html(report, review_url=f"/dashboard/review?{EMPTY}", sources_url=sources)


def assert_no_report(body: str) -> None:
    assert "<svg" not in body and "<table" not in body and "Candor report" not in body, "no report data"


def assert_refused(status: int, headers: Any, body: str) -> None:
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert headers["Cache-Control"] == "no-store"
    assert_no_report(body)


def assert_login_form(body: str) -> None:
    assert '<form method="post" action="/dashboard/login">' in body
    assert '<input id="token" name="token" type="password"' in body


async def test_without_a_token_setting_there_is_no_dashboard(candor: Candor) -> None:
    async with served(candor, token=None) as http:
        for headers in ({}, bearer()):
            response = await http.get("/dashboard", headers=headers)
            assert response.status == 404
        assert (await log_in(http)).status == 404
        assert (await http.get("/healthz")).status == 200


@pytest.mark.parametrize(
    ("query", "headers", "form"),
    [
        ("", {}, True),
        ("", bearer("wrong-token-of-some-length"), False),
        ("", bearer(TOKEN + "x"), False),
        ("", bearer(TOKEN[:-1]), False),
        ("", {"Authorization": f"Basic {TOKEN}"}, True),
        ("", {"Authorization": "Bearer"}, False),
        ("", {"Cookie": f"{COOKIE}={TOKEN}"}, True),
        ("", {"Cookie": f"{COOKIE}=0000"}, True),
        (f"&token={TOKEN}", {}, True),
    ],
    ids=[
        "nothing",
        "wrong",
        "longer",
        "shorter",
        "basic",
        "empty-bearer",
        "token-as-cookie",
        "bad-cookie",
        "token-in-url",
    ],
)
async def test_anything_but_the_token_is_refused_without_the_report(
    candor: Candor, query: str, headers: dict[str, str], form: bool
) -> None:
    async with served(candor) as http:
        response = await http.get(f"/dashboard?{EMPTY}{query}", headers=headers, allow_redirects=False)
        body = await response.text()
        assert_refused(response.status, response.headers, body)
        assert "Set-Cookie" not in response.headers
        if form:
            assert_login_form(body)
            assert TOKEN not in body, "a token in the URL is not read, nor echoed"
        else:
            assert body.strip() == "Unauthorised: the bearer token is not CANDOR_ADMIN_TOKEN."


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


async def test_the_login_form_sets_a_cookie_and_the_token_never_reaches_a_url_or_the_access_log(
    candor: Candor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    async with served(candor) as http:
        form = await http.get(f"/dashboard?{EMPTY}&by=day")
        body = await form.text()
        assert form.status == 401 and form.content_type == "text/html"
        assert_login_form(body)
        assert_no_report(body)
        for name, value in (("since", "2019-01-01"), ("until", "2019-02-01"), ("by", "day")):
            assert f'<input type="hidden" name="{name}" value="{value}">' in body
        policy = form.headers["Content-Security-Policy"]
        assert "form-action 'self'" in policy and "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert form.headers["Cache-Control"] == "no-store"

        fields = {"since": "2019-01-01", "until": "2019-02-01", "by": "day"}
        wrong = await log_in(http, "not-the-token-at-all", **fields)
        again = await wrong.text()
        assert wrong.status == 401 and WRONG_TOKEN in again
        assert_login_form(again)
        assert '<input type="hidden" name="by" value="day">' in again, "the window is kept for the next try"
        assert "Set-Cookie" not in wrong.headers and len(http.cookie_jar) == 0

        response = await log_in(http, **fields)
        assert response.status == 303
        assert response.headers["Location"] == f"/dashboard?{EMPTY}&by=day", "relative, the window kept, no token"
        assert response.headers["Cache-Control"] == "no-store"
        cookie = response.cookies[COOKIE]
        assert cookie["httponly"] is True and cookie["samesite"] == "Strict" and cookie["path"] == "/dashboard"
        assert cookie["max-age"] == str(12 * 3600)
        assert cookie.value and TOKEN not in cookie.value, "the cookie is not the token itself"

        followed = await http.get(response.headers["Location"])
        assert followed.status == 200 and "<svg" not in await followed.text(), "an empty window: no charts"
        assert "No answers in this window." in await followed.text()
        page = await http.get(f"/dashboard?{EMPTY}")
        assert page.status == 200 and await page.text() == await expected_page(candor)
        assert (await http.get(f"/dashboard?{EMPTY}&token={TOKEN}")).status == 200, "an old bookmark, ignored"
        assert (await http.get(f"/dashboard?{EMPTY}", headers=bearer())).status == 200

    records = [r for r in caplog.records if r.name == "aiohttp.access"]
    assert len(records) == 7, [r.getMessage() for r in records]
    for record in records:
        assert TOKEN not in record.getMessage() and TOKEN not in repr(record.__dict__), record.getMessage()
        assert cookie.value not in repr(record.__dict__)
        assert "?" not in record.getMessage(), "no query string at all"
    lines = [r.getMessage() for r in records]
    assert '"GET /dashboard HTTP/1.1" 401' in lines[0] and '"POST /dashboard/login HTTP/1.1" 303' in lines[2]
    assert records[0].path == "/dashboard" and records[0].status == 401


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
    ],
    ids=["cross-site", "fetch-cross-site", "same-site", "origin", "null-origin"],
)
async def test_a_login_posted_from_another_site_is_refused(candor: Candor, headers: dict[str, str]) -> None:
    async with served(candor) as http:
        response = await http.post("/dashboard/login", data={"token": TOKEN}, headers=headers, allow_redirects=False)
        assert response.status == 403 and "Set-Cookie" not in response.headers
        assert len(http.cookie_jar) == 0


async def test_a_login_through_a_proxy_is_same_origin_by_its_forwarded_host(candor: Candor) -> None:
    async with served(candor) as http:
        proxied = {"Origin": "https://candor.example.com", "X-Forwarded-Host": "candor.example.com"}
        response = await http.post("/dashboard/login", data={"token": TOKEN}, headers=proxied, allow_redirects=False)
        assert response.status == 303 and response.headers["Location"] == "/dashboard"


async def test_the_login_keeps_only_the_windows_parameters_and_checks_them(candor: Candor) -> None:
    async with served(candor) as http:
        kept = await log_in(http, kb="hr & payroll", until="", next="https://evil.example/", token2="x")
        assert kept.status == 303 and kept.headers["Location"] == "/dashboard?kb=hr+%26+payroll"
        bad = await log_in(http, since="99999999999999999999d")
        assert bad.status == 400 and "is neither a duration" in await bad.text()


def now() -> int:
    return int(time.time())


@pytest.mark.parametrize(
    ("cookie", "status"),
    [
        (lambda: cookie_of(TOKEN, now()), 200),
        (lambda: cookie_of(TOKEN, now() - 12 * 3600 + 60), 200),
        (lambda: cookie_of(TOKEN, now() - 12 * 3600 - 1), 401),
        (lambda: cookie_of(TOKEN, now() + 3600), 401),
        (lambda: cookie_of("another-token-for-another-server", now()), 401),
        (lambda: cookie_of(TOKEN, now()).replace(".", "", 1), 401),
        (lambda: f"{now()}." + hmac.new(TOKEN.encode(), b"candor dashboard cookie", hashlib.sha256).hexdigest(), 401),
    ],
    ids=["fresh", "almost-12h", "expired", "future", "another-token", "no-dot", "old-formula"],
)
async def test_a_cookie_is_good_for_12_hours_of_this_token(
    candor: Candor, cookie: Callable[[], str], status: int
) -> None:
    async with served(candor) as http:
        response = await http.get(f"/dashboard?{EMPTY}", headers={"Cookie": f"{COOKIE}={cookie()}"})
        assert response.status == status
        if status == 401:
            assert_login_form(await response.text())


async def test_a_new_token_refuses_the_cookies_of_the_old_one(candor: Candor) -> None:
    async with served(candor) as http:
        assert (await log_in(http)).status == 303
        stolen = {c.key: c.value for c in http.cookie_jar}
        assert (await http.get(f"/dashboard?{EMPTY}")).status == 200
    async with served(candor, token="the-rotated-token-of-this-server") as other:
        response = await other.get("/dashboard", headers={"Cookie": f"{COOKIE}={stolen[COOKIE]}"})
        assert_refused(response.status, response.headers, await response.text())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ten_failures_in_a_minute_lock_an_address_out_for_a_minute() -> None:
    clock = Clock()
    limiter = LoginLimiter(clock=clock)
    for _ in range(9):
        limiter.failed("a")
        clock.now += 5
    assert limiter.retry_after("a") is None, "9 failures do not lock"
    limiter.failed("a")
    assert limiter.retry_after("a") == 60 and limiter.retry_after("b") is None, "the 10th does; only that address"
    clock.now += 59.5
    assert limiter.retry_after("a") == 1
    clock.now += 0.5
    assert limiter.retry_after("a") is None, "a minute later it may try again"

    for _ in range(20):  # one failure every 7 seconds: never 10 within a minute
        limiter.failed("c")
        clock.now += 7
    assert limiter.retry_after("c") is None
    for _ in range(9):
        limiter.failed("d")
    limiter.succeeded("d")
    limiter.failed("d")
    assert limiter.retry_after("d") is None, "a login that succeeds forgets the failures before it"


async def test_after_ten_wrong_tokens_an_address_gets_429_for_a_minute(candor: Candor) -> None:
    clock = Clock()
    app = web.Application()
    add_dashboard_routes(app, candor, TOKEN, limiter=LoginLimiter(clock=clock))
    async with running(app) as http:
        assert (await log_in(http)).status == 303
        for attempt in range(10):
            wrong = await (
                log_in(http, f"guess-number-{attempt}")
                if attempt % 2
                else http.get("/dashboard", headers=bearer(f"guess-number-{attempt}"))
            )
            assert wrong.status == 401, attempt
        locked = await log_in(http)
        assert locked.status == 429 and locked.headers["Retry-After"] == "60"
        assert TOO_MANY in await locked.text() and "Set-Cookie" not in locked.headers, "even the right token"
        script = await http.get(f"/dashboard?{EMPTY}", headers=bearer())
        assert script.status == 429 and script.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await http.get(f"/dashboard?{EMPTY}")).status == 200, "a browser logged in before keeps its cookie"
        other = TCPConnector(local_addr=("127.0.0.2", 0))
        async with ClientSession(base_of(http), connector=other) as elsewhere:
            assert (await log_in(elsewhere)).status == 303, "another address is not locked out"
        clock.now += 60
        assert (await log_in(http)).status == 303, "a minute later"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("since=last+tuesday", "'last tuesday' is neither a duration"),
        ("since=2019-02-01&until=2019-01-01", "the window is empty"),
        ("by=month", "by must be day or week, not 'month'"),
        ("until=soon", "'soon' is neither a duration"),
        ("since=99999999999999999999d", "'99999999999999999999d' is neither a duration"),
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
    env = {"CANDOR_DATABASE_URL": url, "CANDOR_ADMIN_TOKEN": TOKEN, "CANDOR_LOG_LEVEL": "INFO"}
    process = serve_candor(tmp_path, port, env)
    try:
        async with ClientSession(f"http://127.0.0.1:{port}", cookie_jar=CookieJar(unsafe=True)) as http:
            assert (await http.get(f"/dashboard?{EMPTY}&token={TOKEN}")).status == 401, "never read from a URL"
            response = await http.get(f"/dashboard?{EMPTY}", headers=bearer())
            page = await expected_page(candor, sources="/dashboard/sources")  # `candor serve` mounts the sources
            assert response.status == 200 and await response.text() == page
            assert (await http.get("/dashboard/sources", headers=bearer())).status == 200
            assert (await log_in(http, **{"since": "2019-01-01", "until": "2019-02-01"})).status == 303
            assert (await http.get(f"/dashboard?{EMPTY}")).status == 200
    finally:
        code, stderr = stop(process)
    assert code == 0, stderr
    assert f"Dashboard: http://127.0.0.1:{port}/dashboard" in stderr
    assert 'INFO aiohttp.access: 127.0.0.1 "GET /dashboard HTTP/1.1" 401' in stderr, "the access log is on"
    assert '"POST /dashboard/login HTTP/1.1" 303' in stderr
    assert TOKEN not in stderr, "neither the URL's token nor the form's reaches the log"


def test_the_admin_token_setting_is_a_secret_and_not_a_short_one() -> None:
    settings = load_settings(admin_token=TOKEN)
    assert settings.admin_token is not None and settings.admin_token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.model_dump())
    assert load_settings().admin_token is None or "CANDOR_ADMIN_TOKEN" in os.environ
    with pytest.raises(ConfigError, match="CANDOR_ADMIN_TOKEN"):
        load_settings(admin_token="short")


async def test_behind_a_trusted_proxy_the_limiter_counts_browsers_and_the_cookie_is_secure(candor: Candor) -> None:
    """Every browser reaches Candor from the proxy's address: the limiter must count the address the
    proxy forwarded, or ten wrong guesses by one person would lock everyone out; and a proxy that ended
    TLS makes the cookie `Secure`. From an address that is not the proxy, the same headers are ignored."""
    proxied = web.Application()
    add_dashboard_routes(proxied, candor, TOKEN, trusted_proxies=[ipaddress.ip_network("127.0.0.1/32")])
    async with running(proxied) as http:
        guesser = {**origin_of(http), "X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}
        for attempt in range(10):
            wrong = await http.post("/dashboard/login", data={"token": f"guess-{attempt}"}, headers=guesser)
            assert wrong.status == 401
        assert (await http.post("/dashboard/login", data={"token": TOKEN}, headers=guesser)).status == 429
        colleague = {**guesser, "X-Forwarded-For": "198.51.100.4, 203.0.113.99"}  # the nearest hop counts
        welcome = await http.post("/dashboard/login", data={"token": TOKEN}, headers=colleague, allow_redirects=False)
        assert welcome.status == 303
        assert "Secure" in welcome.headers["Set-Cookie"] and "HttpOnly" in welcome.headers["Set-Cookie"]

    direct = web.Application()
    add_dashboard_routes(direct, candor, TOKEN, trusted_proxies=[ipaddress.ip_network("10.0.0.0/8")])
    async with running(direct) as http:
        forged = {**origin_of(http), "X-Forwarded-For": "203.0.113.1", "X-Forwarded-Proto": "https"}
        for attempt in range(10):
            await http.post("/dashboard/login", data={"token": f"guess-{attempt}"}, headers=forged)
        other = {**forged, "X-Forwarded-For": "203.0.113.2"}  # a forged header cannot dodge the lock
        assert (await http.post("/dashboard/login", data={"token": TOKEN}, headers=other)).status == 429
