"""A fake Confluence Cloud on 127.0.0.1 for `candor sync`, answering with the shapes of the public REST
API documentation (v2 for spaces, pages and attachments; v1 for read restrictions):

    GET /wiki/api/v2/spaces?keys=ENG,HR                      {"results": [space...], "_links": {"next"?}}
    GET /wiki/api/v2/spaces/{id}/pages?status=current        pages of every depth, `limit` per response
    GET /wiki/api/v2/pages/{id}?body-format=storage          one page with body.storage.value
    GET /wiki/api/v2/spaces/{id}/blogposts?status=current    the space's blog posts
    GET /wiki/api/v2/blogposts/{id}?body-format=storage      one blog post (and .../attachments)
    GET /wiki/api/v2/pages/{id}/attachments?mediaType=...    its attachments
    GET /wiki/rest/api/content/{id}/restriction/byOperation/read   {"restrictions": {"user", "group"}}
    GET /wiki/api/v2/folders/{id}                            one folder: parentId, parentType (no body)
    GET /wiki/api/v2/spaces/{id}/permissions                 [{"principal": {type, id}, "operation"}...]
    GET /wiki/rest/api/group/by-id?id=...                    {"type": "group", "name", "id"}
    GET /wiki/download/attachments/{page id}/{file}          the file's bytes (or a 302 to the media host)

Two spaces of a few dozen nested pages: ENG (public) and HR (staff only, by configuration). Some pages
carry read restrictions (a mapped group, a mapped user, an unmapped group), one restriction is
inherited by a child page, HR has a folder restricted to a mapped group holding a page and an
unrestricted folder with a page of its own, and one page has a PDF attachment. Basic auth is checked
on every request (401 otherwise). With `redirect_downloads`, a download answers a 302 to a second
server on another host (127.0.0.2, as Confluence sends files to its media host), which serves the
bytes without asking for credentials and records the Authorization header each request brought.
A test edits a page (a new version), trashes one, makes one fail (500), throttles a path (429,
Retry-After: 0), breaks the pages listing or a folder. Responses hold at most `page_size` results
with a `_links.next` cursor, so pagination is always exercised. It runs on its own thread
(`BackgroundLoop`) so a `candor sync` process can use it too, and counts what it served.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from tests.fakes.background import BackgroundLoop

EMAIL = "bot@example.com"
TOKEN = "ATATT-fake-confluence-token"


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF with `lines` of Helvetica text, its cross-reference table computed."""
    escaped = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
    text = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(f"({line}) Tj T*" for line in escaped) + " ET"
    stream = text.encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


@dataclass
class Page:
    id: str
    space_id: str
    title: str
    body: str
    parent_id: str | None = None
    version: int = 1
    status: str = "current"
    groups: list[str] = field(default_factory=list)
    """Confluence groups (names) the page's own read restriction allows."""
    users: list[str] = field(default_factory=list)
    """Account ids the page's own read restriction allows."""
    kind: str = "page"
    """Or "blogpost" (no parent, its own paths), or "folder" (no body: it holds pages, and its read
    restriction applies to them)."""


@dataclass
class Attachment:
    id: str
    page_id: str
    title: str
    data: bytes
    media_type: str = "application/pdf"
    version: int = 1


SPACES = {"ENG": ("1001", "Engineering"), "HR": ("2002", "People")}
GROUPS = {"g-sre": "sre", "g-hr-managers": "hr-managers", "g-hr-staff": "hr-staff", "g-admins": "site-admins"}
"""Group id → name (space permissions name groups by id)."""


def default_space_permissions() -> dict[str, list[tuple[str, str, str, str]]]:
    """(principal type, principal id, operation, target) per space id: ENG anyone may read (the
    ANONYMOUS role); HR the hr-staff group, the HR lead and the site admins."""
    return {
        "1001": [
            ("role", "ANONYMOUS", "read", "space"),
            ("group", "g-admins", "read", "space"),
            ("group", "g-admins", "administer", "space"),
        ],
        "2002": [
            ("group", "g-hr-staff", "read", "space"),
            ("group", "g-hr-staff", "create", "page"),
            ("group", "g-admins", "read", "space"),
            ("user", "557058:hr-lead", "read", "space"),
            ("group", "g-sre", "create", "page"),
        ],
    }


ENG_SECTIONS = [
    ("Deployments", "Production deploys are frozen every Friday after 14:00 UTC."),
    ("On-call", "The on-call rotation hands over every Monday at 09:00."),
    ("Code review", "Every change needs two approving reviews before it merges."),
    ("Databases", "The primary database is backed up every 6 hours."),
]


@dataclass
class FakeConfluence:
    pages: dict[str, Page] = field(default_factory=dict)
    attachments: dict[str, Attachment] = field(default_factory=dict)
    email: str = EMAIL
    token: str = TOKEN
    page_size: int = 7
    failing: set[str] = field(default_factory=set)
    """Page ids whose body answers 500."""
    throttled: Counter[str] = field(default_factory=Counter)
    """Paths that answer 429 (Retry-After: 0) this many more times."""
    pages_listing_status: int = 200
    """Not 200: every space's pages listing answers this."""
    space_permissions: dict[str, list[tuple[str, str, str, str]]] = field(default_factory=default_space_permissions)
    space_permissions_status: int = 200
    restriction_failing: set[str] = field(default_factory=set)
    """Page (or folder) ids whose read restriction answers 500."""
    folder_failing: set[str] = field(default_factory=set)
    """Folder ids that `GET /wiki/api/v2/folders/{id}` answers 500 for."""
    redirect_downloads: bool = False
    """Downloads answer a 302 to the media host (`media_url`) rather than the bytes."""
    media_authorization: list[str | None] = field(default_factory=list)
    """The Authorization header (None: none) of each request the media host received."""
    body_fetches: Counter[str] = field(default_factory=Counter)
    """Page bodies served (200), per page id."""
    downloads: Counter[str] = field(default_factory=Counter)
    """Attachment files served, per attachment id."""
    requested: Counter[str] = field(default_factory=Counter)
    refused: int = 0
    """Requests answered 401."""
    host: str = "127.0.0.1"
    port: int = 0
    media_host: str = "127.0.0.2"
    """Another host on the loopback network: a redirect there leaves the site."""
    media_port: int = 0
    _runner: web.AppRunner | None = None
    _media_runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-confluence"))

    @property
    def url(self) -> str:
        """The site's base URL, as a sources file gives it (`https://example.atlassian.net/wiki`)."""
        return f"http://{self.host}:{self.port}/wiki"

    @property
    def media_url(self) -> str:
        return f"http://{self.media_host}:{self.media_port}"

    def page_url(self, page_id: str) -> str:
        """Where a reader opens the page: `_links.webui` on the base URL."""
        return self.url + self._webui(self.pages[page_id])

    def find(self, title: str) -> Page:
        return next(page for page in self.pages.values() if page.title == title)

    def build(self) -> None:
        """ENG: a home page, four sections of four pages each, a restricted incident page with a child
        that inherits its restriction, a page restricted to an unmapped group, and a PDF. HR: a home page
        and six pages, one restricted to a mapped group and a mapped user. ENG also has two blog posts,
        one restricted to sre. HR's "Managers" folder, restricted to hr-managers, holds the unrestricted
        page "Performance reviews" and the unrestricted folder "Calibration", which holds "Calibration
        guide": Confluence lets only hr-managers read all three pages' contents."""
        eng, hr = SPACES["ENG"][0], SPACES["HR"][0]
        ids = iter(range(10_001, 10_100))
        home = self._add(next(ids), eng, "Engineering handbook", "<p>How the engineering team works.</p>")
        for title, fact in ENG_SECTIONS:
            section = self._add(next(ids), eng, title, f"<p>{title} at a glance.</p>", home.id)
            for n in range(1, 5):
                text = fact if n == 1 else f"{title} note {n}: details for the {title.lower()} team, part {n}."
                self._add(next(ids), eng, f"{title} {n}", f"<p>{text}</p>", section.id)
        on_call = self.find("On-call")
        bridge = self._add(
            next(ids), eng, "Incident bridge", "<p>The incident bridge PIN is 4417.</p>", on_call.id, groups=["sre"]
        )
        self._add(next(ids), eng, "Pager escalation", "<p>The pager escalation timeout is 12 minutes.</p>", bridge.id)
        self._add(
            next(ids),
            eng,
            "Vault rotation",
            "<p>The database vault credentials rotate every 19 days.</p>",
            self.find("Databases").id,
            groups=["external-contractors"],
        )
        deployments = self.find("Deployments")
        self.attachments["att900"] = Attachment(
            "att900",
            deployments.id,
            "rollback-guide.pdf",
            minimal_pdf(["Rollback guide", "A rollback to the previous release takes 7 minutes."]),
        )
        self.attachments["att901"] = Attachment("att901", deployments.id, "diagram.png", b"\x89PNG", "image/png")
        hr_home = self._add(next(ids), hr, "People handbook", "<p>Policies for everyone at Acme.</p>")
        self._add(next(ids), hr, "Leave policy", "<p>Employees receive 27 days of paid leave per year.</p>", hr_home.id)
        self._add(next(ids), hr, "Parental leave", "<p>Parental leave lasts 20 weeks at full pay.</p>", hr_home.id)
        self._add(next(ids), hr, "Expenses", "<p>Expenses are reimbursed within 10 working days.</p>", hr_home.id)
        self._add(
            next(ids),
            hr,
            "Salary bands",
            "<p>The senior engineer salary band starts at 71000 euros.</p>",
            hr_home.id,
            groups=["hr-managers"],
            users=["557058:hr-lead"],
        )
        self._add(next(ids), hr, "Onboarding", "<p>New starters get a laptop on their first day.</p>", hr_home.id)
        self._add(next(ids), hr, "Remote work", "<p>Remote work is allowed three days a week.</p>", hr_home.id)
        managers = self._add(next(ids), hr, "Managers", "", hr_home.id, groups=["hr-managers"])
        managers.kind = "folder"
        self._add(
            next(ids), hr, "Performance reviews", "<p>Performance reviews take place every 9 months.</p>", managers.id
        )
        calibration = self._add(next(ids), hr, "Calibration", "", managers.id)
        calibration.kind = "folder"
        guide = "<p>Calibration sessions cap top ratings at 15 percent.</p>"
        self._add(next(ids), hr, "Calibration guide", guide, calibration.id)
        self._add(
            next(ids), eng, "Release notes 4.2", "<p>Release 4.2 moved the build cache to the eu-west bucket.</p>"
        ).kind = "blogpost"
        self._add(
            next(ids), eng, "Incident review", "<p>The outage lasted 37 minutes.</p>", groups=["sre"]
        ).kind = "blogpost"

    def _add(
        self,
        number: int,
        space_id: str,
        title: str,
        body: str,
        parent_id: str | None = None,
        *,
        groups: list[str] | None = None,
        users: list[str] | None = None,
    ) -> Page:
        page = Page(str(number), space_id, title, body, parent_id, groups=groups or [], users=users or [])
        self.pages[page.id] = page
        return page

    def edit(self, title: str, body: str) -> Page:
        """A new version of the page called `title`."""
        page = self.find(title)
        page.body = body
        page.version += 1
        return page

    def trash(self, title: str) -> Page:
        page = self.find(title)
        page.status = "trashed"
        return page

    def reset_counts(self) -> None:
        self.body_fetches.clear()
        self.downloads.clear()
        self.requested.clear()

    # --- the API ---------------------------------------------------------------------------

    def _authorised(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return decoded == f"{self.email}:{self.token}"

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requested[request.path] += 1
        if not self._authorised(request):
            self.refused += 1
            return web.json_response({"code": 401, "message": "Unauthorized; scope does not match"}, status=401)
        if self.throttled[request.path] > 0:
            self.throttled[request.path] -= 1
            return web.json_response({"message": "Rate limited"}, status=429, headers={"Retry-After": "0"})
        response: web.StreamResponse = await handler(request)
        return response

    def _listed(self, request: web.Request, results: list[dict[str, Any]]) -> web.Response:
        """One response of a cursor-paginated v2 list: at most `page_size` results and `_links.next`."""
        try:
            start = int(base64.urlsafe_b64decode(request.query.get("cursor", "") or "MA==").decode())
        except (binascii.Error, ValueError):
            return web.json_response({"errors": [{"status": 400, "title": "Invalid cursor"}]}, status=400)
        limit = min(int(request.query.get("limit", "25")), self.page_size, 250)
        body: dict[str, Any] = {"results": results[start : start + limit], "_links": {"base": self.url}}
        if start + limit < len(results):
            query = {k: v for k, v in request.query.items() if k != "cursor"}
            query["cursor"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            body["_links"]["next"] = f"{request.path}?{urlencode(query)}"
        return web.json_response(body)

    async def _spaces(self, request: web.Request) -> web.Response:
        keys = request.query.get("keys", "").split(",")
        found = [
            {
                "id": space_id,
                "key": key,
                "name": name,
                "type": "global",
                "status": "current",
                "homepageId": None,
                "_links": {"webui": f"/spaces/{key}"},
            }
            for key, (space_id, name) in SPACES.items()
            if key in keys
        ]
        return self._listed(request, found)

    def _webui(self, page: Page) -> str:
        key = next(k for k, (sid, _) in SPACES.items() if sid == page.space_id)
        title = quote(page.title.replace(" ", "+"), safe="+")
        if page.kind == "blogpost":
            return f"/spaces/{key}/blog/2026/01/10/{page.id}/{title}"
        return f"/spaces/{key}/pages/{page.id}/{title}"

    def _page_json(self, page: Page) -> dict[str, Any]:
        return {
            "id": page.id,
            "status": page.status,
            "title": page.title,
            "spaceId": page.space_id,
            "parentId": page.parent_id,
            "parentType": self.pages[page.parent_id].kind if page.parent_id else None,
            "authorId": "557058:author",
            "createdAt": "2025-01-10T09:00:00.000Z",
            "version": {
                "createdAt": f"2026-01-{page.version:02d}T10:00:00.000Z",
                "message": "",
                "number": page.version,
                "minorEdit": False,
                "authorId": "557058:author",
            },
            "_links": {"webui": self._webui(page), "editui": f"/pages/resumedraft.action?draftId={page.id}"},
        }

    async def _space_pages(self, request: web.Request) -> web.Response:
        if self.pages_listing_status != 200:
            failed = self.pages_listing_status
            return web.json_response({"errors": [{"status": failed, "title": "Service Unavailable"}]}, status=failed)
        space_id = request.match_info["space_id"]
        status = request.query.get("status", "current")
        kind = "blogpost" if request.path.endswith("/blogposts") else "page"
        found = [
            self._page_json(p)
            for p in self.pages.values()
            if p.space_id == space_id and p.status == status and p.kind == kind
        ]
        return self._listed(request, found)

    async def _page(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["page_id"])
        kind = "blogpost" if request.path.startswith("/wiki/api/v2/blogposts/") else "page"
        if page is None or page.status != "current" or page.kind != kind:
            return web.json_response({"errors": [{"status": 404, "title": "Not Found"}]}, status=404)
        if page.id in self.failing:
            return web.json_response({"errors": [{"status": 500}]}, status=500)
        body = self._page_json(page)
        body_format = request.query.get("body-format")
        if body_format in ("storage", "export_view"):
            body["body"] = {body_format: {"representation": body_format, "value": page.body}}
        self.body_fetches[page.id] += 1
        return web.json_response(body)

    async def _folder(self, request: web.Request) -> web.Response:
        """A folder, as v2's `GET /folders/{id}` gives it (FolderSingle)."""
        folder = self.pages.get(request.match_info["folder_id"])
        if folder is None or folder.kind != "folder" or folder.status != "current":
            return web.json_response({"errors": [{"status": 404, "title": "Not Found"}]}, status=404)
        if folder.id in self.folder_failing:
            return web.json_response({"errors": [{"status": 500}]}, status=500)
        return web.json_response(
            {
                "id": folder.id,
                "type": "folder",
                "status": folder.status,
                "title": folder.title,
                "parentId": folder.parent_id,
                "parentType": self.pages[folder.parent_id].kind if folder.parent_id else None,
                "position": 0,
                "authorId": "557058:author",
                "ownerId": "557058:author",
                "createdAt": "2025-01-10T09:00:00.000Z",
                "spaceId": folder.space_id,
                "version": {"createdAt": "2025-01-10T09:00:00.000Z", "number": folder.version, "minorEdit": False},
                "_links": {"base": self.url},
            }
        )

    async def _page_attachments(self, request: web.Request) -> web.Response:
        page_id = request.match_info["page_id"]
        media_type = request.query.get("mediaType")
        found = [
            {
                "id": a.id,
                "status": "current",
                "title": a.title,
                "createdAt": "2025-03-01T08:00:00.000Z",
                "pageId": a.page_id,
                "mediaType": a.media_type,
                "mediaTypeDescription": "PDF Document" if a.media_type == "application/pdf" else "Image",
                "comment": "",
                "fileId": f"file-{a.id}",
                "fileSize": len(a.data),
                "webuiLink": f"/pages/viewpageattachments.action?pageId={a.page_id}&preview=/{a.page_id}/{a.id}",
                "downloadLink": f"/download/attachments/{a.page_id}/{a.title}?version={a.version}&api=v2",
                "version": {"createdAt": "2025-03-01T08:00:00.000Z", "number": a.version, "minorEdit": False},
                "_links": {"webui": f"/pages/viewpageattachments.action?pageId={a.page_id}"},
            }
            for a in self.attachments.values()
            if a.page_id == page_id and (media_type is None or a.media_type == media_type)
        ]
        return self._listed(request, found)

    async def _restriction(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["page_id"])
        if page is not None and page.id in self.restriction_failing:
            return web.json_response({"statusCode": 500, "message": "Internal error"}, status=500)
        if page is None:
            return web.json_response({"statusCode": 404, "message": "No content found"}, status=404)
        groups = [{"type": "group", "name": g, "id": f"id-{g}"} for g in page.groups]
        users = [{"type": "known", "accountId": u, "accountType": "atlassian", "displayName": u} for u in page.users]
        return web.json_response(
            {
                "operation": "read",
                "restrictions": {
                    "user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                    "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)},
                },
                "content": {"id": page.id, "type": page.kind, "status": page.status, "title": page.title},
                "_links": {"base": self.url, "context": "/wiki"},
            }
        )

    async def _space_permissions(self, request: web.Request) -> web.Response:
        if self.space_permissions_status != 200:
            return web.json_response({"errors": [{"status": self.space_permissions_status}]}, status=500)
        grants = self.space_permissions.get(request.match_info["space_id"])
        if grants is None:
            return web.json_response({"errors": [{"status": 404, "title": "Space not found"}]}, status=404)
        found = [
            {"id": str(n), "principal": {"type": kind, "id": ident}, "operation": {"key": key, "targetType": target}}
            for n, (kind, ident, key, target) in enumerate(grants, 1)
        ]
        return self._listed(request, found)

    async def _group(self, request: web.Request) -> web.Response:
        group_id = request.query.get("id", "")
        if group_id not in GROUPS:
            return web.json_response({"statusCode": 404, "message": "group not found"}, status=404)
        return web.json_response({"type": "group", "name": GROUPS[group_id], "id": group_id})

    async def _download(self, request: web.Request) -> web.Response:
        page_id, name = request.match_info["page_id"], request.match_info["name"]
        for attachment in self.attachments.values():
            if attachment.page_id == page_id and attachment.title == name:
                if self.redirect_downloads:  # as Confluence does: to its media host, with a short-lived token
                    raise web.HTTPFound(f"{self.media_url}/file/{attachment.id}?token=signed-{attachment.id}")
                self.downloads[attachment.id] += 1
                return web.Response(body=attachment.data, content_type=attachment.media_type)
        return web.Response(status=404, text="not found")

    async def _media(self, request: web.Request) -> web.Response:
        """The media host: the file for a signed link, whatever the Authorization header (recorded)."""
        self.media_authorization.append(request.headers.get("Authorization"))
        attachment = self.attachments.get(request.match_info["attachment_id"])
        if attachment is None or request.query.get("token") != f"signed-{attachment.id}":
            return web.Response(status=404, text="not found")
        self.downloads[attachment.id] += 1
        return web.Response(body=attachment.data, content_type=attachment.media_type)

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._gate])
        app.router.add_get("/wiki/api/v2/spaces", self._spaces)
        app.router.add_get("/wiki/api/v2/spaces/{space_id}/pages", self._space_pages)
        app.router.add_get("/wiki/api/v2/pages/{page_id}", self._page)
        app.router.add_get("/wiki/api/v2/pages/{page_id}/attachments", self._page_attachments)
        app.router.add_get("/wiki/api/v2/folders/{folder_id}", self._folder)
        app.router.add_get("/wiki/api/v2/spaces/{space_id}/blogposts", self._space_pages)
        app.router.add_get("/wiki/api/v2/blogposts/{page_id}", self._page)
        app.router.add_get("/wiki/api/v2/blogposts/{page_id}/attachments", self._page_attachments)
        app.router.add_get("/wiki/rest/api/content/{page_id}/restriction/byOperation/read", self._restriction)
        app.router.add_get("/wiki/download/attachments/{page_id}/{name}", self._download)
        app.router.add_get("/wiki/api/v2/spaces/{space_id}/permissions", self._space_permissions)
        app.router.add_get("/wiki/rest/api/group/by-id", self._group)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        media = web.Application()
        media.router.add_get("/file/{attachment_id}", self._media)
        self._media_runner = web.AppRunner(media, access_log=None)
        await self._media_runner.setup()
        await web.TCPSite(self._media_runner, self.media_host, 0).start()
        self.media_port = self._media_runner.addresses[0][1]

    async def _stop(self) -> None:
        for runner in (self._runner, self._media_runner):
            if runner is not None:
                await runner.cleanup()

    def start(self) -> FakeConfluence:
        self.build()
        self._loop.start(self._start())
        return self

    def stop(self) -> None:
        self._loop.stop(self._stop())
