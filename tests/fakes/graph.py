"""A fake Microsoft Graph and Entra ID sign-in on 127.0.0.1 for `candor sync` of a `sharepoint` source,
answering with the shapes of the public v1.0 documentation:

    GET  /{tenant}/v2.0/.well-known/openid-configuration   (HTTPS) what MSAL reads to find the token endpoint
    POST /{tenant}/oauth2/v2.0/token                         (HTTPS) client credentials → {"access_token", ...}
    GET  /v1.0/sites/{hostname}:/sites/{path}  /v1.0/sites/{site id}                   a site
    GET  /v1.0/sites/{site id}/drives                        its document libraries
    GET  /v1.0/drives/{drive id}                             a drive (OneDrive by id)
    GET  /v1.0/drives/{drive id}/root/delta                  every item of every depth, `@odata.deltaLink` last
    GET  /v1.0/drives/{d}/items/{i}/permissions              effective permissions (inherited ones too)
    GET  /v1.0/drives/{d}/items/{i}/content[?format=pdf]     302 to a pre-authenticated download (/download/...)
    GET  /v1.0/sites/{site id}/pages/microsoft.graph.sitePage                              site pages
    GET  /v1.0/sites/{site id}/pages/{id}/microsoft.graph.sitePage?$expand=canvasLayout    one with its canvas

The tenant: a Finance site with three libraries (Documents, a folder tree three levels deep; Policies;
Archive) and two published pages and a draft, plus Hana's OneDrive. Permissions are SharePoint's: each
library's root grants the site's groups (Owners, Members, Visitors) and every item inherits its folder's
unless its inheritance is broken (a board pack for an Entra group, a Payroll folder for a SharePoint
group, a file only two unmapped people may read, a policy shared by an organization-wide link only, a
calendar with an anyone link, a OneDrive note shared with one more person). Word files are converted
with `minimal_pdf` for `format=pdf`. The sign-in side runs over TLS (MSAL wants `https://`) with a
throwaway CA (`ca_bundle` for REQUESTS_CA_BUNDLE); Graph checks the bearer token on every call.
Collections hold at most `page_size` entries with an `@odata.nextLink`. Knobs: `edit` (a new cTag),
`rename`, `delete`, `repeated` (an item twice in the delta feed), permissions on a node, `failing`
(500), `failing_permissions`, `unconvertible`, `throttled` (429, Retry-After: 0), `delta_status` (a
broken listing), `site_gone`, `forbidden` (403 to everything). Counters:
`downloads`, `conversions`, `permission_reads`, `page_fetches`, `requested`, `tokens_issued`.
"""

from __future__ import annotations

import socket
import ssl
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.fakes.background import BackgroundLoop
from tests.fakes.confluence import minimal_pdf
from tests.fakes.tls import LocalCA

TENANT = "7d1c2f4e-0b5a-4c43-9e57-3c1f0a2b9d11"
CLIENT_ID = "2f9c6a1e-58d4-4e2b-a7c3-91d0e6b4f812"
CLIENT_SECRET = "Qx8~fake.client-secret_value"
SCOPE = "https://graph.microsoft.com/.default"
Json = dict[str, Any]


def site_group(name: str, number: int, role: str = "read") -> Json:
    return {"roles": [role], "grantedToV2": {"siteGroup": {"displayName": name, "id": str(number), "loginName": name}}}


def entra_group(name: str, group_id: str, role: str = "read") -> Json:
    return {"roles": [role], "grantedToV2": {"group": {"displayName": name, "id": group_id, "email": ""}}}


def user(name: str, user_id: str, email: str, role: str = "read") -> Json:
    return {"roles": [role], "grantedToV2": {"user": {"displayName": name, "id": user_id, "email": email}}}


def link(scope: str, people: list[tuple[str, str, str]] | None = None) -> Json:
    """A sharing link (`anonymous`, `organization`, `users`), with the people it was sent to."""
    granted = [{"user": {"displayName": n, "id": i, "email": e}} for n, i, e in people or []]
    return {
        "roles": ["read"],
        "link": {
            "scope": scope,
            "type": "view",
            "webUrl": f"https://contoso.sharepoint.com/:w:/s/x/{uuid.uuid4().hex}",
        },
        "grantedToIdentitiesV2": granted,
        "hasPassword": False,
    }


SITE_GROUPS = [site_group("Finance Owners", 3, "owner"), site_group("Finance Members", 5, "write"),
               site_group("Finance Visitors", 4)]  # fmt: skip
HANA = ("Hana Kim", "u-hana", "hana@contoso.com")


@dataclass
class Node:
    id: str
    drive_id: str
    name: str
    parent_id: str | None
    folder: bool = False
    text: list[str] = field(default_factory=list)
    """A file's content: its lines (a PDF or Word file is made from them) or its text."""
    version: int = 1
    """The content's version (the cTag)."""
    meta: int = 1
    """The item's version (the eTag: a rename changes it, not the cTag)."""
    permissions: list[Json] = field(default_factory=list)
    inherits: bool = True
    deleted: bool = False


@dataclass
class Drive:
    id: str
    name: str
    web: str
    """Its web address (a library's or a OneDrive's)."""
    root: str
    site_id: str | None = None


@dataclass
class SitePage:
    id: str
    name: str
    title: str
    parts: list[str]
    published: bool = True
    version: int = 1


@dataclass
class FakeGraph:
    nodes: dict[str, Node] = field(default_factory=dict)
    drives: dict[str, Drive] = field(default_factory=dict)
    pages: dict[str, SitePage] = field(default_factory=dict)
    client_secret: str = CLIENT_SECRET
    page_size: int = 5
    failing: set[str] = field(default_factory=set)
    """File names whose content answers 500."""
    failing_permissions: set[str] = field(default_factory=set)
    unconvertible: set[str] = field(default_factory=set)
    """Word files Graph cannot convert to PDF (406)."""
    throttled: Counter[str] = field(default_factory=Counter)
    """Paths that answer 429 (Retry-After: 0) this many more times."""
    delta_status: int = 200
    site_gone: bool = False
    repeated: set[str] = field(default_factory=set)
    """Files the delta feed also gives earlier, as they were one version ago (Graph may repeat an item)."""
    forbidden: bool = False
    """Graph answers 403 to everything (an app without the Sites/Files permissions)."""
    downloads: Counter[str] = field(default_factory=Counter)
    """Files served in full (a conversion too), by name."""
    conversions: Counter[str] = field(default_factory=Counter)
    permission_reads: Counter[str] = field(default_factory=Counter)
    page_fetches: Counter[str] = field(default_factory=Counter)
    requested: Counter[str] = field(default_factory=Counter)
    tokens_issued: int = 0
    refused: int = 0
    port: int = 0
    login_port: int = 0
    ca: LocalCA = field(default_factory=LocalCA)
    _tokens: set[str] = field(default_factory=set)
    _runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-graph"))

    # --- addresses -------------------------------------------------------------------------

    @property
    def graph_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1.0"

    @property
    def authority(self) -> str:
        return f"https://127.0.0.1:{self.login_port}"

    @property
    def hostname(self) -> str:
        """The tenant's SharePoint host: its port in it, so this fake's web addresses are its own."""
        return f"contoso{self.port}.sharepoint.com"

    @property
    def site_id(self) -> str:
        return f"{self.hostname},1b7e4c2a-3f5d-4e6a-9b8c-0d1e2f3a4b5c,5c2f8e1d-7a6b-4c3d-8e9f-a0b1c2d3e4f5"

    def ca_bundle(self, folder: Path) -> str:
        return str(self.ca.write_bundle(folder / "graph-ca.pem"))

    def find(self, name: str) -> Node:
        return next(n for n in self.nodes.values() if n.name == name)

    def web_url(self, node: Node) -> str:
        parts: list[str] = []
        current: Node | None = node
        while current is not None and current.parent_id is not None:
            parts.append(current.name)
            current = self.nodes.get(current.parent_id)
        return self.drives[node.drive_id].web + "/" + "/".join(quote(p) for p in reversed(parts))

    def page_url(self, page: SitePage) -> str:
        return f"https://{self.hostname}/sites/Finance/SitePages/{page.name}"

    # --- the tenant ------------------------------------------------------------------------

    def build(self) -> None:
        web_root = f"https://{self.hostname}/sites/Finance"
        docs = self._library("b!documents-3fa9", "Documents", f"{web_root}/Shared%20Documents", SITE_GROUPS)
        policies = self._library("b!policies-77c1", "Policies", f"{web_root}/Policies", SITE_GROUPS)
        archive = self._library("b!archive-12de", "Archive", f"{web_root}/Archive", SITE_GROUPS)
        onedrive = self._library(
            "b!onedrive-hana-5e0f",
            "OneDrive",
            f"https://contoso{self.port}-my.sharepoint.com/personal/hana_contoso_com/Documents",
            [user(*HANA, role="owner")],
            site=False,
        )
        handbook = self._add(docs, "Handbook", folder=True)
        self._add(
            docs,
            "Finance handbook.docx",
            handbook,
            ["Finance handbook", "Supplier invoices are paid within 30 days of receipt."],
        )
        self._add(docs, "Month end.md", handbook, ["# Month end", "", "The month-end close takes 5 working days."])
        reports = self._add(docs, "Reports", handbook, folder=True)
        self._add(docs, "Q1 summary.pdf", reports, ["Q1 summary", "Q1 revenue grew by 12 percent."])
        year = self._add(docs, "2025", reports, folder=True)
        self._add(docs, "Travel budget.md", year, ["# Travel budget", "", "The 2025 travel budget is 48000 euros."])
        self._add(docs, "Audit notes.txt", year, ["Audit notes", "", "The external audit starts on 3 March."])
        board = self._add(
            docs, "Board pack.docx", year, ["Board pack", "The board approved a dividend of 4 cents per share."]
        )
        self._restrict(board, entra_group("Finance Leadership", "g-7f3e-lead"))
        self._add(docs, "Forecast.xlsx", year, ["not read"])
        payroll = self._add(docs, "Payroll", folder=True)
        self._restrict(payroll, site_group("Payroll Team", 9, "write"))
        self._add(docs, "Payroll calendar.md", payroll, ["# Payroll", "", "Payroll runs on the 25th of each month."])
        self._add(
            docs, "Bonus scheme.pdf", payroll, ["Bonus scheme", "The annual bonus pool is 6 percent of salaries."]
        )
        projects = self._add(docs, "Projects", folder=True)
        falcon = self._add(
            docs, "Project Falcon.docx", projects, ["Project Falcon", "Project Falcon closes the acquisition in June."]
        )
        self._restrict(
            falcon,
            user("Dana Ruiz", "u-dana", "dana@contoso.com", "owner"),
            user("Lee Park", "u-lee", "lee@contoso.com"),
        )
        for n in range(1, 9):
            self._add(
                docs,
                f"Vendor {n}.md",
                projects,
                [f"# Vendor {n}", "", f"Vendor {n} is paid by bank transfer within {10 + n} days."],
            )
        self._add(docs, "logo.png", None, ["\x89PNG"])
        self._add(
            docs, "Readme.html", None, ["<h1>Finance documents</h1><p>Ask the finance desk on extension 4410.</p>"]
        )
        self._add(
            policies,
            "Travel policy.pdf",
            None,
            ["Travel policy", "Economy class is required for flights under 6 hours."],
        )
        self._add(
            policies,
            "Expenses policy.html",
            None,
            ["<h1>Expenses</h1><p>Expenses are reimbursed within 10 working days.</p>"],
        )
        self._add(policies, "Remote work.md", None, ["# Remote work", "", "Staff may work remotely three days a week."])
        security = self._add(policies, "Security", folder=True)
        self._add(policies, "Passwords.txt", security, ["Passwords must be at least 14 characters long."])
        self._add(
            policies,
            "Incident response.docx",
            security,
            ["Incident response", "Report a security incident within 1 hour."],
        )
        holidays = self._add(
            policies, "Holiday calendar.md", None, ["# Holidays", "", "The office is closed on 24 December."]
        )
        holidays.permissions.append(link("anonymous"))
        conduct = self._add(
            policies, "Code of conduct.md", None, ["# Conduct", "", "Gifts over 50 euros must be declared."]
        )
        self._restrict(conduct, link("organization"))
        for n in range(1, 7):
            self._add(
                policies, f"Policy {n}.md", None, [f"# Policy {n}", "", f"Policy {n} is reviewed every {n + 1} years."]
            )
        self._add(archive, "Old budget.md", None, ["# Old budget", "", "The 2019 budget is archived."])
        self._add(
            onedrive,
            "Interview guide.md",
            None,
            ["# Interviews", "", "Every candidate meets at least three interviewers."],
        )
        notes = self._add(onedrive, "Shared notes.txt", None, ["The hiring freeze ends in April."])
        notes.permissions.append(link("users", [("Sam Ode", "u-sam", "sam@partner.example")]))
        home = ["<p>Welcome to the Finance site.</p>", "<p>The finance desk is open 9:00 to 17:00.</p>"]
        close = ["<h2>Year end</h2><p>The year-end close finishes on 15 January.</p>"]
        self.pages = {
            "p-home": SitePage("p-home", "Home.aspx", "Finance home", home),
            "p-close": SitePage("p-close", "Close-calendar.aspx", "Close calendar", close),
            "p-draft": SitePage("p-draft", "Draft.aspx", "Draft", ["<p>The draft codeword is heron.</p>"], False),
        }

    def _library(self, drive_id: str, name: str, web_url: str, granted: list[Json], site: bool = True) -> Drive:
        """A drive and its root folder, which grants `granted`."""
        top = Node(f"root-{drive_id[2:]}", drive_id, "root", None, folder=True, permissions=list(granted))
        self.nodes[top.id] = top
        drive = Drive(drive_id, name, web_url, top.id, self.site_id if site else None)
        self.drives[drive_id] = drive
        return drive

    def _add(
        self, drive: Drive, name: str, parent: Node | None = None, text: list[str] | None = None, folder: bool = False
    ) -> Node:
        node = Node(f"01SP{len(self.nodes):04d}FAKE", drive.id, name, parent.id if parent else drive.root, folder)
        node.text = text or []
        self.nodes[node.id] = node
        return node

    @staticmethod
    def _restrict(node: Node, *permissions: Json) -> None:
        node.inherits = False
        node.permissions = list(permissions)

    # --- knobs -----------------------------------------------------------------------------

    def edit(self, name: str, lines: list[str]) -> Node:
        node = self.find(name)
        node.text, node.version, node.meta = lines, node.version + 1, node.meta + 1
        return node

    def rename(self, name: str, new_name: str) -> Node:
        node = self.find(name)
        node.name, node.meta = new_name, node.meta + 1
        return node

    def delete(self, name: str) -> Node:
        node = self.find(name)
        node.deleted = True
        return node

    def reset_counts(self) -> None:
        for counter in (self.downloads, self.conversions, self.permission_reads, self.page_fetches, self.requested):
            counter.clear()

    # --- the shapes ------------------------------------------------------------------------

    def _item(self, node: Node) -> Json:
        drive = self.drives[node.drive_id]
        if node.deleted:
            return {"id": node.id, "deleted": {"state": "deleted"}, "parentReference": {"driveId": drive.id}}
        item: Json = {
            "id": node.id,
            "name": node.name,
            "eTag": f'"{{{node.id}}},{node.meta}"',
            "cTag": f'"c:{{{node.id}}},{node.version}"',
            "webUrl": drive.web if node.parent_id is None else self.web_url(node),
            "createdDateTime": "2025-01-10T09:00:00Z",
            "lastModifiedDateTime": f"2026-01-{min(node.meta, 28):02d}T10:00:00Z",
            "size": sum(len(t) for t in node.text),
            "parentReference": {"driveType": "documentLibrary", "driveId": drive.id},
        }
        if node.parent_id is not None:
            item["parentReference"]["id"] = node.parent_id
        if node.parent_id is None:
            item["root"] = {}
        if node.folder or node.parent_id is None:
            children = [n for n in self.nodes.values() if n.parent_id == node.id and not n.deleted]
            item["folder"] = {"childCount": len(children)}
        else:
            item["file"] = {"mimeType": "application/octet-stream", "hashes": {"quickXorHash": f"h{node.version}"}}
        return item

    def _effective(self, node: Node) -> list[Json]:
        """The item's own permissions and, unless its inheritance is broken, its ancestors'."""
        found = [{"id": f"{node.id}-{n}", **p} for n, p in enumerate(node.permissions)]
        parent = self.nodes.get(node.parent_id) if node.parent_id else None
        if node.inherits and parent is not None:
            for inherited in self._effective(parent):
                origin = inherited.get("inheritedFrom") or {"driveId": parent.drive_id, "id": parent.id}
                found.append({**inherited, "inheritedFrom": origin})
        return found

    def _content(self, node: Node, pdf: bool) -> tuple[bytes, str]:
        extension = node.name.rsplit(".", 1)[-1].lower()
        if extension in ("pdf", "docx"):
            return minimal_pdf(node.text), "application/pdf"
        if pdf:
            return b"", ""
        return "\n".join(node.text).encode(), "text/plain"

    def _page_json(self, page: SitePage, canvas: bool) -> Json:
        body: Json = {
            "@odata.type": "#microsoft.graph.sitePage",
            "id": page.id,
            "name": page.name,
            "title": page.title,
            "webUrl": self.page_url(page),
            "eTag": f'"{{{page.id}}},{page.version}"',
            "lastModifiedDateTime": f"2026-02-{page.version:02d}T08:00:00Z",
            "pageLayout": "article",
            "publishingState": {
                "level": "published" if page.published else "checkout",
                "versionId": f"{page.version}.0",
            },
        }
        if canvas:
            columns = [{"id": "1", "width": 12, "webparts": [
                {"@odata.type": "#microsoft.graph.textWebPart", "id": f"t{n}", "innerHtml": part}
                for n, part in enumerate(page.parts)
            ]}]  # fmt: skip
            image = {"@odata.type": "#microsoft.graph.standardWebPart", "id": "img", "webPartType": "image"}
            body["canvasLayout"] = {
                "horizontalSections": [{"id": "1", "layout": "oneColumn", "emphasis": "none", "columns": columns}],
                "verticalSection": {"emphasis": "none", "webparts": [image]},
            }
        return body

    # --- the API ---------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, code: str, message: str) -> web.Response:
        return web.json_response({"error": {"code": code, "message": message}}, status=status)

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requested[request.path] += 1
        if request.path.startswith("/v1.0/"):
            header = request.headers.get("Authorization", "")
            if not header.startswith("Bearer ") or header[7:] not in self._tokens:
                self.refused += 1
                return self._error(401, "InvalidAuthenticationToken", "Access token validation failure.")
            if self.forbidden:
                return self._error(403, "accessDenied", "Either scp or roles claim need to be present in the token.")
            if self.throttled[request.path] > 0:
                self.throttled[request.path] -= 1
                return web.json_response(
                    {"error": {"code": "TooManyRequests", "message": "Too many requests"}},
                    status=429,
                    headers={"Retry-After": "0"},
                )
        response: web.StreamResponse = await handler(request)
        return response

    def _listed(self, request: web.Request, values: list[Json], last: Json | None = None) -> web.Response:
        """One page of a collection: at most `page_size` values, an `@odata.nextLink` while more remain."""
        start = int(request.query.get("$skiptoken", "0") or 0)
        body: Json = {"@odata.context": f"{self.graph_url}/$metadata", "value": values[start : start + self.page_size]}
        if start + self.page_size < len(values):
            body["@odata.nextLink"] = f"http://127.0.0.1:{self.port}{request.path}?$skiptoken={start + self.page_size}"
        elif last:
            body.update(last)
        return web.json_response(body)

    async def _openid(self, request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        if tenant != TENANT:
            return web.json_response(
                {"error": "invalid_tenant", "error_description": f"AADSTS90002: Tenant '{tenant}' not found."},
                status=400,
            )
        base = f"{self.authority}/{tenant}"
        return web.json_response(
            {
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "issuer": f"https://login.microsoftonline.com/{tenant}/v2.0",
                "token_endpoint_auth_methods_supported": [
                    "client_secret_post",
                    "private_key_jwt",
                    "client_secret_basic",
                ],
                "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
                "jwks_uri": f"{self.authority}/{tenant}/discovery/v2.0/keys",
            }
        )

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") != "client_credentials" or form.get("scope") != SCOPE:
            return web.json_response({"error": "invalid_request", "error_description": "AADSTS900144"}, status=400)
        if form.get("client_id") != CLIENT_ID:
            return web.json_response(
                {"error": "unauthorized_client", "error_description": "AADSTS700016: Application not found.",
                 "error_codes": [700016]}, status=400)  # fmt: skip
        if form.get("client_secret") != self.client_secret:
            return web.json_response(
                {"error": "invalid_client", "error_codes": [7000215],
                 "error_description": "AADSTS7000215: Invalid client secret provided."}, status=401)  # fmt: skip
        token = f"eyJ0eXAi.fake-graph-token.{uuid.uuid4().hex}"
        self._tokens.add(token)
        self.tokens_issued += 1
        return web.json_response(
            {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}
        )

    async def _site(self, request: web.Request) -> web.Response:
        reference = request.match_info["reference"]
        if self.site_gone or reference not in (self.site_id, f"{self.hostname}:/sites/Finance"):
            return self._error(404, "itemNotFound", "Requested site could not be found")
        return web.json_response(
            {"id": self.site_id, "name": "Finance", "displayName": "Finance",
             "webUrl": f"https://{self.hostname}/sites/Finance", "siteCollection": {"hostname": self.hostname}}
        )  # fmt: skip

    def _drive_json(self, drive: Drive) -> Json:
        kind = "documentLibrary" if drive.site_id else "business"
        return {"id": drive.id, "name": drive.name, "driveType": kind, "webUrl": drive.web}

    async def _site_drives(self, request: web.Request) -> web.Response:
        if self.site_gone or request.match_info["site"] != self.site_id:
            return self._error(404, "itemNotFound", "Requested site could not be found")
        found = [self._drive_json(d) for d in self.drives.values() if d.site_id == self.site_id]
        return self._listed(request, found)

    async def _drive(self, request: web.Request) -> web.Response:
        drive = self.drives.get(request.match_info["drive"])
        if drive is None:
            return self._error(404, "itemNotFound", "The resource could not be found.")
        return web.json_response(self._drive_json(drive))

    async def _delta(self, request: web.Request) -> web.Response:
        drive = self.drives.get(request.match_info["drive"])
        if drive is None:
            return self._error(404, "itemNotFound", "The resource could not be found.")
        if self.delta_status != 200:
            return self._error(self.delta_status, "serviceNotAvailable", "Service unavailable")
        items = [self._item(n) for n in self.nodes.values() if n.drive_id == drive.id]
        for node in self.nodes.values():
            if node.drive_id == drive.id and node.name in self.repeated:
                stale = self._item(node)
                items.insert(0, {**stale, "cTag": f'"c:{{{node.id}}},{node.version - 1}"'})
        delta = {"@odata.deltaLink": f"{self.graph_url}/drives/{drive.id}/root/delta?token={uuid.uuid4().hex}"}
        return self._listed(request, items, delta)

    def _node(self, request: web.Request) -> Node | None:
        node = self.nodes.get(request.match_info["item"])
        if node is None or node.deleted or node.drive_id != request.match_info["drive"]:
            return None
        return node

    async def _permissions(self, request: web.Request) -> web.Response:
        node = self._node(request)
        if node is None:
            return self._error(404, "itemNotFound", "The resource could not be found.")
        if node.name in self.failing_permissions:
            return self._error(500, "generalException", "An unspecified error has occurred.")
        self.permission_reads[node.name] += 1
        return self._listed(request, self._effective(node))

    async def _content_redirect(self, request: web.Request) -> web.Response:
        node = self._node(request)
        if node is None or node.folder:
            return self._error(404, "itemNotFound", "The resource could not be found.")
        if node.name in self.failing:
            return self._error(500, "generalException", "An unspecified error has occurred.")
        pdf = request.query.get("format") == "pdf"
        if pdf and (node.name in self.unconvertible or not node.name.endswith((".docx", ".pdf"))):
            return self._error(406, "notSupported", "Conversion of this file to the requested format is not supported")
        target = f"/download/{node.drive_id}/{node.id}?tempauth={uuid.uuid4().hex}" + ("&format=pdf" if pdf else "")
        raise web.HTTPFound(target)

    async def _download(self, request: web.Request) -> web.Response:
        node = self.nodes.get(request.match_info["item"])
        if node is None or not request.query.get("tempauth"):
            return web.Response(status=404)
        pdf = request.query.get("format") == "pdf"
        data, content_type = self._content(node, pdf)
        self.downloads[node.name] += 1
        if pdf:
            self.conversions[node.name] += 1
        return web.Response(body=data, content_type=content_type)

    async def _pages(self, request: web.Request) -> web.Response:
        if self.site_gone or request.match_info["site"] != self.site_id:
            return self._error(404, "itemNotFound", "Requested site could not be found")
        return self._listed(request, [self._page_json(p, canvas=False) for p in self.pages.values()])

    async def _page(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["page"])
        if page is None or request.match_info["site"] != self.site_id:
            return self._error(404, "itemNotFound", "The page could not be found")
        self.page_fetches[page.name] += 1
        return web.json_response(self._page_json(page, canvas=request.query.get("$expand") == "canvasLayout"))

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._gate])
        app.router.add_get("/{tenant}/v2.0/.well-known/openid-configuration", self._openid)
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_get("/v1.0/sites/{site}/drives", self._site_drives)
        app.router.add_get("/v1.0/sites/{site}/pages/microsoft.graph.sitePage", self._pages)
        app.router.add_get("/v1.0/sites/{site}/pages/{page}/microsoft.graph.sitePage", self._page)
        app.router.add_get("/v1.0/sites/{reference:.+}", self._site)
        app.router.add_get("/v1.0/drives/{drive}", self._drive)
        app.router.add_get("/v1.0/drives/{drive}/root/delta", self._delta)
        app.router.add_get("/v1.0/drives/{drive}/items/{item}/permissions", self._permissions)
        app.router.add_get("/v1.0/drives/{drive}/items/{item}/content", self._content_redirect)
        app.router.add_get("/download/{drive}/{item}", self._download)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = await _serve(self._runner)
        self.login_port = await _serve(self._runner, self.ca.server_context("127.0.0.1"))

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> FakeGraph:
        self._loop.start(self._start())
        self.build()  # after the start: web addresses carry the port
        return self

    def stop(self) -> None:
        self._loop.stop(self._stop())


async def _serve(runner: web.AppRunner, tls: ssl.SSLContext | None = None) -> int:
    """Serve `runner` on a free port of 127.0.0.1 (over TLS with `tls`); the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock, ssl_context=tls).start()
    return int(sock.getsockname()[1])
