"""A fake Notion API on 127.0.0.1 for `candor sync`, answering with the shapes of the public API
reference for `Notion-Version: 2025-09-03` (the version `notion-client` sends; databases hold data
sources, and rows' parents are data sources):

    POST /v1/search                          pages and data sources shared with the integration
    POST /v1/data_sources/{id}/query         a data source's rows (pages)
    GET  /v1/data_sources/{id}               a data source
    GET  /v1/pages/{id}                      a page
    GET  /v1/blocks/{id}                     a block (a page read as a block is its child_page block)
    GET  /v1/blocks/{id}/children            a page's or block's child blocks
    GET  /files/{block id}/{name}?X-Amz-...  a Notion-hosted file (a pre-signed URL: no token)

Lists are paginated (`has_more`, `next_cursor`, at most `page_size` results). Every API request needs
`Authorization: Bearer TOKEN` (401 `unauthorized` otherwise) and a `Notion-Version` (400 otherwise);
errors are `{"object": "error", "status", "code", "message"}`. The workspace (`build`): a handbook
with pages three levels deep, a database of incidents with properties and content, tables, nested
lists, toggles, a callout, a PDF, a page inside a toggle, and a People subtree a sources file
restricts with `page_access`. A test edits a page (a new `last_edited_time`), trashes one, unshares
one, attaches blocks (a PDF) to one, makes one's blocks fail (500) or a block's own lookup fail (503:
the parent block of a page inside a toggle, so that page's place cannot be read), throttles a path
(429, Retry-After: 0) or breaks the search.
It runs on its own thread (`BackgroundLoop`) so a `candor sync` process can use it too, and counts
what it served.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.background import BackgroundLoop
from tests.fakes.confluence import minimal_pdf

TOKEN = "ntn_fake_integration_secret_4417"
VERSION = "2025-09-03"
_ids = itertools.count(1)


def new_id(kind: int) -> str:
    n = next(_ids)
    return f"{kind:08x}-0000-4000-8000-{n:012x}"


def rt(text: str, *, href: str | None = None, **annotations: bool) -> dict[str, Any]:
    """A rich-text object of type text."""
    marks = {"bold": False, "italic": False, "strikethrough": False, "underline": False, "code": False}
    marks.update(annotations)
    return {
        "type": "text",
        "text": {"content": text, "link": {"url": href} if href else None},
        "annotations": {**marks, "color": "default"},
        "plain_text": text,
        "href": href,
    }


@dataclass
class Block:
    type: str
    data: dict[str, Any]
    children: list[Block] = field(default_factory=list)
    id: str = field(default_factory=lambda: new_id(0xB10C))
    edited: int = 0


@dataclass
class Page:
    id: str
    title: str
    parent: tuple[str, str | None]
    """("workspace", None), ("page_id", id), ("block_id", id) or ("data_source_id", id)."""
    blocks: list[Block] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    edited: int = 0
    in_trash: bool = False
    shared: bool = True


def p(text: str, *more: dict[str, Any]) -> Block:
    return Block("paragraph", {"rich_text": [rt(text), *more], "color": "default"})


def item(kind: str, text: str, *children: Block, **extra: Any) -> Block:
    return Block(kind, {"rich_text": [rt(text)], "color": "default", **extra}, list(children))


def table(header: list[str], *rows: list[str]) -> Block:
    cells = [header, *rows]
    return Block(
        "table",
        {"table_width": len(header), "has_column_header": True, "has_row_header": False},
        [Block("table_row", {"cells": [[rt(c)] for c in row]}) for row in cells],
    )


def pdf_block(name: str, data: bytes) -> Block:
    block = Block("pdf", {"caption": [], "type": "file", "name": name})
    block.data["_bytes"] = data
    return block


@dataclass
class FakeNotion:
    workspace: str = "acme"
    """The workspace's slug in page URLs (https://www.notion.so/<workspace>/<title>-<id>)."""
    token: str = TOKEN
    page_size: int = 5
    pages: dict[str, Page] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)
    """Page ids whose blocks answer 500."""
    failing_blocks: set[str] = field(default_factory=set)
    """Block ids whose own lookup (`GET /v1/blocks/{id}`) answers 503."""
    throttled: Counter[str] = field(default_factory=Counter)
    """"METHOD /path" answering 429 (Retry-After: 0) this many more times."""
    search_status: int = 200
    block_requests: Counter[str] = field(default_factory=Counter)
    """`GET /v1/blocks/{id}/children` answered 200, per page the blocks belong to."""
    downloads: Counter[str] = field(default_factory=Counter)
    requested: Counter[str] = field(default_factory=Counter)
    """Requests per "METHOD /path" (ids included)."""
    refused: int = 0
    file_authorizations: list[str] = field(default_factory=list)
    """Authorization headers sent to file URLs (there should be none)."""
    host: str = "127.0.0.1"
    port: int = 0
    clock: int = 0
    _runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-notion"))
    _owner: dict[str, str] = field(default_factory=dict)
    """Block id → the page it belongs to."""

    database_id: str = field(default_factory=lambda: new_id(0xDA7A))
    data_source_id: str = field(default_factory=lambda: new_id(0xD5))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def page_url(self, page: Page) -> str:
        slug = "-".join("".join(c for c in page.title if c.isalnum() or c == " ").split())
        return f"https://www.notion.so/{self.workspace}/{slug}-{page.id.replace('-', '')}"

    def find(self, title: str) -> Page:
        return next(page for page in self.pages.values() if page.title == title)

    def _add(self, title: str, parent: Page | Block | None, *blocks: Block, **properties: Any) -> Page:
        if isinstance(parent, Page):
            where: tuple[str, str | None] = ("page_id", parent.id)
        elif isinstance(parent, Block):
            where = ("block_id", parent.id)
        else:
            where = ("workspace", None)
        page = Page(new_id(0xBA6E), title, where, list(blocks), dict(properties))
        self.pages[page.id] = page
        return page

    def build(self) -> None:
        """30 pages and 5 database rows: the handbook, Engineering (four sections of three notes, a
        runbook with a PDF, an escalation list, backups), Support (a page inside a toggle), People
        (salary bands, leave, a bonus scheme below them) and the Incidents database."""
        home = self._add("Acme handbook", None, p("How Acme works, for everyone at Acme."))
        eng = self._add("Engineering", home, p("How the engineering team works."))
        deploys = self._add(
            "Deployments",
            eng,
            item("heading_1", "Release rules"),
            p("Production deploys are frozen every Friday after 14:00 UTC."),
            item("toggle", "Staging", p("The staging cluster restarts every Sunday at 03:00.")),
            item("bulleted_list_item", "Before a deploy", item("bulleted_list_item", "Check the error budget")),
        )
        self._add(
            "Rollback runbook",
            deploys,
            p("Follow the guide attached below."),
            pdf_block(
                "rollback-guide.pdf",
                minimal_pdf(["Rollback guide", "A rollback to the previous release takes 7 minutes."]),
            ),
            Block("image", {"caption": [], "type": "file", "file": {"url": "x", "expiry_time": "x"}}),
            Block(
                "file",
                {
                    "caption": [],
                    "type": "external",
                    "name": "vendor.pdf",
                    "external": {"url": "https://vendor.example/v.pdf"},
                },
            ),
        )
        on_call = self._add(
            "On-call",
            eng,
            p("The on-call rotation hands over every Monday at 09:00."),
            table(
                ["Week", "Engineer", "Backup"], ["1", "Marta", "Jonas"], ["2", "Priya", "Ken"], ["3", "Ken", "Marta"]
            ),
        )
        self._add(
            "Escalation",
            on_call,
            item(
                "numbered_list_item",
                "Page the on-call engineer",
                item("bulleted_list_item", "If there is no answer within 12 minutes, page the backup"),
            ),
            item("numbered_list_item", "Open an incident in the Incidents database"),
        )
        review = self._add(
            "Code review",
            eng,
            p("Every change needs ", rt("two", bold=True), rt(" approving reviews before it merges.")),
            item("to_do", "Tests pass", checked=True),
            item("to_do", "Docs updated", checked=False),
        )
        dbs = self._add(
            "Databases",
            eng,
            p("The primary database is backed up every 6 hours."),
            Block(
                "code",
                {"rich_text": [rt("pg_dump --format=custom acme > acme.dump")], "caption": [], "language": "shell"},
            ),
        )
        self._add("Backups", dbs, p("Backups are kept for 35 days."))
        for section in (deploys, on_call, review, dbs):
            for n in range(1, 4):
                self._add(
                    f"{section.title} note {n}",
                    section,
                    p(f"{section.title} note {n}: details for the {section.title.lower()} team, part {n}."),
                )
        toggle = item("toggle", "Terms we use")
        support = self._add(
            "Support",
            home,
            Block(
                "callout",
                {
                    "rich_text": [rt("Refunds are issued within 14 days.")],
                    "icon": {"type": "emoji", "emoji": "💡"},
                    "color": "default",
                },
            ),
            toggle,
        )
        glossary = self._add("Glossary", toggle, p("A ticket is reopened when the customer replies within 5 days."))
        toggle.children.append(Block("child_page", {"title": glossary.title}, id=glossary.id))
        self._add("Shipping", support, table(["Country", "Days"], ["Germany", "2"], ["Switzerland", "6"]))
        self._add(
            "Returns",
            support,
            Block("quote", {"rich_text": [rt("Returns are accepted for 45 days.")], "color": "default"}),
        )
        self._add("Escalations", support, p("Tier 2 answers escalated tickets within 4 hours."))
        people = self._add("People", home, p("Policies for the people team."))
        bands = self._add("Salary bands", people, p("The senior engineer salary band starts at 71000 euros."))
        self._add("Bonus scheme", bands, p("The annual bonus is capped at 15 percent of salary."))
        self._add("Leave policy", people, p("Employees receive 27 days of paid leave per year."))
        home.blocks.append(Block("child_database", {"title": "Incidents"}, id=self.database_id))
        incidents = [
            ("Checkout outage", "SEV1", "The checkout outage lasted 42 minutes."),
            ("Search latency", "SEV2", "Search latency rose to 900 ms for an hour."),
            ("Email delay", "SEV3", "Password reset emails were delayed by 20 minutes."),
            ("Login errors", "SEV2", "Login failed for 3 percent of users."),
            ("Invoice duplicates", "SEV3", "Some invoices were sent twice."),
        ]
        for n, (title, severity, fact) in enumerate(incidents, 1):
            row = Page(new_id(0x2005), title, ("data_source_id", self.data_source_id), [p(fact)])
            row.properties = {
                "Severity": {"id": "sev", "type": "select", "select": {"id": "s1", "name": severity, "color": "red"}},
                "Status": {"id": "st", "type": "status", "status": {"id": "s2", "name": "Resolved", "color": "green"}},
                "Date": {
                    "id": "dt",
                    "type": "date",
                    "date": {"start": f"2026-01-{n:02d}", "end": None, "time_zone": None},
                },
                "Services": {
                    "id": "sv",
                    "type": "multi_select",
                    "multi_select": [{"id": "m1", "name": "web", "color": "blue"}],
                },
                "Key": {"id": "k", "type": "unique_id", "unique_id": {"prefix": "INC", "number": n}},
            }
            self.pages[row.id] = row
        for page in self.pages.values():
            for block in _walk(page.blocks):
                self._owner[block.id] = page.id
        for page in list(self.pages.values()):  # child pages appear as child_page blocks in their parent
            kind, parent_id = page.parent
            if kind == "page_id" and parent_id:
                block = Block("child_page", {"title": page.title}, id=page.id)
                self.pages[parent_id].blocks.append(block)
                self._owner[block.id] = parent_id

    # --- knobs ---------------------------------------------------------------------------------

    def edit(self, title: str, text: str) -> Page:
        """A new first paragraph for the page, and a new `last_edited_time`."""
        page = self.find(title)
        self.clock += 1
        page.blocks[0] = p(text)
        page.blocks[0].edited = self.clock
        self._owner[page.blocks[0].id] = page.id
        page.edited = self.clock
        return page

    def trash(self, title: str) -> Page:
        page = self.find(title)
        page.in_trash = True
        return page

    def attach(self, title: str, *blocks: Block) -> Page:
        """More blocks at the end of the page (a PDF, say), and a new `last_edited_time`."""
        page = self.find(title)
        self.clock += 1
        for block in blocks:
            block.edited = self.clock
            page.blocks.append(block)
        for block in _walk(list(blocks)):
            self._owner[block.id] = page.id
        page.edited = self.clock
        return page

    def reset_counts(self) -> None:
        self.block_requests.clear()
        self.downloads.clear()
        self.requested.clear()

    # --- shapes --------------------------------------------------------------------------------

    def _time(self, tick: int) -> str:
        return f"2026-02-{1 + tick // 1440:02d}T{tick // 60 % 24:02d}:{tick % 60:02d}:00.000Z"

    def _page_json(self, page: Page) -> dict[str, Any]:
        kind, parent_id = page.parent
        parent: dict[str, Any] = {"type": kind, kind: parent_id if parent_id else True}
        if kind == "data_source_id":
            parent["database_id"] = self.database_id
        title = {"id": "title", "type": "title", "title": [rt(page.title)]}
        return {
            "object": "page",
            "id": page.id,
            "created_time": "2025-01-10T09:00:00.000Z",
            "last_edited_time": self._time(page.edited),
            "created_by": {"object": "user", "id": "user-1"},
            "last_edited_by": {"object": "user", "id": "user-1"},
            "cover": None,
            "icon": None,
            "parent": parent,
            "archived": page.in_trash,
            "in_trash": page.in_trash,
            "is_locked": False,
            "properties": {"Name" if kind == "data_source_id" else "title": title, **page.properties},
            "url": self.page_url(page),
            "public_url": None,
        }

    def _data_source_json(self) -> dict[str, Any]:
        return {
            "object": "data_source",
            "id": self.data_source_id,
            "created_time": "2025-01-10T09:00:00.000Z",
            "last_edited_time": self._time(0),
            "title": [rt("Incidents")],
            "description": [],
            "properties": {"Name": {"id": "title", "name": "Name", "type": "title", "title": {}}},
            "parent": {"type": "database_id", "database_id": self.database_id},
            "database_parent": {"type": "page_id", "page_id": self.find("Acme handbook").id},
            "is_inline": True,
            "archived": False,
            "in_trash": False,
            "icon": None,
            "cover": None,
        }

    def _block_json(self, block: Block, parent: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in block.data.items() if not k.startswith("_")}
        if "_bytes" in block.data:
            name = block.data["name"]
            data["file"] = {
                "url": f"{self.url}/files/{block.id}/{name}?X-Amz-Expires=3600&X-Amz-Signature=sig{block.edited}",
                "expiry_time": "2026-03-01T00:00:00.000Z",
            }
        page = self.pages.get(block.id)
        has_children = bool(page.blocks) if block.type == "child_page" and page else bool(block.children)
        return {
            "object": "block",
            "id": block.id,
            "parent": parent,
            "created_time": "2025-01-10T09:00:00.000Z",
            "last_edited_time": self._time(block.edited),
            "created_by": {"object": "user", "id": "user-1"},
            "last_edited_by": {"object": "user", "id": "user-1"},
            "has_children": has_children,
            "archived": False,
            "in_trash": False,
            "type": block.type,
            block.type: data,
        }

    def _visible(self, page: Page) -> bool:
        return page.shared and not page.in_trash

    def _find_block(self, block_id: str) -> tuple[Block, dict[str, Any]] | None:
        for page in self.pages.values():
            stack: list[tuple[Block, dict[str, Any]]] = [
                (b, {"type": "page_id", "page_id": page.id}) for b in page.blocks
            ]
            while stack:
                block, parent = stack.pop()
                if block.id == block_id and block.type != "child_page":
                    return block, parent
                stack.extend((c, {"type": "block_id", "block_id": block.id}) for c in block.children)
        return None

    # --- the API -------------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
        body = {"object": "error", "status": status, "code": code, "message": message, "request_id": "req-fake"}
        return web.json_response(body, status=status, headers=headers)

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        key = f"{request.method} {request.path}"
        self.requested[key] += 1
        if request.path.startswith("/files/"):
            if request.headers.get("Authorization"):
                self.file_authorizations.append(request.headers["Authorization"])
            return await handler(request)  # type: ignore[no-any-return]
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused += 1
            return self._error(401, "unauthorized", "API token is invalid.")
        if not request.headers.get("Notion-Version"):
            return self._error(400, "missing_version", "Notion-Version header failed validation.")
        if self.throttled[key] > 0:
            self.throttled[key] -= 1
            return self._error(429, "rate_limited", "You have been rate limited.", {"Retry-After": "0"})
        response: web.StreamResponse = await handler(request)
        return response

    def _listed(self, results: list[dict[str, Any]], cursor: str | None, kind: str) -> web.Response:
        start = next((n for n, r in enumerate(results) if r["id"] == cursor), 0) if cursor else 0
        chunk = results[start : start + self.page_size]
        more = start + self.page_size < len(results)
        body = {
            "object": "list",
            "results": chunk,
            "next_cursor": results[start + self.page_size]["id"] if more else None,
            "has_more": more,
            "type": kind,
            kind: {},
            "request_id": "req-fake",
        }
        return web.json_response(body)

    async def _search(self, request: web.Request) -> web.Response:
        if self.search_status != 200:
            return self._error(self.search_status, "service_unavailable", "Notion is unavailable.")
        body = await request.json()
        found = [self._page_json(page) for page in self.pages.values() if self._visible(page)]
        found.append(self._data_source_json())
        value = (body.get("filter") or {}).get("value")
        if value:
            found = [r for r in found if r["object"] == value]
        return self._listed(found, body.get("start_cursor"), "page_or_data_source")

    async def _query(self, request: web.Request) -> web.Response:
        if request.match_info["id"] != self.data_source_id:
            return self._error(404, "object_not_found", "Could not find data_source.")
        body = await request.json()
        rows = [
            self._page_json(page)
            for page in self.pages.values()
            if page.parent == ("data_source_id", self.data_source_id) and self._visible(page)
        ]
        return self._listed(rows, body.get("start_cursor"), "page_or_data_source")

    async def _data_source(self, request: web.Request) -> web.Response:
        if request.match_info["id"] != self.data_source_id:
            return self._error(404, "object_not_found", "Could not find data_source.")
        return web.json_response(self._data_source_json())

    async def _page(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["id"])
        if page is None or not page.shared:
            return self._error(
                404, "object_not_found", "Could not find page. Make sure it is shared with the integration."
            )
        return web.json_response(self._page_json(page))

    async def _block(self, request: web.Request) -> web.Response:
        block_id = request.match_info["id"]
        if block_id in self.failing_blocks:
            return self._error(503, "service_unavailable", "Notion is unavailable, try again later.")
        page = self.pages.get(block_id)
        if page is not None and page.shared:
            kind, parent_id = page.parent
            block = Block("child_page", {"title": page.title}, id=page.id, edited=page.edited)
            return web.json_response(self._block_json(block, {"type": kind, kind: parent_id or True}))
        found = self._find_block(block_id)
        if found is None or not self.pages[self._owner[block_id]].shared:
            return self._error(404, "object_not_found", f"Could not find block with ID: {block_id}.")
        return web.json_response(self._block_json(*found))

    async def _children(self, request: web.Request) -> web.Response:
        block_id = request.match_info["id"]
        page = self.pages.get(block_id)
        owner = page.id if page is not None else self._owner.get(block_id)
        if owner is None or not self._visible(self.pages[owner]):
            return self._error(404, "object_not_found", f"Could not find block with ID: {block_id}.")
        if owner in self.failing:
            return self._error(500, "internal_server_error", "Unexpected error occurred.")
        if page is not None:
            blocks, parent = page.blocks, {"type": "page_id", "page_id": page.id}
        else:
            found = self._find_block(block_id)
            assert found is not None
            blocks, parent = found[0].children, {"type": "block_id", "block_id": block_id}
        self.block_requests[owner] += 1
        results = [self._block_json(block, parent) for block in blocks]
        return self._listed(results, request.query.get("start_cursor"), "block")

    async def _file(self, request: web.Request) -> web.Response:
        found = self._find_block(request.match_info["id"])
        if found is None or "_bytes" not in found[0].data or not request.query.get("X-Amz-Signature"):
            return web.Response(status=403, text="<Error><Code>AccessDenied</Code></Error>")
        self.downloads[found[0].id] += 1
        return web.Response(body=found[0].data["_bytes"], content_type="application/pdf")

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._gate])
        app.router.add_post("/v1/search", self._search)
        app.router.add_post("/v1/data_sources/{id}/query", self._query)
        app.router.add_get("/v1/data_sources/{id}", self._data_source)
        app.router.add_get("/v1/pages/{id}", self._page)
        app.router.add_get("/v1/blocks/{id}", self._block)
        app.router.add_get("/v1/blocks/{id}/children", self._children)
        app.router.add_get("/files/{id}/{name}", self._file)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> FakeNotion:
        self.build()
        self._loop.start(self._start())
        return self

    def stop(self) -> None:
        self._loop.stop(self._stop())


def _walk(blocks: list[Block]) -> list[Block]:
    found: list[Block] = []
    for block in blocks:
        found.append(block)
        found.extend(_walk(block.children))
    return found
