"""The HTTP side of the SharePoint / OneDrive source: an app-only token for Microsoft Graph (the
OAuth client-credentials flow), a 429 or 503 waited out, and `@odata.nextLink` paging.

The token comes from MSAL (`msal`, already in the environment through the Bot Framework, MIT,
maintained by Microsoft): it finds the tenant's token endpoint (`{authority}/{tenant}/v2.0/.well-
known/openid-configuration`, which names `{authority}/{tenant}/oauth2/v2.0/token`), posts the client
id and secret, and caches the token until it nearly expires. MSAL is blocking (requests), so each
call runs in a thread; it insists on an `https://` authority, so the tests' fake serves its token
endpoint over TLS with a throwaway CA (`tests/fakes/tls.py`). Graph itself is called with aiohttp,
not `msgraph-sdk`: a few GETs of JSON and bytes do not need its hundreds of generated modules.

Every failure is an `ItemError` with a line a person can act on: the connector turns it into a
`SourceError` while listing (nothing stored is removed) and a skipped document while fetching one.
A refused secret (an AADSTS error from the token endpoint, or a 401 or 403 from Graph) names the
environment variables to check, never their values. A `@odata.nextLink` off Graph's host is not
followed, so the token is sent to Graph only: requests go through the guarded client
(`outbound.Outbound`), which follows a download's redirect to SharePoint's pre-signed URL by hand,
without the Authorization header, and checks every address it connects to (`guard`). The token
endpoint is MSAL's own (requests), at the configured `authority`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import msal

from rag.errors import ItemError
from rag.ingest.sources.common import USER_AGENT
from rag.ingest.sources.guard import Network, origin, redact
from rag.ingest.sources.http import Limits, bounded_get, json_object
from rag.ingest.sources.outbound import Outbound

_MAX_RESULT_PAGES = 2000
"""Pages of results one listing follows: a nextLink that never ends stops here."""
_EARLY = 300.0
"""Seconds before a token's expiry it is renewed, so a long sync never sends an expired one."""
_AADSTS = re.compile(r"\bAADSTS\d+\b")


class GraphApi:
    def __init__(
        self,
        graph_url: str,
        *,
        authority: str,
        tenant: str,
        client_id: str,
        client_secret: str,
        scope: str,
        refused: str,
        timeout_seconds: float = 30.0,
        max_wait_seconds: float = 60.0,
        max_bytes: int = 50_000_000,
        network: Network | None = None,
    ) -> None:
        self.graph_url = graph_url.rstrip("/")
        self.refused = refused
        """What a refused secret says: which variables to check (the connector words it)."""
        self._authority = f"{authority.rstrip('/')}/{tenant}"
        self._client_id = client_id
        self._secret = client_secret
        self._scope = scope
        self._timeout = timeout_seconds
        self._limits = Limits("Graph", refused, timeout_seconds, max_wait_seconds, throttled=(429, 503))
        """A 429 or a 503 (Graph's throttling) is waited out, each its Retry-After, twice."""
        self._app: Any = None
        self._token: tuple[str, float] | None = None
        self._client = Outbound(
            network or Network(),
            owners=[self.graph_url],
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout_seconds=timeout_seconds,
            max_bytes=max_bytes,
        )
        self.token_requests = 0
        """Tokens asked of MSAL (it may answer from its cache)."""

    def url(self, path: str) -> str:
        """`path` under Graph's base URL (`/sites/...`), or an absolute link (a nextLink) as it is."""
        if path.startswith(("http://", "https://")):
            return path
        return self.graph_url + (path if path.startswith("/") else "/" + path)

    # --- the token -------------------------------------------------------------------------

    async def bearer(self) -> str:
        """A valid access token for Graph, renewed a few minutes before it expires."""
        if self._token is not None and time.monotonic() < self._token[1]:
            return self._token[0]
        self.token_requests += 1
        try:
            result = await asyncio.to_thread(self._acquire)
        except ValueError as exc:  # MSAL: the tenant's OpenID configuration could not be read
            raise ItemError(f"the sign-in endpoint does not know the tenant: {self.refused}") from exc
        except OSError as exc:  # requests' errors (MSAL's transport) are OSErrors
            raise ItemError(f"the sign-in endpoint could not be reached ({type(exc).__name__})") from exc
        token = result.get("access_token")
        if not isinstance(token, str) or not token:
            error = str(result.get("error") or "no access token")
            codes = _AADSTS.findall(str(result.get("error_description") or ""))
            raise ItemError(f"the sign-in endpoint answered {', '.join([error, *codes])}: {self.refused}")
        lifetime = float(result.get("expires_in") or 3600)
        self._token = (token, time.monotonic() + max(lifetime - _EARLY, lifetime / 2))
        return token

    def _acquire(self) -> dict[str, Any]:
        if self._app is None:
            self._app = msal.ConfidentialClientApplication(
                self._client_id,
                client_credential=self._secret,
                authority=self._authority,
                instance_discovery=False,  # a sovereign or test authority is taken as given
                timeout=self._timeout,
                token_cache=msal.TokenCache(),
            )
        found = self._app.acquire_token_for_client(scopes=[self._scope])
        return dict(found) if isinstance(found, Mapping) else {}

    # --- Graph -----------------------------------------------------------------------------

    async def get(self, url: str, params: Mapping[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body) of one GET with the bearer token (`bounded_get`: a 429 or 503 waited out,
        refused credentials and an unreachable Graph one line each); a link off Graph is never followed."""
        if origin(url) != origin(self.graph_url):
            raise ItemError(f"a link off Microsoft Graph was not followed: {redact(url)}")

        async def bearer() -> dict[str, str]:
            return {"Authorization": f"Bearer {await self.bearer()}"}

        return await bounded_get(self._client, url, params, self._limits, headers=bearer)

    async def get_json(self, url: str, params: Mapping[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """(status, the JSON object) of one GET; `{}` for a status other than 200."""
        status, body = await self.get(url, params)
        return status, json_object("Graph", url, body) if status == 200 else {}

    async def values(self, path: str, params: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Every entry of a Graph collection (`value`), following `@odata.nextLink` to the end;
        `ItemError` naming the status when one of its pages does not answer 200."""
        status, found = await self.collection(path, params)
        if status != 200:
            raise ItemError(f"Graph answered {status} for {urlsplit(self.url(path)).path}")
        return found

    async def collection(self, path: str, params: Mapping[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
        """(200, every entry) of a Graph collection, following `@odata.nextLink`; or the status of
        the first page that did not answer 200 (and what came before it)."""
        found: list[dict[str, Any]] = []
        url, query = self.url(path), dict(params or {})
        for _ in range(_MAX_RESULT_PAGES):
            status, data = await self.get_json(url, query)
            if status != 200:
                return status, found
            found.extend(v for v in data.get("value", []) if isinstance(v, dict))
            following = data.get("@odata.nextLink")
            if not following:
                return status, found
            url, query = str(following), {}
        raise ItemError(f"{path} did not end after {_MAX_RESULT_PAGES} pages of results")

    async def aclose(self) -> None:
        await self._client.aclose()
