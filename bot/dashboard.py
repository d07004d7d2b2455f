"""`GET /dashboard`: the report page (`bot.report_html`) for whoever holds CANDOR_ADMIN_TOKEN.

A thin adapter: query → `Window` → the core's report → the page. `candor serve` mounts it only when
the token is set; without one there is no route (404), so nothing is exposed by default.

Who may see it: a request with ``Authorization: Bearer <token>``, or a browser that opened
``/dashboard?token=<token>`` once. A browser cannot send a bearer header by itself, so that one
request sets a cookie (HttpOnly, SameSite=Strict, Path=/dashboard) and redirects (303) to the same
URL without the token, which then leaves the address bar and the history. The cookie holds an HMAC
of the token, not the token, so it cannot be replayed as a bearer header. Every comparison is
constant-time (`hmac.compare_digest`). Anything else gets 401 with ``WWW-Authenticate: Bearer`` and
no report data.

`since`, `until`, `by` and `kb` work as for `candor report`; a bad value is a 400 with the message.
A database failure is a 503 with a short message, logged; the server goes on serving. Every
response says `no-store` (the page holds questions' sources and numbers), and the page's
Content-Security-Policy allows nothing but its own inline CSS and data: images.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from aiohttp import web

from bot.report_html import CSP, render_html
from rag.errors import CandorError
from rag.reporting import Window, report_window

log = logging.getLogger("candor.dashboard")

PATH = "/dashboard"
COOKIE = "candor_dashboard"
COOKIE_MAX_AGE = 12 * 3600
"""A browser is let in for 12 hours after opening the page with the token."""
DEFAULT_SINCE = "30d"
BY = ("day", "week")

UNAUTHORISED = (
    "Unauthorised: send 'Authorization: Bearer <CANDOR_ADMIN_TOKEN>', "
    "or open /dashboard?token=<CANDOR_ADMIN_TOKEN> once in a browser."
)
UNAVAILABLE = "The report is unavailable right now: the database could not be read. Try again in a moment."
UNEXPECTED = "The report could not be built. It has been logged."
_ALWAYS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
PAGE_HEADERS = {
    **_ALWAYS,
    "Content-Security-Policy": f"{CSP}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}


class ReportService(Protocol):
    """What the dashboard needs from the core (`rag.runtime.Candor` has it)."""

    async def report(self, window: Window) -> dict[str, Any]:
        """The report object of `window` (`rag.reporting.build_report`); raises `StoreError`."""
        ...


def add_routes(app: web.Application, service: ReportService, token: str) -> None:
    """Mount ``GET /dashboard`` on `app`, for holders of `token`."""
    app.router.add_get(PATH, Dashboard(service, token).page)


class Dashboard:
    """The one handler, with the token it checks against."""

    def __init__(self, service: ReportService, token: str) -> None:
        if not token:
            raise ValueError("the dashboard needs a token; without one, do not mount it")
        self._service = service
        self._token = token.encode("utf-8")
        self._cookie = hmac.new(self._token, b"candor dashboard cookie", hashlib.sha256).hexdigest().encode()

    async def page(self, request: web.Request) -> web.StreamResponse:
        offered = request.query.get("token")
        if offered is not None:
            return self._remember(request) if self._is_token(offered) else _unauthorised()
        if not self._authorised(request):
            return _unauthorised()
        try:
            window = query_window(request.query)
        except ValueError as exc:
            return _plain(400, str(exc))
        try:
            report = await self._service.report(window)
        except CandorError as exc:
            log.warning("dashboard: could not build the report: %s", exc)
            return _plain(503, UNAVAILABLE)
        except Exception:
            log.exception("dashboard: building the report raised an unexpected error")
            return _plain(500, UNEXPECTED)
        return web.Response(text=render_html(report), content_type="text/html", charset="utf-8", headers=PAGE_HEADERS)

    def _is_token(self, offered: str) -> bool:
        return hmac.compare_digest(offered.encode("utf-8"), self._token)

    def _authorised(self, request: web.Request) -> bool:
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return self._is_token(credentials.strip())
        cookie = request.cookies.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode("utf-8"), self._cookie)

    def _remember(self, request: web.Request) -> web.Response:
        """The token was right: set the cookie and send the browser to the URL without the token."""
        kept = [(key, value) for key, value in request.query.items() if key != "token"]
        response = web.Response(status=303, headers={**_ALWAYS, "Location": str(request.rel_url.with_query(kept))})
        response.set_cookie(
            COOKIE,
            self._cookie.decode(),
            path=PATH,
            max_age=COOKIE_MAX_AGE,
            httponly=True,
            samesite="Strict",
            secure=request.secure,
        )
        return response


def query_window(query: Mapping[str, str]) -> Window:
    """The window of ``?since=&until=&by=&kb=``, read as `candor report` reads its options."""
    by = query.get("by") or None
    if by is not None and by not in BY:
        raise ValueError(f"by must be day or week, not {by!r}")
    return report_window(
        query.get("since") or DEFAULT_SINCE,
        query.get("until") or None,
        by="day" if by == "day" else "week" if by == "week" else None,
        kb=query.get("kb") or None,
    )


def _plain(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers=_ALWAYS)


def _unauthorised() -> web.Response:
    return web.Response(
        status=401, text=UNAUTHORISED + "\n", headers={**_ALWAYS, "WWW-Authenticate": 'Bearer realm="candor dashboard"'}
    )
