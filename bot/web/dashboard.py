"""`/dashboard`: the report page (`bot.render.report_html`) for whoever holds CANDOR_ADMIN_TOKEN.

A thin adapter: query → `Window` → the core's report → the page. `candor serve` mounts it only when
the token is set; without one there is no route (404), so nothing is exposed by default.

Who may see it (the rules are in `bot.web.dashboard_auth`):

- a script sends ``Authorization: Bearer <token>`` with every request. A bearer header with anything
  but the token is a 401 with ``WWW-Authenticate: Bearer`` and a line of text.
- a browser opens ``/dashboard`` and, without a valid cookie, gets the login form (401, a small page of
  its own, no report data). The token goes into a password field and is POSTed to
  ``/dashboard/login``: in the request body, so never in a URL, an access or proxy log, or the
  history. Right: a cookie (HttpOnly, SameSite=Strict, Path=/dashboard, Secure over HTTPS; 12 hours)
  and a 303 to ``/dashboard`` with the form's since/until/by/kb (checked as the page checks them).
  Wrong: the form again, 401, saying so. A token in the URL (``?token=``) is not read at all.
- the login is refused (403) unless it comes from this server's own page (`Sec-Fetch-Site` and
  `Origin`, when the browser sends them); the form page's Content-Security-Policy allows a form to
  post only to this server (``form-action 'self'``).
- 10 failed logins (wrong form token or wrong bearer header) from one address within a minute: 429
  with ``Retry-After`` to every login from it for a minute, the right token included.

`since`, `until`, `by` and `kb` work as for `candor report`; a bad value is a 400 with the message.
A database failure is a 503 with a short message, logged; the server goes on serving. Every
response says `no-store`, and the report page's Content-Security-Policy allows nothing but its own
inline CSS and data: images.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from aiohttp import web

from bot.render.report_html import CSP, render_html
from bot.web.admin_limit import login_limiter
from bot.web.dashboard_auth import COOKIE_MAX_AGE, LoginLimiter, TokenCheck, same_origin
from bot.web.identity import Network, client_of
from bot.web.pages import add_page_routes
from bot.web.review import add_review_routes
from bot.web.sources import SOURCES, SourcesService, add_source_routes, next_pages
from rag import AuditRequest, Window, report_window
from rag.errors import CandorError

if TYPE_CHECKING:
    from bot.server import LoopService

log = logging.getLogger("candor.dashboard")

PATH = "/dashboard"
LOGIN = "/dashboard/login"
COOKIE = "candor_dashboard"
DEFAULT_SINCE = "30d"
BY = ("day", "week")
WINDOW_KEYS = ("since", "until", "by", "kb", "next")
REVIEW = "/dashboard/review"
_NEXT = re.compile(r"^/dashboard(?:/review|/answers|/traces/[0-9a-fA-F-]{36})?$|^(?:" + "|".join(next_pages()) + ")$")
"""Where a login may return to: the dashboard's own pages only."""


def next_page(asked: str) -> str:
    """`asked` when it is one of the dashboard's pages, else the report."""
    return asked if _NEXT.fullmatch(asked) else PATH


UNAUTHORISED = "Unauthorised: the bearer token is not CANDOR_ADMIN_TOKEN."
WRONG_TOKEN = "That is not the admin token."
TOO_MANY = "Too many failed logins from your address: try again in a minute."
CROSS_SITE = "Refused: log in from this server's own /dashboard page."
UNAVAILABLE = "The report is unavailable right now: the database could not be read. Try again in a moment."
UNEXPECTED = "The report could not be built. It has been logged."
_ALWAYS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
_BEARER = {"WWW-Authenticate": 'Bearer realm="candor dashboard"'}
PAGE_HEADERS = {
    **_ALWAYS,
    "Content-Security-Policy": f"{CSP}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}
LOGIN_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
LOGIN_HEADERS = {**_ALWAYS, **_BEARER, "Content-Security-Policy": LOGIN_CSP}
LOGIN_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:26em;margin:12vh auto;padding:0 16px;color:#1a1a1a}"
    "label,input,button{display:block;width:100%;box-sizing:border-box;margin:6px 0}"
    "input,button{font:inherit;padding:8px}.error{color:#a00;font-weight:600}"
)


class ReportService(Protocol):
    """What the dashboard needs from the core (`rag.runtime.Candor` has it)."""

    async def report(self, window: Window) -> dict[str, Any]:
        """The report object of `window` (`rag.insights.report.build.build_report`); raises `StoreError`."""
        ...

    async def review_queue(self, request: AuditRequest) -> dict[str, Any]:
        """The review queue's next items (`rag.insights.audit.review`)."""
        ...

    async def store_review_label(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Store one label from the review queue; `AuditError` says what is wrong with it."""
        ...

    async def trace(self, trace_id: str) -> dict[str, Any] | None:
        """One trace with its hand-offs and curated answers (`Candor.trace`); None when unknown."""
        ...

    @property
    def loop(self) -> LoopService: ...


def add_routes(
    app: web.Application,
    service: ReportService,
    token: str,
    *,
    limiter: LoginLimiter | None = None,
    trusted_proxies: Sequence[Network] = (),
    sources: SourcesService | None = None,
) -> None:
    """Mount ``GET /dashboard`` and ``POST /dashboard/login`` on `app`, for holders of `token`; with
    `sources`, the sources, knowledge bases and documents pages (`bot.web.sources`) too.

    Behind a reverse proxy in `trusted_proxies` (CANDOR_WEB_TRUSTED_PROXIES) the login limiter counts
    the browser's address the proxy forwarded, and the cookie is `Secure` when the browser used HTTPS.
    The limiter is the application's (`admin_limit.login_limiter`), shared with `/metrics`."""
    limits = login_limiter(app, limiter)
    dashboard = Dashboard(service, TokenCheck(token), limits, tuple(trusted_proxies), with_sources=sources is not None)
    app.router.add_get(PATH, dashboard.page)
    app.router.add_post(LOGIN, dashboard.login)
    add_review_routes(app, service, dashboard.refusal)
    add_page_routes(app, service, dashboard.refusal)
    if sources is not None:
        add_source_routes(app, sources, dashboard.refusal)


class Dashboard:
    """The two handlers, with the token they check against and the failed logins they count."""

    def __init__(
        self,
        service: ReportService,
        check: TokenCheck,
        limiter: LoginLimiter,
        trusted: tuple[Network, ...] = (),
        *,
        with_sources: bool = False,
    ) -> None:
        self._service = service
        self._check = check
        self._limiter = limiter
        self._trusted = trusted
        self._sources_url = SOURCES if with_sources else None

    def refusal(self, request: web.Request, *, back_to: str | None = PATH) -> web.Response | None:
        """None for the admin (a valid bearer token or login cookie); else the response that refuses:
        401 (or 429) for a bearer token, the login form (returning to `back_to`) for a browser."""
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            refused = self._attempt(request, credentials.strip())
            if refused:
                return _plain(refused[0], UNAUTHORISED if refused[0] == 401 else TOO_MANY, {**_BEARER, **refused[1]})
            return None
        if not self._check.is_cookie(request.cookies.get(COOKIE, "")):
            kept = {key: value for key, value in _kept(request.query).items() if key != "next"}
            return login_response(401, None, {**kept, "next": back_to} if back_to and back_to != PATH else kept)
        return None

    async def page(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            return refused
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
        kept = {key: value for key, value in _kept(request.query).items() if key in ("since", "until", "kb")}
        review = REVIEW + ("?" + urlencode(kept) if kept else "")
        page = render_html(report, review_url=review, sources_url=self._sources_url)
        return web.Response(text=page, content_type="text/html", charset="utf-8", headers=PAGE_HEADERS)

    async def login(self, request: web.Request) -> web.StreamResponse:
        if not same_origin(request.headers, request.host):
            return _plain(403, CROSS_SITE)
        form = await request.post()
        kept = _kept(form)
        try:
            query_window(kept)
        except ValueError as exc:
            return _plain(400, str(exc))
        token = form.get("token")
        refused = self._attempt(request, token if isinstance(token, str) else "")
        if refused:
            return login_response(refused[0], WRONG_TOKEN if refused[0] == 401 else TOO_MANY, kept, refused[1])
        back_to = next_page(str(form.get("next") or ""))  # one of our paths: never another site
        window = {key: value for key, value in kept.items() if key != "next"}
        location = back_to + ("?" + urlencode(window) if window else "")
        response = web.Response(status=303, headers={**_ALWAYS, "Location": location})
        response.set_cookie(
            COOKIE,
            self._check.new_cookie(),
            path=PATH,
            max_age=COOKIE_MAX_AGE,
            httponly=True,
            samesite="Strict",
            secure=client_of(request, self._trusted).secure,
        )
        return response

    def _attempt(self, request: web.Request, offered: str) -> tuple[int, dict[str, str]] | None:
        """None when `offered` is the token; else the status to refuse with and its extra headers: 401,
        or 429 with Retry-After while the address is locked out (the token is then not even compared)."""
        address = client_of(request, self._trusted).address
        wait = self._limiter.retry_after(address)
        if wait is not None:
            return 429, {"Retry-After": str(wait)}
        if offered and self._check.is_token(offered):
            self._limiter.succeeded(address)
            return None
        self._limiter.failed(address)
        log.warning("dashboard: a wrong admin token from %s", address, extra={"remote": address})
        return 401, {}


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


def login_page(message: str | None, kept: Mapping[str, str]) -> str:
    """The login form: a password field and the window's parameters as hidden fields; no report data."""
    hidden = "".join(
        f'<input type="hidden" name="{key}" value="{escape(value, quote=True)}">' for key, value in kept.items()
    )
    error = f'<p class="error" role="alert">{escape(message)}</p>' if message else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width"><title>Candor dashboard: log in</title>'
        f"<style>{LOGIN_STYLE}</style></head>\n<body><main><h1>Candor dashboard</h1>{error}"
        f'<form method="post" action="{LOGIN}"><label for="token">Admin token (CANDOR_ADMIN_TOKEN)</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>'
        f'{hidden}<button type="submit">Open the report</button></form>'
        "<p>Scripts send <code>Authorization: Bearer &lt;token&gt;</code> instead.</p></main></body></html>\n"
    )


def login_response(
    status: int, message: str | None, kept: Mapping[str, str], headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        text=login_page(message, kept),
        content_type="text/html",
        charset="utf-8",
        headers={**LOGIN_HEADERS, **(headers or {})},
    )


def _kept(fields: Mapping[str, Any]) -> dict[str, str]:
    """The window's parameters among `fields` (a query or a form), non-empty text only, in order."""
    return {key: value for key in WINDOW_KEYS if isinstance(value := fields.get(key), str) and value.strip()}


def _plain(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers={**_ALWAYS, **(headers or {})})
