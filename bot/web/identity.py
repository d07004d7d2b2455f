"""Who is asking on the chat page: a visitor's cookie, or the identity an authenticating proxy vouched for.

Identity never comes from the request body. `candor serve` mounts the page with one of two logins
(`chat_login` decides which from CANDOR_WEB_CHAT and where the server listens):

- `AnonymousVisitors`: each browser gets a random id in the ``candor_user`` cookie. It tells one
  browser's questions and votes apart; it authenticates nobody, so an anonymous question reads public
  documents only and no access rule matches it (`bot.web.routes`).
- `ProxyLogin`: an authenticating reverse proxy in front of Candor (oauth2-proxy, Google IAP, a
  corporate SSO gateway) signs people in and passes who they are in a header
  (CANDOR_WEB_USER_HEADER, default ``X-Forwarded-Email``). The header is believed only on a request
  whose peer address is one of CANDOR_WEB_TRUSTED_PROXIES: anyone else could type it. A request
  without it, or from another address, is refused (401). Access rules with ``platform: web`` and
  an ``asker`` then grant that person's groups.

The modes of CANDOR_WEB_CHAT:
- ``auto`` (default): the anonymous page when the server listens on a loopback address and serves
  no Slack or Teams (trying Candor on one's own machine); no page otherwise, because a server that
  takes Slack or Teams events is reached from outside, often through a proxy on the same host;
- ``anonymous``: the anonymous page on any address (a public help page over public documents);
- ``proxy``: the page behind an authenticating proxy, as above;
- ``off``: no page and no ``/api/ask``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from aiohttp import web

from rag.errors import ConfigError

log = logging.getLogger("candor.web")

ChatMode = Literal["auto", "off", "anonymous", "proxy"]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

USER_COOKIE = "candor_user"
COOKIE_MAX_AGE = 365 * 24 * 3600
USER_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,200}")
"""An id as a browser cookie or a proxy header carries it (an email, ``accounts.google.com:a@b.c``)."""


@dataclass(frozen=True, slots=True)
class WebUser:
    id: str
    authenticated: bool
    """Vouched for by a login (the proxy); False for an anonymous browser."""


class NotSignedIn(Exception):
    """The request carries no identity this page accepts; the message is for the person."""


class ChatLogin(Protocol):
    def identify(self, request: web.BaseRequest, response: web.StreamResponse) -> WebUser:
        """Who sent `request`; may set a cookie on `response`. Raises `NotSignedIn`."""
        ...


class AnonymousVisitors:
    """Every browser is welcome and anonymous: its cookie id, or a new one set on the response."""

    def identify(self, request: web.BaseRequest, response: web.StreamResponse) -> WebUser:
        cookie = request.cookies.get(USER_COOKIE)
        if cookie is not None and USER_ID.fullmatch(cookie) and cookie.startswith("web-"):
            return WebUser(cookie, authenticated=False)
        minted = "web-" + secrets.token_hex(8)
        response.set_cookie(USER_COOKIE, minted, max_age=COOKIE_MAX_AGE, httponly=True, samesite="Strict", path="/")
        return WebUser(minted, authenticated=False)


class ProxyLogin:
    """The identity header of an authenticating proxy, believed from the proxy's addresses only."""

    def __init__(self, header: str, trusted: Sequence[Network]) -> None:
        if not header.strip():
            raise ConfigError("CANDOR_WEB_USER_HEADER: name the header the sign-in proxy sets")
        if not trusted:
            raise ConfigError(
                "CANDOR_WEB_TRUSTED_PROXIES: CANDOR_WEB_CHAT=proxy needs the sign-in proxy's addresses "
                "(e.g. 10.0.0.5 or 10.0.0.0/24); a header from anywhere else could be typed by anyone"
            )
        self.header = header.strip()
        self.trusted = tuple(trusted)

    def identify(self, request: web.BaseRequest, response: web.StreamResponse) -> WebUser:
        if not self._from_proxy(request.remote):
            log.warning("chat page request from %s, not a trusted proxy: refused", request.remote)
            raise NotSignedIn("Sign in first: this page answers only through the organisation's sign-in.")
        value = request.headers.get(self.header, "").strip()
        if not value:
            raise NotSignedIn("Sign in first: the sign-in proxy did not say who you are.")
        if not USER_ID.fullmatch(value):
            log.warning("the sign-in proxy's %s header is not a usable id: refused", self.header)
            raise NotSignedIn("Your sign-in could not be read by this page; ask the administrator.")
        return WebUser(value, authenticated=True)

    def _from_proxy(self, remote: str | None) -> bool:
        return _within(remote or "", self.trusted)


@dataclass(frozen=True, slots=True)
class Client:
    address: str
    secure: bool
    """The browser reached us over HTTPS (directly, or to a proxy that ended TLS)."""


def client_of(request: web.BaseRequest, trusted: Sequence[Network]) -> Client:
    """Who is on the other end: from a trusted reverse proxy, the nearest address it forwarded
    for (`X-Forwarded-For`, read from the right, skipping the proxies) and whether the browser used
    HTTPS (`X-Forwarded-Proto`); from anyone else, the peer itself (its headers are not believed)."""
    remote = request.remote or "unknown"
    if not _within(remote, trusted):
        return Client(remote, request.secure)
    hops = [hop.strip() for hop in request.headers.get("X-Forwarded-For", "").split(",") if hop.strip()]
    address = next((hop for hop in reversed(hops) if not _within(hop, trusted)), remote)
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return Client(address, request.secure or proto == "https")


def _within(address: str, networks: Sequence[Network]) -> bool:
    try:
        parsed = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return any(parsed in network for network in networks)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def chat_login(
    mode: ChatMode, *, host: str, platforms: bool, header: str, trusted: Sequence[Network]
) -> ChatLogin | None:
    """The login the chat page runs with, or None for no page (see the module docstring)."""
    if mode == "off":
        return None
    if mode == "proxy":
        return ProxyLogin(header, trusted)
    if mode == "anonymous":
        return AnonymousVisitors()
    return AnonymousVisitors() if is_loopback(host) and not platforms else None


def chat_page_line(login: ChatLogin | None, mode: ChatMode) -> str:
    """What `candor serve` prints about the chat page."""
    if isinstance(login, ProxyLogin):
        return f"Chat page: at /, for people the sign-in proxy vouches for ({login.header})"
    if login is not None:
        return "Chat page: at /, anonymous: public documents only"
    if mode == "auto":
        return "Chat page: off (serving Slack or Teams, or not on a loopback address; see CANDOR_WEB_CHAT)"
    return "Chat page: off (CANDOR_WEB_CHAT=off)"
