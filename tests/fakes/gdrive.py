"""A fake Google Drive (API v3) and OAuth token endpoint on 127.0.0.1 for `candor sync`, answering with
the shapes of the public REST reference:

    POST /token                                        the JWT-bearer grant: the assertion's RS256 signature is
                                                       checked with the key's public half; {"access_token", ...}
    GET  /drive/v3/drives/{driveId}                    a shared drive (404 `notFound` once it is gone)
    GET  /drive/v3/files?q=...&pageToken=...           files.list: `'<id>' in parents`, `trashed = false`,
                                                       `corpora=drive&driveId=`, `includeItemsFromAllDrives`;
                                                       `permissions` only for items outside shared drives
    GET  /drive/v3/files/{fileId}                      files.get: metadata, or the bytes with `alt=media`
    GET  /drive/v3/files/{fileId}/export?mimeType=text/html   a Google Doc as HTML
    GET  /drive/v3/files/{fileId}/permissions          permissions.list (a shared drive's members inherited)

The workspace it serves, and the edits a test makes to it between runs (`edit`, `rename`, `trash`,
`share`, `vanish`), are in tests/fakes/gdrive_workspace.py. Errors use Drive's JSON shape
(`error.errors[].reason`). Every API request needs a token the fake issued (401 otherwise).

Knobs of the server: `failing` (500), `too_large` (export 403 `exportSizeLimitExceeded`),
`permissions_failing` (permissions.list answers 500, and listings leave the file's `permissions` out, as
Drive does for a file the caller cannot share), `incomplete_search` (files a search misses: a files.list
answer that leaves one out says `incompleteSearch: true`), `throttled` (429, Retry-After: 0),
`rate_limited` (403 `userRateLimitExceeded`), `listing_status`, `expire_tokens` (now, or after
`expire_tokens_after` requests), `revoked` (the token endpoint answers `invalid_grant`). Lists hold at
most `page_size` items and a `nextPageToken`, so pagination is always exercised. Counters say what
was served. It runs on its own thread (`BackgroundLoop`) so a `candor sync` process can use it too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization

from tests.fakes.background import BackgroundLoop
from tests.fakes.gdrive_workspace import (
    DOC,
    FOLDER,
    GOOGLE_TOKEN_AUDIENCE,
    SCOPE,
    SHEET,
    SLIDES,
    File,
    Workspace,
    permission,
    service_account_key,
)

__all__ = ["FakeDrive", "File", "permission", "service_account_key"]


@dataclass
class FakeDrive(Workspace):
    page_size: int = 4
    revoked: bool = False
    failing: set[str] = field(default_factory=set)
    too_large: set[str] = field(default_factory=set)
    permissions_failing: set[str] = field(default_factory=set)
    incomplete_search: set[str] = field(default_factory=set)
    """Ids of files Drive's search misses (an index not yet caught up, a corpus it gave up on)."""
    throttled: Counter[str] = field(default_factory=Counter)
    rate_limited: Counter[str] = field(default_factory=Counter)
    listing_status: int = 200
    expire_tokens_after: int | None = None
    """After this many more API requests, every token issued so far expires (a run longer than an hour)."""
    downloads: Counter[str] = field(default_factory=Counter)
    """Files served in full (alt=media or export), per file id."""
    permission_reads: Counter[str] = field(default_factory=Counter)
    requested: Counter[str] = field(default_factory=Counter)
    grants: int = 0
    refused_grants: int = 0
    subjects: list[str | None] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)
    host: str = "127.0.0.1"
    port: int = 0
    _runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-gdrive"))

    @property
    def url(self) -> str:
        """The API root, as a sources file's `api_url` gives it (`https://www.googleapis.com`)."""
        return f"http://{self.host}:{self.port}"

    # --- knobs of the server ---------------------------------------------------------------------

    def expire_tokens(self) -> None:
        self.tokens.clear()

    def reset_counts(self) -> None:
        self.downloads.clear()
        self.permission_reads.clear()
        self.requested.clear()

    # --- the token endpoint -------------------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        public = serialization.load_pem_private_key(self.key["private_key"].encode(), None).public_key()
        try:
            claims = jwt.decode(
                str(form.get("assertion", "")),
                public,  # type: ignore[arg-type]
                algorithms=["RS256"],
                audience=GOOGLE_TOKEN_AUDIENCE,
                issuer=self.key["client_email"],
                options={"require": ["exp", "iat", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            self.refused_grants += 1
            invalid = {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
            return web.json_response(invalid, status=400)
        if self.revoked:
            self.refused_grants += 1
            return web.json_response(
                {"error": "invalid_grant", "error_description": "Invalid grant: account not found"}, status=400
            )
        if SCOPE not in str(claims.get("scope", "")).split():
            return web.json_response({"error": "invalid_scope", "error_description": "Bad scope"}, status=400)
        self.grants += 1
        self.subjects.append(claims.get("sub"))
        token = "ya29.fake-" + secrets.token_urlsafe(24)
        self.tokens.add(token)
        return web.json_response({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    # --- the API ----------------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, reason: str, message: str, domain: str = "global") -> web.Response:
        body = {"error": {"errors": [{"domain": domain, "reason": reason, "message": message}], "code": status}}
        body["error"]["message"] = message
        return web.json_response(body, status=status)

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requested[request.path] += 1
        if request.path == "/token":
            token_response: web.StreamResponse = await handler(request)
            return token_response
        if self.expire_tokens_after is not None:
            self.expire_tokens_after -= 1
            if self.expire_tokens_after < 0:
                self.expire_tokens_after = None
                self.tokens.clear()
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or header[7:] not in self.tokens:
            return self._error(401, "authError", "Invalid Credentials")
        if self.throttled[request.path] > 0:
            self.throttled[request.path] -= 1
            response = self._error(429, "rateLimitExceeded", "Rate Limit Exceeded", "usageLimits")
            response.headers["Retry-After"] = "0"
            return response
        if self.rate_limited[request.path] > 0:
            self.rate_limited[request.path] -= 1
            return self._error(403, "userRateLimitExceeded", "User Rate Limit Exceeded", "usageLimits")
        served: web.StreamResponse = await handler(request)
        return served

    def _visible(self, found: File | None, request: web.Request) -> File | None:
        """A file the caller may see: a shared drive's only with `supportsAllDrives=true`."""
        if found is None or (found.drive_id and request.query.get("supportsAllDrives") != "true"):
            return None
        return found

    def _trashed(self, found: File) -> bool:
        """Trashed itself, or below a trashed folder (Drive trashes a folder's contents with it)."""
        current: File | None = found
        while current is not None:
            if current.trashed:
                return True
            current = self.files.get(current.parent)
        return False

    def _permissions(self, found: File) -> list[dict[str, Any]]:
        inherited = self.drives[found.drive_id].members if found.drive_id in self.drives else []
        return inherited + found.permissions

    def _json(self, found: File, fields: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "drive#file",
            "id": found.id,
            "name": found.name,
            "mimeType": found.mime,
            "parents": [found.parent],
            "trashed": self._trashed(found),
            "webViewLink": found.link,
            "modifiedTime": found.modified,
            "createdTime": "2025-06-01T08:00:00.000Z",
            "version": str(found.version),
        }
        if found.mime not in (DOC, SHEET, SLIDES, FOLDER):
            data |= {"md5Checksum": hashlib.md5(found.content).hexdigest(), "size": str(len(found.content))}
        if found.drive_id:
            data["driveId"] = found.drive_id
        elif "permissions" in fields and found.id not in self.permissions_failing:
            # Drive populates it neither for items in shared drives nor for files the caller cannot share
            data["permissions"] = self._permissions(found)
        if fields and not fields.startswith(("files(", "nextPageToken")):
            wanted = {name.split("(")[0].strip() for name in fields.split(",")}
            data = {k: v for k, v in data.items() if k in wanted}
        return data

    def _page(
        self, request: web.Request, items: list[Any], key: str, kind: str, incomplete: bool = False
    ) -> web.Response:
        try:
            start = int(base64.urlsafe_b64decode(request.query.get("pageToken", "") or "MA==").decode())
        except (binascii.Error, ValueError):
            return self._error(400, "invalid", "Invalid Value")
        size = min(int(request.query.get("pageSize", "100")), self.page_size)
        body: dict[str, Any] = {"kind": kind, key: items[start : start + size]}
        if key == "files":
            body["incompleteSearch"] = incomplete
        if start + size < len(items):
            body["nextPageToken"] = base64.urlsafe_b64encode(str(start + size).encode()).decode()
        return web.json_response(body)

    async def _get_drive(self, request: web.Request) -> web.Response:
        drive = self.drives.get(request.match_info["drive_id"])
        if drive is None:
            return self._error(404, "notFound", f"Shared drive not found: {request.match_info['drive_id']}")
        return web.json_response({"kind": "drive#drive", "id": drive.id, "name": drive.name})

    async def _list_files(self, request: web.Request) -> web.Response:
        if self.listing_status != 200:
            return self._error(self.listing_status, "backendError", "Internal Error")
        all_drives = request.query.get("includeItemsFromAllDrives") == "true"
        corpora = request.query.get("corpora", "user")
        if corpora == "drive" and (not all_drives or not request.query.get("driveId")):
            return self._error(400, "badRequest", "The driveId parameter must be specified with corpora=drive.")
        try:
            test = _query(request.query.get("q", ""))
        except ValueError:
            return self._error(400, "invalid", "Invalid Value")
        found = [
            f
            for f in self.files.values()
            if f.id != self.root
            and test(f, self._trashed(f))
            and (all_drives or not f.drive_id)
            and (corpora != "drive" or f.drive_id == request.query.get("driveId"))
        ]
        missed = [f for f in found if f.id in self.incomplete_search]
        found = [f for f in found if f not in missed]
        fields = request.query.get("fields", "")
        files = [self._json(f, fields) for f in found]
        return self._page(request, files, "files", "drive#fileList", incomplete=bool(missed))

    async def _get_file(self, request: web.Request) -> web.StreamResponse:
        file_id = request.match_info["file_id"]
        found = self._visible(self.files.get(file_id), request)
        if found is None:
            return self._error(404, "notFound", f"File not found: {file_id}.")
        if request.query.get("alt") != "media":
            return web.json_response(self._json(found, request.query.get("fields", "")))
        if found.mime.startswith("application/vnd.google-apps."):
            return self._error(
                403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export."
            )
        if found.id in self.failing:
            return self._error(500, "backendError", "Internal Error")
        self.downloads[found.id] += 1
        return web.Response(body=found.content, content_type=found.mime)

    async def _export(self, request: web.Request) -> web.StreamResponse:
        file_id = request.match_info["file_id"]
        found = self.files.get(file_id)
        if found is None:
            return self._error(404, "notFound", f"File not found: {file_id}.")
        if found.mime != DOC or request.query.get("mimeType") != "text/html":
            return self._error(403, "fileNotExportable", "Export only supports Docs Editors files.")
        if found.id in self.failing:
            return self._error(500, "backendError", "Internal Error")
        if found.id in self.too_large:
            return self._error(403, "exportSizeLimitExceeded", "This file is too large to be exported.")
        self.downloads[found.id] += 1
        paragraphs = "".join(
            f'<p class="c1"><span class="c0">{_escape(line)}</span></p>' for line in found.content.decode().splitlines()
        )
        html = (
            '<html><head><meta content="text/html; charset=UTF-8" http-equiv="content-type">'
            '<style type="text/css">.c0{font-family:"Arial";font-size:11pt}.c1{line-height:1.15}</style></head>'
            f'<body class="c2 doc-content">{paragraphs}</body></html>'
        )
        return web.Response(text=html, content_type="text/html")

    async def _list_permissions(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        found = self._visible(self.files.get(file_id), request)
        if found is None:
            return self._error(404, "notFound", f"File not found: {file_id}.")
        if found.id in self.permissions_failing:
            return self._error(500, "backendError", "Internal Error")
        self.permission_reads[found.id] += 1
        return self._page(request, self._permissions(found), "permissions", "drive#permissionList")

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._gate])
        app.router.add_post("/token", self._token)
        app.router.add_get("/drive/v3/drives/{drive_id}", self._get_drive)
        app.router.add_get("/drive/v3/files", self._list_files)
        app.router.add_get("/drive/v3/files/{file_id}", self._get_file)
        app.router.add_get("/drive/v3/files/{file_id}/export", self._export)
        app.router.add_get("/drive/v3/files/{file_id}/permissions", self._list_permissions)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> FakeDrive:
        self._loop.start(self._start())
        self.key = service_account_key(f"{self.url}/token")
        self.build()
        return self

    def stop(self) -> None:
        self._loop.stop(self._stop())


_CLAUSE = re.compile(
    r"^(?:'(?P<parent>(?:[^'\\]|\\.)+)' in parents|trashed\s*=\s*(?P<trashed>true|false)"
    r"|mimeType\s*(?P<op>!?=)\s*'(?P<mime>[^']+)')$"
)


def _query(q: str) -> Any:
    """A test for files from the part of Drive's query language Candor uses (`and` of `in parents`,
    `trashed =`, `mimeType =`/`!=`); `ValueError` for anything else, as Drive answers 400."""
    tests = []
    for clause in filter(None, (c.strip() for c in re.split(r"\s+and\s+", q))):
        match = _CLAUSE.match(clause)
        if match is None:
            raise ValueError(clause)
        tests.append(match.groupdict())

    def test(found: File, trashed: bool) -> bool:
        for clause in tests:
            if clause["parent"] is not None and found.parent != clause["parent"].replace("\\'", "'"):
                return False
            if clause["trashed"] is not None and trashed != (clause["trashed"] == "true"):
                return False
            if clause["mime"] is not None and (found.mime == clause["mime"]) != (clause["op"] == "="):
                return False
        return True

    return test


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
