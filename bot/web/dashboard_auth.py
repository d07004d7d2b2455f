"""Who may open `/dashboard`: the token, the browser's cookie, the login limiter, the same-origin check.

Pure rules with no web framework in them; `bot.web.dashboard` applies them to requests.

The cookie a browser gets after logging in is ``<issued_at>.<mac>``: `issued_at` whole seconds of the
server's clock, `mac` the hex HMAC-SHA256 of ``candor-dashboard:<issued_at>`` keyed with the admin
token. It is refused 12 hours after `issued_at`, and when `issued_at` is in the future; a new token
refuses every cookie made with the old one. It holds no token, so it cannot be replayed as a bearer
header. Every comparison is constant-time (`hmac.compare_digest`).

`LoginLimiter`: 10 failed logins from one address within a minute lock that address out of logging
in for a minute (the caller answers 429), even with the right token, so a token cannot be guessed
fast. It lives in memory, per process; behind a reverse proxy every client has the proxy's address,
so a flood of wrong tokens locks everyone out for that minute (the price of a simple limiter on an
admin page).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

COOKIE_MAX_AGE = 12 * 3600
"""A browser stays logged in for 12 hours after logging in (the server's clock decides)."""
COOKIE_CONTEXT = "candor-dashboard:"
FAILURES = 10
PER_SECONDS = 60.0


class TokenCheck:
    """The admin token, and the cookies made from it."""

    def __init__(self, token: str, *, clock: Callable[[], float] = time.time) -> None:
        if not token:
            raise ValueError("the dashboard needs a token; without one, do not mount it")
        self._token = token.encode("utf-8")
        self._clock = clock

    def is_token(self, offered: str) -> bool:
        return hmac.compare_digest(offered.encode("utf-8"), self._token)

    def new_cookie(self) -> str:
        issued = str(int(self._clock()))
        return f"{issued}.{self._mac(issued)}"

    def is_cookie(self, value: str) -> bool:
        """Made with this token, less than 12 hours ago, and not in the future."""
        issued, dot, mac = value.partition(".")
        if not dot or not (issued.isascii() and issued.isdigit()) or len(issued) > 12:
            return False
        if not hmac.compare_digest(mac.encode("utf-8"), self._mac(issued).encode("ascii")):
            return False
        return 0 <= self._clock() - int(issued) <= COOKIE_MAX_AGE

    def _mac(self, issued: str) -> str:
        return hmac.new(self._token, (COOKIE_CONTEXT + issued).encode("ascii"), hashlib.sha256).hexdigest()


class LoginLimiter:
    """Failed logins per address: `failures` within `per_seconds` lock the address out for `per_seconds`."""

    def __init__(
        self,
        failures: int = FAILURES,
        per_seconds: float = PER_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = 10_000,
    ) -> None:
        if failures < 1 or per_seconds <= 0:
            raise ValueError("the limiter needs at least one failure and a positive window")
        self._failures, self._window, self._clock, self._max = failures, per_seconds, clock, max_addresses
        self._recent: dict[str, deque[float]] = {}
        self._locked: dict[str, float] = {}

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until `address` may try again; None when it may now."""
        until = self._locked.get(address)
        if until is None:
            return None
        left = until - self._clock()
        if left <= 0:
            del self._locked[address]
            return None
        return max(1, math.ceil(left))

    def failed(self, address: str) -> None:
        now = self._clock()
        recent = self._recent.setdefault(address, deque())
        while recent and recent[0] <= now - self._window:
            recent.popleft()
        recent.append(now)
        if len(recent) >= self._failures:
            self._locked[address] = now + self._window
            del self._recent[address]
        if len(self._recent) > self._max:
            self._forget(now)

    def succeeded(self, address: str) -> None:
        self._recent.pop(address, None)

    def _forget(self, now: float) -> None:
        """Bounded memory: drop failures that no longer count, then those of the oldest addresses
        (an address is locked only after `failures` failures, so the locks stay few)."""
        self._recent = {a: r for a, r in self._recent.items() if r and r[-1] > now - self._window}
        self._locked = {a: until for a, until in self._locked.items() if until > now}
        while len(self._recent) > self._max:
            del self._recent[next(iter(self._recent))]


def same_origin(headers: Mapping[str, str], host: str) -> bool:
    """A form post from this server's own page: `Sec-Fetch-Site` (when the browser sends it) says
    same-origin, and `Origin` (when sent) names this server: `host` (the request's Host) or the
    first `X-Forwarded-Host` a reverse proxy added (a cross-site form cannot set that header).
    Compared by host and port, not scheme: a proxy ending TLS shows http where the browser saw https.
    Our pages send no referrer, so a browser posts from them with ``Origin: null``: accepted only
    with ``Sec-Fetch-Site: same-origin`` (found in headless Chromium: the login form was refused)."""
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return False
    origin = headers.get("Origin")
    if origin is None:
        return True
    if origin == "null":  # a page with `Referrer-Policy: no-referrer` (ours) posts with Origin "null":
        return site == "same-origin"  # then only the browser's own word on the site counts
    parts = urlsplit(origin)
    ours = {host.lower(), headers.get("X-Forwarded-Host", "").split(",")[0].strip().lower()} - {""}
    return parts.scheme in ("http", "https") and parts.netloc.lower() in ours
