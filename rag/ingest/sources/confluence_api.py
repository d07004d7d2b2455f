"""The HTTP side of the Confluence source: Basic auth (an account's email and an API token), a 429
waited out, and the REST API v2's cursor pagination (`_links.next`).

Every failure is an `ItemError` with a line a person can act on: the connector turns it into a
`SourceError` when it happens while listing (then nothing stored is removed) and a skipped document
when it happens while fetching one. A 401 or 403 says which environment variables hold the
credentials (never their values).

The credentials are sent to Confluence only. Nothing here asks for a URL off the configured site, and
a redirect that leaves it (a download Confluence answers with a 302 to its media host) is followed
without them: requests go through the guarded client (`outbound.Outbound`), which follows each
redirect by hand, sends `auth` to the site's own origin only, and checks every address it connects
to (`guard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from rag.errors import ItemError
from rag.ingest.sources.common import USER_AGENT
from rag.ingest.sources.guard import Network, origin, redact
from rag.ingest.sources.http import Limits, bounded_get, json_object
from rag.ingest.sources.outbound import Outbound

_MAX_RESULT_PAGES = 1000
"""Pages of results one listing follows (250 results each): a cursor that never ends stops here."""


class ConfluenceApi:
    def __init__(
        self,
        base_url: str,
        *,
        email: str,
        token: str,
        refused: str,
        timeout_seconds: float = 30.0,
        max_wait_seconds: float = 60.0,
        max_bytes: int = 50_000_000,
        network: Network | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.site = origin(self.base_url)
        self.refused = refused
        """What a 401 or 403 says: which variables to check (the connector words it)."""
        self._auth = aiohttp.BasicAuth(email, token)
        """Sent per request (see the module's docstring), so a redirect off the site carries none."""
        self._limits = Limits("Confluence", refused, timeout_seconds, max_wait_seconds)
        self._client = Outbound(
            network or Network(),
            owners=[self.site],
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout_seconds=timeout_seconds,
            max_bytes=max_bytes,
        )

    def url(self, path: str) -> str:
        """`path` under the base URL (`/api/v2/spaces`, a download link), or a site-relative link
        (`/wiki/api/v2/...?cursor=`, as `_links.next` gives it) on the site."""
        if path.startswith(("http://", "https://")):
            return path
        prefix = urlsplit(self.base_url).path
        if prefix and path.startswith(prefix + "/"):
            return self.site + path
        return self.base_url + (path if path.startswith("/") else "/" + path)

    async def get(self, url: str, params: Mapping[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body) of one GET on the site (`bounded_get`: a 429 waited out, refused credentials
        and an unreachable site one line each); a link off the site is never followed."""
        if origin(url) != self.site:
            raise ItemError(f"a link off the Confluence site was not followed: {redact(url)}")
        return await bounded_get(self._client, url, params, self._limits, auth=self._auth)

    async def get_json(self, url: str, params: Mapping[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """(status, the JSON object) of one GET; `{}` for a status other than 200."""
        status, body = await self.get(url, params)
        return status, json_object("Confluence", url, body) if status == 200 else {}

    async def results(self, path: str, params: Mapping[str, str]) -> list[dict[str, Any]]:
        """Every result of a v2 list endpoint, following `_links.next` to the end; `ItemError`
        when one of its pages does not answer 200."""
        found: list[dict[str, Any]] = []
        url, query = self.url(path), dict(params)
        for _ in range(_MAX_RESULT_PAGES):
            status, data = await self.get_json(url, query)
            if status != 200:
                raise ItemError(f"Confluence answered {status} for {urlsplit(url).path}")
            found.extend(r for r in data.get("results", []) if isinstance(r, dict))
            following = (data.get("_links") or {}).get("next")
            if not following:
                return found
            url, query = self.url(str(following)), {}
        raise ItemError(f"{path} did not end after {_MAX_RESULT_PAGES} pages of results")

    async def aclose(self) -> None:
        await self._client.aclose()
