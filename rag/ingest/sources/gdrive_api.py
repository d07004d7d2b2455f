"""The HTTP side of the Google Drive source: a service account's access token (google-auth), the Drive
API v3 over aiohttp, a 429 (or a 403 `rateLimitExceeded`) waited out, and `nextPageToken` pagination.

Why aiohttp and not google-api-python-client: Candor is async throughout, and the official client is
synchronous (httplib2 under it, each call run in a thread), pulls in httplib2, uritemplate,
google-api-core and protobuf, and hides the status and the error's `reason` that decide what a sync
does (a 403 `exportSizeLimitExceeded` skips one file, a 403 `rateLimitExceeded` is waited out, a 401
stops the source). The source needs five GET endpoints (`drives.get`, `files.get`, `files.list`,
`files.export`, `permissions.list`), which aiohttp calls directly, in the shapes of the public REST
reference. The token is the one part worth a library: google-auth signs the JWT assertion with the
key and runs the OAuth JWT-bearer grant against the key's own `token_uri` (optionally as `subject`,
for domain-wide delegation). Its refresh is synchronous (its `requests` transport), so it runs in a
thread, once an hour at most.

Every failure is an `ItemError` with a line a person can act on: the connector turns it into a
`SourceError` while listing (then nothing stored is removed) and a skipped file while fetching one.
A refused key names the environment variable that holds it, never its value. Requests go to the
configured API root only, through the guarded client (`outbound.Outbound`: every address checked,
redirects followed by hand, the token sent to the API's origin only, bodies read whole), so the
token is sent nowhere else. The token endpoint is google-auth's own (requests), at the key's
`token_uri`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import requests
from google.auth.exceptions import GoogleAuthError, RefreshError, TransportError
from google.auth.transport.requests import Request as TokenTransport
from google.oauth2 import service_account

from rag.errors import ItemError
from rag.ingest.sources.common import USER_AGENT
from rag.ingest.sources.guard import Network
from rag.ingest.sources.outbound import Outbound
from rag.ingest.sources.retry_after import retry_after

log = logging.getLogger("candor.sync.gdrive")

SCOPES = ("https://www.googleapis.com/auth/drive.readonly",)
RATE_LIMITED = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
_RETRIES_429 = 2
_MAX_RESULT_PAGES = 2000
"""Pages of results one listing follows: a `nextPageToken` that never ends stops here."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    reason: str = ""
    """The first `error.errors[].reason` of an error's JSON body (`notFound`, `exportSizeLimitExceeded`)."""

    def json(self) -> dict[str, Any]:
        try:
            data = json.loads(self.body)
        except ValueError as exc:
            raise ItemError("Drive's answer is not JSON") from exc
        if not isinstance(data, dict):
            raise ItemError("Drive's answer is not a JSON object")
        return data

    def describe(self) -> str:
        return f"Drive answered {self.status}" + (f" ({self.reason})" if self.reason else "")


class _Transport(TokenTransport):
    """google-auth's requests transport with our timeout instead of its 120 s."""

    def __init__(self, session: requests.Session, timeout: float) -> None:
        super().__init__(session)
        self._timeout = timeout

    def __call__(
        self, url: Any, method: Any = "GET", body: Any = None, headers: Any = None, timeout: Any = None, **kwargs: Any
    ) -> Any:
        return super().__call__(  # type: ignore[no-untyped-call]
            url, method=method, body=body, headers=headers, timeout=timeout or self._timeout, **kwargs
        )


class DriveApi:
    def __init__(
        self,
        key: Mapping[str, Any],
        *,
        subject: str | None,
        api_url: str,
        refused: str,
        timeout_seconds: float = 30.0,
        max_wait_seconds: float = 60.0,
        max_bytes: int = 50_000_000,
        network: Network | None = None,
    ) -> None:
        """`key`: the service account's JSON key (parsed); a malformed one raises `ValueError`."""
        self._credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
            dict(key), scopes=list(SCOPES), subject=subject
        )
        self.root = api_url.rstrip("/")
        self.refused = refused
        """What a refused key says: which variable to check (the connector words it)."""
        self._timeout = timeout_seconds
        self._max_wait = max_wait_seconds
        self._tokens = requests.Session()
        self._client = Outbound(
            network or Network(),
            owners=[self.root],
            headers={"User-Agent": USER_AGENT},
            timeout_seconds=timeout_seconds,
            max_bytes=max_bytes,
        )

    async def _token(self, *, renew: bool = False) -> str:
        """A valid access token, asked for when there is none, it expired or the API refused it."""
        if renew or not self._credentials.valid:
            transport = _Transport(self._tokens, self._timeout)
            try:
                await asyncio.to_thread(self._credentials.refresh, transport)
            except RefreshError as exc:
                # google-auth raises it with the endpoint's JSON answer second: an OAuth `error`
                # (invalid_grant, unauthorized_client) is a refusal; anything else, a failing endpoint
                answer = exc.args[1] if len(exc.args) > 1 else None
                error = answer.get("error") if isinstance(answer, dict) else None
                if not error:
                    raise ItemError("the token endpoint failed (not an OAuth answer); try again later") from exc
                raise ItemError(f"the token endpoint refused the key ({error}): {self.refused}") from exc
            except (TransportError, GoogleAuthError) as exc:
                raise ItemError(f"the token endpoint could not be reached ({type(exc).__name__})") from exc
        return str(self._credentials.token)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Reply:
        """One GET of `path` under the API root, authorised: a 429 or a 403 `rateLimitExceeded` waited
        out (its Retry-After, bounded, twice), a 401 retried once with a new token. `ItemError` when the
        key is refused, or Drive does not answer in time or at all. Other statuses are returned."""
        url = self.root + path
        renewed = renew = False
        attempt = 0
        while True:
            headers = {"Authorization": f"Bearer {await self._token(renew=renew)}"}
            renew = False
            try:
                answer = await self._client.get(url, params=params, headers=headers)
            except TimeoutError as exc:
                raise ItemError(f"Drive did not answer within {self._timeout:g} s") from exc
            except aiohttp.ClientError as exc:
                raise ItemError(f"Drive could not be reached ({type(exc).__name__}: {exc})"[:300]) from exc
            status, wait = answer.status, answer.headers.get("Retry-After")
            if status == 200:
                return Reply(200, answer.body)
            reply = Reply(status, answer.body, _reason(answer.body))
            if status == 401 and not renewed:
                renewed = renew = True  # an access token expires within the hour: ask for a new one, once
                continue
            if status == 401:
                raise ItemError(f"HTTP 401: {self.refused}")
            if (status == 429 or (status == 403 and reply.reason in RATE_LIMITED)) and attempt < _RETRIES_429:
                attempt += 1
                seconds = retry_after(wait, self._max_wait)
                log.info("gdrive %s: %s, waiting %.1f s", path, reply.describe(), seconds)
                await asyncio.sleep(seconds)
                continue
            if status == 429 or reply.reason in RATE_LIMITED:
                raise ItemError(f"Drive kept answering {status} ({reply.reason or 'rate limited'}) after waiting")
            return reply

    async def get_json(self, path: str, params: Mapping[str, str] | None = None) -> tuple[Reply, dict[str, Any]]:
        """The reply and its JSON object (`{}` unless 200)."""
        reply = await self.get(path, params)
        return reply, reply.json() if reply.status == 200 else {}

    async def results(self, path: str, params: Mapping[str, str], key: str) -> list[dict[str, Any]]:
        """Every item under `key` (`files`, `permissions`) of a list endpoint, following
        `nextPageToken` to the end; `ItemError` when a page does not answer 200, or when Drive says
        its search was incomplete (`incompleteSearch`, `files.list` across drives): the files it
        left out would look deleted to the sync, so a partial answer is no answer."""
        found: list[dict[str, Any]] = []
        query = dict(params)
        for _ in range(_MAX_RESULT_PAGES):
            reply, data = await self.get_json(path, query)
            if reply.status != 200:
                refused = f": {self.refused}" if reply.status == 403 else ""
                raise ItemError(f"{reply.describe()} for {path}{refused}")
            if data.get("incompleteSearch"):
                raise ItemError(
                    f"Drive says its search of {path} was incomplete (incompleteSearch): files it missed would "
                    "look deleted, so this run removes nothing; try again later"
                )
            found.extend(item for item in data.get(key) or [] if isinstance(item, dict))
            token = data.get("nextPageToken")
            if not token:
                return found
            query = {**params, "pageToken": str(token)}
        raise ItemError(f"{path} did not end after {_MAX_RESULT_PAGES} pages of results")

    async def aclose(self) -> None:
        await self._client.aclose()
        self._tokens.close()


def _reason(body: bytes) -> str:
    """`error.errors[0].reason` of a Drive error body (or `error.status`), '' when there is none."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    errors = error.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict) and errors[0].get("reason"):
        return str(errors[0]["reason"])
    return str(error.get("status") or "")
