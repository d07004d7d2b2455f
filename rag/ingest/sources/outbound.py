"""The one client every source's requests go out through (`Outbound`): the network guard on every
connection (`guard.Network`), redirects followed by hand and checked before they are followed,
credentials sent to the source's own origins only, and each body read whole, up to a limit.

- Redirects: up to five, each `Location` checked before a connection is made to it: off the hosts
  the source may reach (`reach`, when it has one: a website's own sites) it is refused (`OffSite`),
  so no body from elsewhere is ever downloaded.
- Credentials: the `Authorization`, `Proxy-Authorization` and `Cookie` headers a request carries,
  its `auth` and the client's own `credentials` go only to the origins in `owners`; a hop anywhere
  else (a media host, a pre-signed download URL) is made without them.
- Bodies: a response is read to its end (a body arriving in pieces is read in pieces, never cut at
  what happened to be buffered) and refused (`TooLarge`, naming its size) above `max_bytes`.

A refusal of the guard, the reach or the size is an `ItemError` of its own; a connection that fails
or times out is left to the caller as aiohttp's error (or `TimeoutError`), which it words for its
service.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from rag.errors import ItemError
from rag.ingest.sources.guard import BlockedAddress, Network, origin, redact

__all__ = ["OffSite", "Outbound", "Refused", "Reply", "TooLarge", "read_whole"]

_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PIECE = 64 * 1024
_ERROR_BODY = 1_000_000
"""An error status's body is read up to this (services explain themselves in it); beyond, dropped."""


class Refused(ItemError):
    """The network guard refused the address (see `guard`)."""


class OffSite(ItemError):
    """A request or a redirect to a host the source may not reach."""


class TooLarge(ItemError):
    """A body over the limit; nothing of it is kept."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str
    """Where the body came from, after redirects."""


class Outbound:
    def __init__(
        self,
        network: Network,
        *,
        owners: Collection[str],
        reach: Collection[str] | None = None,
        headers: Mapping[str, str] | None = None,
        credentials: Mapping[str, str] | None = None,
        timeout_seconds: float,
        max_bytes: int,
        max_redirects: int = 5,
    ) -> None:
        """`owners`: the origins (`guard.origin`) credentials go to. `reach`: the origins requests and
        redirects may go to (None: anywhere the guard allows). `headers` go with every request,
        `credentials` (headers too) only to `owners`."""
        self.network = network
        self.owners = frozenset(origin(o) for o in owners)
        self.reach = None if reach is None else frozenset(origin(r) for r in reach)
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds
        self._headers = dict(headers or {})
        self._credentials = dict(credentials or {})
        self._max_redirects = max_redirects
        self._session: aiohttp.ClientSession | None = None

    def reaches(self, url: str) -> bool:
        return self.reach is None or origin(url) in self.reach

    async def get(
        self,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: aiohttp.BasicAuth | None = None,
    ) -> Reply:
        return await self.request("GET", url, params=params, headers=headers, auth=auth)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        auth: aiohttp.BasicAuth | None = None,
    ) -> Reply:
        """One request, its redirects followed (each checked first), its body read whole."""
        current: str | URL = url
        query = dict(params) if params else None
        for hop in range(self._max_redirects + 1):
            self._check(str(current), redirected=hop > 0)
            trusted = origin(str(current)) in self.owners
            sent = self._sent(headers, trusted)
            try:
                async with self._client().request(
                    method, current, params=query, headers=sent, data=data, auth=auth if trusted else None,
                    allow_redirects=False,
                ) as response:  # fmt: skip
                    location = response.headers.get("Location") if response.status in _REDIRECTS else None
                    if location is None:
                        body = await _body(response, self.max_bytes)
                        kept = CIMultiDictProxy(CIMultiDict(response.headers))
                        return Reply(response.status, kept, body, str(current))
                    here = response.url
                    status = response.status
            except aiohttp.ClientConnectorError as exc:
                blocked = _blocked(exc)
                if blocked is not None:
                    raise Refused(redact(str(blocked))) from exc
                raise
            current, query = here.join(URL(location)), None
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, data = "GET", None
        raise ItemError(f"more than {self._max_redirects} redirects, the last to {redact(str(current))}")

    def _check(self, url: str, *, redirected: bool) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise OffSite(f"{'redirected to' if redirected else 'not'} an http(s) URL: {redact(url)}")
        if not self.reaches(url):
            where = "redirected off the site, to" if redirected else "off the site:"
            raise OffSite(f"{where} {redact(url)}")
        host = parts.hostname or ""
        try:
            self.network.check(host, host)
        except BlockedAddress as exc:
            raise Refused(redact(str(exc))) from exc
        except ValueError:
            pass  # a name, not an address: the resolver checks what it resolves to

    def _sent(self, headers: Mapping[str, str] | None, trusted: bool) -> dict[str, str]:
        sent = dict(self._credentials) if trusted else {}
        for name, value in (headers or {}).items():
            if trusted or name.lower() not in _CREDENTIAL_HEADERS:
                sent[name] = value
        return sent

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self.network.session(timeout_seconds=self.timeout_seconds, headers=self._headers)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def read_whole(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, read piece by piece as it arrives; `TooLarge`, with its size, above `limit`.
    A declared `Content-Length` over the limit is refused before anything is downloaded; a body
    that runs over it is counted on to twice the limit, so the line says how large it is."""
    declared = response.content_length
    if declared is not None and declared > limit and "Content-Encoding" not in response.headers:
        raise TooLarge(f"{declared:,} bytes, larger than the limit of {limit:,} bytes (not downloaded)")
    data = bytearray()
    async for piece in response.content.iter_chunked(_PIECE):
        data += piece
        if len(data) > limit:
            seen = len(data)
            async for more in response.content.iter_chunked(_PIECE):
                seen += len(more)
                if seen > 2 * limit:
                    raise TooLarge(f"more than {2 * limit:,} bytes, larger than the limit of {limit:,} bytes")
            raise TooLarge(f"{seen:,} bytes, larger than the limit of {limit:,} bytes")
    return bytes(data)


async def _body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    if 200 <= response.status < 300:
        return await read_whole(response, limit)
    try:
        return await read_whole(response, min(limit, _ERROR_BODY))
    except TooLarge:
        return b""


def _blocked(exc: BaseException) -> BlockedAddress | None:
    """The guard's refusal behind a connection error, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BlockedAddress):
            return seen
        if isinstance(seen, aiohttp.ClientConnectorError) and isinstance(seen.os_error, BlockedAddress):
            return seen.os_error
        seen = seen.__cause__
    return None
