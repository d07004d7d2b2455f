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

The workspace (`build`): a folder tree four levels deep (Company handbook / Policies / HR / Benefits, and
Engineering) of Docs, PDFs, a text and a Markdown file, and a shared drive (Support desk, with a folder
of its own). Files are shared with the `example.com` domain, the `hr-team@` group, one user, anyone with
the link, or only unmapped people (the board minutes); every My Drive file has its owner and the service
account as readers; Sheets, Slides and images sit beside them to be skipped. Errors use Drive's JSON
shape (`error.errors[].reason`). Every API request needs a token the fake issued (401 otherwise).

Knobs: `edit` (a new version), `rename`, `trash`, `share` (new permissions; the version stays, the
harder case for an incremental sync), `failing` (500), `too_large` (export 403 `exportSizeLimitExceeded`),
`permissions_failing`, `throttled` (429, Retry-After: 0), `rate_limited` (403 `userRateLimitExceeded`),
`listing_status`, `vanish`, `expire_tokens` (now, or after `expire_tokens_after` requests), `revoked`
(the token endpoint answers `invalid_grant`). Lists hold at most `page_size` items and a
`nextPageToken`, so pagination is always exercised. Counters say what was served. It runs on its own
thread (`BackgroundLoop`) so a `candor sync` process can use it too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.background import BackgroundLoop
from tests.fakes.confluence import minimal_pdf

FOLDER = "application/vnd.google-apps.folder"
DOC = "application/vnd.google-apps.document"
SHEET = "application/vnd.google-apps.spreadsheet"
SLIDES = "application/vnd.google-apps.presentation"
SCOPE = "https://www.googleapis.com/auth/drive.readonly"
DOMAIN = "example.com"
OWNER = "it-admin@example.com"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The `aud` of every grant assertion google-auth signs, wherever its `token_uri` points."""


def service_account_key(token_uri: str, email: str = "candor-sync@acme-docs.iam.gserviceaccount.com") -> dict[str, str]:
    """A throwaway service account key, in the JSON form Google's console downloads."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": "acme-docs",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": email,
        "client_id": "10" + "".join(secrets.choice("0123456789") for _ in range(19)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "universe_domain": "googleapis.com",
    }


def permission(kind: str, who: str = "", role: str = "reader", **extra: Any) -> dict[str, Any]:
    """A Drive v3 `Permission` resource."""
    data: dict[str, Any] = {"kind": "drive#permission", "type": kind, "role": role}
    if kind in ("user", "group"):
        data |= {"id": str(abs(hash(who)) % 10**20), "emailAddress": who, "displayName": who.split("@")[0]}
    elif kind == "domain":
        data |= {"id": f"{who}-domain", "domain": who, "allowFileDiscovery": False}
    else:
        data |= {"id": "anyoneWithLink", "allowFileDiscovery": False}
    return data | extra


STAFF = [permission("domain", DOMAIN)]
HR = [permission("group", "hr-team@example.com")]
ANYONE = [permission("anyone")]


@dataclass
class File:
    id: str
    name: str
    mime: str
    parent: str
    content: bytes = b""
    """A Doc's paragraphs (one a line, UTF-8), or a file's bytes."""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    drive_id: str | None = None
    version: int = 3
    trashed: bool = False

    @property
    def modified(self) -> str:
        return (datetime(2026, 1, 5, 9, tzinfo=UTC) + timedelta(days=self.version)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    @property
    def link(self) -> str:
        if self.mime == DOC:
            return f"https://docs.google.com/document/d/{self.id}/edit?usp=drivesdk"
        if self.mime == FOLDER:
            return f"https://drive.google.com/drive/folders/{self.id}"
        return f"https://drive.google.com/file/d/{self.id}/view?usp=drivesdk"


@dataclass
class SharedDrive:
    id: str
    name: str
    members: list[dict[str, Any]]


@dataclass
class FakeDrive:
    files: dict[str, File] = field(default_factory=dict)
    drives: dict[str, SharedDrive] = field(default_factory=dict)
    page_size: int = 4
    seed: str = field(default_factory=lambda: secrets.token_hex(6))
    """In every id, so each fake's files (and their links) are its own."""
    key: dict[str, str] = field(default_factory=dict)
    """The service account's key (set by `start`): its private half is the client's, its public the fake's."""
    revoked: bool = False
    failing: set[str] = field(default_factory=set)
    too_large: set[str] = field(default_factory=set)
    permissions_failing: set[str] = field(default_factory=set)
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
    _numbers: Counter[str] = field(default_factory=Counter)
    _runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-gdrive"))

    @property
    def url(self) -> str:
        """The API root, as a sources file's `api_url` gives it (`https://www.googleapis.com`)."""
        return f"http://{self.host}:{self.port}"

    @property
    def root(self) -> str:
        return self._id("F", 0)

    @property
    def drive(self) -> str:
        return f"0A{self.seed}Uk9PVA"

    def find(self, name: str) -> File:
        return next(f for f in self.files.values() if f.name == name)

    def key_json(self) -> str:
        return json.dumps(self.key)

    # --- the workspace ----------------------------------------------------------------------------

    def _id(self, kind: str, number: int) -> str:
        return f"1{kind}{self.seed}{number:03d}"

    def _add(
        self, name: str, mime: str, parent: str, content: str | bytes = b"", perms: list[dict[str, Any]] | None = None
    ) -> File:
        kind = "F" if mime == FOLDER else "x"
        self._numbers[kind] += 1
        data = content.encode() if isinstance(content, str) else content
        drive_id = (
            self.drive if parent == self.drive else (self.files[parent].drive_id if parent in self.files else None)
        )
        made = File(self._id(kind, self._numbers[kind]), name, mime, parent, data, list(perms or []), drive_id)
        self.files[made.id] = made
        return made

    def build(self) -> None:
        sa = permission("user", self.key["client_email"])
        owner = permission("user", OWNER, "owner")
        mine = [owner, sa]
        root = File(self.root, "Company handbook", FOLDER, "root", permissions=mine)
        self.files[root.id] = root

        def doc(name: str, parent: str, text: str, perms: list[dict[str, Any]]) -> File:
            return self._add(name, DOC, parent, text, mine + perms)

        def pdf(name: str, parent: str, lines: list[str], perms: list[dict[str, Any]]) -> File:
            return self._add(name, "application/pdf", parent, minimal_pdf(lines), mine + perms)

        doc("Welcome to Acme", root.id, "Welcome to Acme.\nAcme was founded in 2009 in Leeds.", STAFF)
        doc(
            "Office guide",
            root.id,
            "The office guide.\nThe guest wifi network is called acme-lobby and the front desk opens at 8:30.",
            ANYONE,
        )
        self._add("Budget 2026", SHEET, root.id, perms=mine + STAFF)
        self._add("Team photo.jpg", "image/jpeg", root.id, b"\xff\xd8\xff\xe0", mine + STAFF)
        policies = self._add("Policies", FOLDER, root.id, perms=mine)
        doc("Travel policy", policies.id, "Travel.\nEconomy class is required for flights shorter than 6 hours.", STAFF)
        doc(
            "Expense policy", policies.id, "Expenses.\nExpense reports must be filed within 30 days of purchase.", STAFF
        )
        pdf(
            "Security policy.pdf",
            policies.id,
            ["Security policy", "Laptops lock after 5 minutes of inactivity."],
            STAFF,
        )
        doc(
            "Board minutes",
            policies.id,
            "Board minutes.\nThe board approved the acquisition of Northwind Traders for 12 million euros.",
            [permission("user", "ceo@example.com", "writer"), permission("user", "cfo@example.com")],
        )
        self._add(
            "Code of conduct.md",
            "text/markdown",
            policies.id,
            "# Code of conduct\n\nGifts from suppliers worth more than 50 euros must be declared.\n",
            mine + STAFF,
        )
        hr = self._add("HR", FOLDER, policies.id, perms=mine)
        doc("Salary review", hr.id, "Salary review.\nThe 2026 salary review budget is 4.5 percent of payroll.", HR)
        doc(
            "Promotion process",
            hr.id,
            "Promotions.\nPromotion committees meet every April and October.",
            [permission("user", "ana@example.com", "commenter")],
        )
        doc("Leave policy", hr.id, "Leave.\nEmployees receive 27 days of paid annual leave.", STAFF)
        self._add("Headcount", SHEET, hr.id, perms=mine + HR)
        benefits = self._add("Benefits", FOLDER, hr.id, perms=mine)
        pdf("Pension plan.pdf", benefits.id, ["Pension plan", "The employer pension contribution is 7 percent."], HR)
        doc("Dental cover", benefits.id, "Dental.\nDental cover includes two check-ups per year.", STAFF)
        self._add(
            "Gym discount.txt",
            "text/plain",
            benefits.id,
            "Gym discount\n\nStaff get 40 percent off at FitLab gyms.\n",
            mine + STAFF,
        )
        engineering = self._add("Engineering", FOLDER, root.id, perms=mine)
        doc(
            "Deploy checklist",
            engineering.id,
            "Deploy checklist.\nProduction deploys are frozen every Friday after 14:00 UTC.",
            STAFF,
        )
        for n in range(1, 9):
            text = f"Engineering note {n}.\nNote {n} records how the platform team handles topic {n}, part {n}."
            doc(f"Engineering note {n}", engineering.id, text, STAFF)
        self._add("Architecture review", SLIDES, engineering.id, perms=mine + STAFF)

        members = [
            permission("group", "support-team@example.com", "organizer", permissionDetails=[self._member()]),
            permission("user", "desk-lead@example.com", "organizer", permissionDetails=[self._member()]),
        ]
        self.drives[self.drive] = SharedDrive(self.drive, "Support desk", members)
        sd = self.drive
        self._add("Returns policy", DOC, sd, "Returns.\nCustomers may return unworn items within 45 days of delivery.")
        self._add("Shipping times", DOC, sd, "Shipping.\nStandard shipping to Canada takes 6 business days.")
        self._add(
            "Kettle warranty.pdf",
            "application/pdf",
            sd,
            minimal_pdf(["Kettle warranty", "The Aurora kettle warranty lasts 3 years from purchase."]),
        )
        self._add(
            "Refund timing.txt", "text/plain", sd, "Refunds\n\nRefunds reach the original card in 5 working days."
        )
        self._add("Macros.md", "text/markdown", sd, "# Macros\n\nThe apology macro offers a 10 percent voucher.\n")
        self._add("Public FAQ", DOC, sd, "Support hours.\nSupport is open from 8:00 to 20:00 CET on weekdays.", ANYONE)
        self._add("Return rates", SHEET, sd)
        self._add("logo.png", "image/png", sd, b"\x89PNG\r\n")
        escalations = self._add("Escalations", FOLDER, sd)
        self._add(
            "Escalation matrix",
            DOC,
            escalations.id,
            "Escalations.\nPriority 1 tickets reach the duty manager within 15 minutes.",
        )

    def _member(self) -> dict[str, Any]:
        return {"permissionType": "member", "role": "organizer", "inherited": True, "inheritedFrom": self.drive}

    # --- knobs ------------------------------------------------------------------------------------

    def edit(self, name: str, text: str) -> File:
        """A new version of the file called `name`."""
        found = self.find(name)
        found.content = text.encode()
        found.version += 1
        return found

    def rename(self, name: str, new: str) -> File:
        found = self.find(name)
        found.name = new
        found.version += 1
        return found

    def trash(self, name: str) -> File:
        found = self.find(name)
        found.trashed = True
        return found

    def share(self, name: str, permissions: list[dict[str, Any]]) -> File:
        """Replace the file's own permissions (its owner stays); its version stays too."""
        found = self.find(name)
        found.permissions = [p for p in found.permissions if p.get("role") == "owner"] + permissions
        return found

    def vanish(self, file_or_drive_id: str) -> None:
        self.files.pop(file_or_drive_id, None)
        self.drives.pop(file_or_drive_id, None)

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
        elif "permissions" in fields:  # Drive does not populate it for items in shared drives
            data["permissions"] = self._permissions(found)
        if fields and not fields.startswith(("files(", "nextPageToken")):
            wanted = {name.split("(")[0].strip() for name in fields.split(",")}
            data = {k: v for k, v in data.items() if k in wanted}
        return data

    def _page(self, request: web.Request, items: list[Any], key: str, kind: str) -> web.Response:
        try:
            start = int(base64.urlsafe_b64decode(request.query.get("pageToken", "") or "MA==").decode())
        except (binascii.Error, ValueError):
            return self._error(400, "invalid", "Invalid Value")
        size = min(int(request.query.get("pageSize", "100")), self.page_size)
        body: dict[str, Any] = {"kind": kind, key: items[start : start + size]}
        if key == "files":
            body["incompleteSearch"] = False
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
        fields = request.query.get("fields", "")
        return self._page(request, [self._json(f, fields) for f in found], "files", "drive#fileList")

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
