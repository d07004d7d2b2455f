"""Confluence Cloud: the pages of the configured spaces, and the PDFs attached to them, through the
REST API v2 (restrictions through v1, which v2 does not cover), with Basic auth (an account's email
and an API token, both named by environment variable in the sources file).

The listing reads who may read each space (`GET /api/v2/spaces/{id}/permissions`, unless
`space_access` says), each space's pages (nested ones included: `GET /api/v2/spaces/{id}/pages`), each
page's read restriction (`GET /rest/api/content/{id}/restriction/byOperation/read`), that of each
folder (whiteboard, database, embed) the pages sit in, with its parent (`GET /api/v2/folders/{id}`),
as Confluence applies a folder's restriction to the pages in it, and each page's PDF
attachments (`GET /api/v2/pages/{id}/attachments?mediaType=application/pdf`), each a document of its
own with its page's access. Who may read what is worked out in `confluence_access`. Fetching a page
asks for its body in `storage` (or `export_view`) format, read by the HTML loader; an attachment is
downloaded as PDF bytes. A page or attachment whose version number is the one stored last time is not
downloaded at all. A page that is trashed or deleted is no longer listed, and so deleted; a listing
that fails (an expired token, a space that vanished, a 5xx) raises `SourceError` and removes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import Fetched, Gone, ItemState, NotModified, Outcome, SourceDocument
from rag.ingest.sources.common import escape_html, moment
from rag.ingest.sources.confluence_access import (
    UNREADABLE,
    Restriction,
    SpaceReaders,
    page_access,
    space_groups,
)
from rag.ingest.sources.confluence_api import ConfluenceApi
from rag.ingest.sources.confluence_options import ConfluenceOptions
from rag.ingest.sources.guard import Network
from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.confluence")

T = TypeVar("T")

_LIMIT = "250"
"""Results per request: the most the v2 list endpoints give."""
_CONTAINER_PATHS = {
    "page": "pages",
    "folder": "folders",
    "whiteboard": "whiteboards",
    "database": "databases",
    "embed": "embeds",
}
"""A v2 `parentType` → where v2 reads one of them (`GET /api/v2/folders/{id}`), for its own parent."""
_MAX_CONTAINER_DEPTH = 100
"""Levels of folders (and the like) read above a page: a parent chain that never ends stops here."""


@dataclass(frozen=True, slots=True)
class _Item:
    """What the listing learnt of a document, for its fetch."""

    kind: Literal["page", "blogpost", "attachment"]
    remote_id: str
    version: int | None
    download: str = ""


class Confluence:
    """A `Connector` for the spaces of one Confluence Cloud site."""

    kind = "confluence"

    def __init__(
        self,
        options: ConfluenceOptions,
        *,
        name: str,
        credentials: Mapping[str, str],
        variables: Mapping[str, str],
        access: Sequence[str] = (),
        network: Network | None = None,
    ) -> None:
        """`network`: how Confluence is reached (default: the guard, no internal addresses)."""
        missing = [key for key in ("email", "token") if key not in credentials]
        if missing:
            raise SyncError(
                f"source {name!r}: a confluence source needs `credentials: {{email: VARIABLE, token: VARIABLE}}` "
                f"(an Atlassian account's email and an API token); missing: {', '.join(missing)}"
            )
        self.options = options
        self.name = name
        self.access = tuple(access)
        self.max_documents = options.max_documents
        self.not_synced: Mapping[str, int] = {}
        """Nothing is left out by kind: what this source lists, Candor reads."""
        named = " and ".join(f"${variables[key]}" for key in ("email", "token"))
        self.api = ConfluenceApi(
            options.base_url,
            email=credentials["email"],
            token=credentials["token"],
            refused=f"Confluence refused the credentials in {named} (a wrong or expired API token?)",
            timeout_seconds=options.timeout_seconds,
            max_wait_seconds=options.max_wait_seconds,
            max_bytes=options.max_bytes,
            network=network,
        )
        self._items: dict[str, _Item] = {}
        self._group_names: dict[str, str] = {}

    # --- the Connector Protocol ------------------------------------------------------------

    async def listing(self) -> Sequence[SourceDocument]:
        try:
            return await self._listing()
        except ItemError as exc:
            raise SourceError(f"source {self.name!r}: {exc}") from exc

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        item = self._items.get(document.id)
        if item is None:
            raise ItemError("not in this run's listing")
        if previous is not None and item.version is not None and previous.values.get("version") == item.version:
            return NotModified(document)
        if item.kind == "attachment":
            return await self._fetch_attachment(document, item)
        return await self._fetch_page(document, item)

    async def aclose(self) -> None:
        await self.api.aclose()

    # --- listing ---------------------------------------------------------------------------

    async def _listing(self) -> list[SourceDocument]:
        status, data = await self.api.get_json(
            self.api.url("/api/v2/spaces"), {"keys": ",".join(self.options.spaces), "limit": _LIMIT}
        )
        if status != 200:
            raise ItemError(f"Confluence answered {status} for the spaces {', '.join(self.options.spaces)}")
        found = {str(s.get("key")): s for s in data.get("results", []) if isinstance(s, dict)}
        absent = [key for key in self.options.spaces if key not in found]
        if absent:
            raise ItemError(f"no space {', '.join(absent)} is visible to these credentials (deleted, or renamed?)")
        documents: list[SourceDocument] = []
        for key in self.options.spaces:
            documents.extend(await self._space(key, str(found[key]["id"])))
        return documents

    async def _space(self, key: str, space_id: str) -> list[SourceDocument]:
        query = {"status": "current", "limit": _LIMIT}
        pages = await self.api.results(f"/api/v2/spaces/{space_id}/pages", query)
        listed: list[tuple[Literal["page", "blogpost"], dict[str, Any]]] = [("page", page) for page in pages]
        if self.options.blog_posts:
            posts = await self.api.results(f"/api/v2/spaces/{space_id}/blogposts", query)
            listed += [("blogpost", post) for post in posts]
        current = [(kind, page) for kind, page in listed if page.get("status", "current") == "current"]
        ids = {str(page["id"]) for _, page in current}
        parents: dict[str, str | None] = {}
        containers: dict[str, str] = {}
        """Parents that are not listed pages (a folder, a whiteboard...), by id: their content type."""
        for kind, page in current:
            parent = page.get("parentId") if kind == "page" else None  # a blog post has no parent
            parents[str(page["id"])] = str(parent) if parent else None
            if parent and str(parent) not in ids:
                containers.setdefault(str(parent), str(page.get("parentType") or "page"))
        read = await self._each([self._restriction(pid) for pid in sorted(ids)])
        own: dict[str, Restriction | str] = dict(zip(sorted(ids), read, strict=True))
        await self._containers(containers, parents, own)
        space_groups = await self._space_groups(key, space_id)
        documents: list[SourceDocument] = []
        for kind, page in current:
            pid = str(page["id"])
            access = page_access(
                pid, parents, own, self.options.permissions, space_groups, where=f"source {self.name!r}"
            )
            version = page.get("version") or {}
            if access is None:  # who may read it is unknown for now: no one, until it can be read again
                log.warning(
                    "source %s: page %s is readable by no one until its restrictions can be read", self.name, pid
                )
            doc = SourceDocument(
                self._id(kind, pid),
                self.options.base_url + str((page.get("_links") or {}).get("webui") or f"/pages/{pid}"),
                str(page.get("title") or pid),
                moment(version.get("createdAt") or page.get("createdAt")),
                access if access is not None else (NO_ONE,),
            )
            self._items[doc.id] = _Item(kind, pid, _number(version.get("number")))
            documents.append(doc)
        if self.options.attachments:
            found = await self._each([self._attachments(self._items[doc.id], doc) for doc in list(documents)])
            documents.extend(attachment for attached in found for attachment in attached)
        return documents

    async def _each(self, calls: Sequence[Awaitable[T]]) -> list[T]:
        """`calls` run `concurrency` at a time (a 429 is still waited out by each), in order."""
        gate = asyncio.Semaphore(self.options.concurrency)

        async def one(call: Awaitable[T]) -> T:
            async with gate:
                return await call

        return list(await asyncio.gather(*(one(call) for call in calls)))

    async def _space_groups(self, key: str, space_id: str) -> tuple[str, ...]:
        """The groups of the space's unrestricted pages: `space_access` if configured for it, else
        who Confluence's space permissions let read it (`space_permissions`, the default), else the
        source's `access`. Permissions that cannot be read fail the listing (nothing removed)."""
        if key in self.options.space_access:
            return self.options.space_access[key]
        if not self.options.space_permissions:
            return self.access
        grants = await self.api.results(f"/api/v2/spaces/{space_id}/permissions", {"limit": _LIMIT})
        readers = SpaceReaders.parse(grants)
        names = {group_id: await self._group_name(group_id) for group_id in readers.groups}
        return space_groups(readers, names, self.options.permissions, where=f"source {self.name!r}", space=key)

    async def _group_name(self, group_id: str) -> str:
        """A group's name (space permissions give only its id; mappings are usually by name), or ""
        when Confluence will not say (then the mapping by id still applies)."""
        if group_id not in self._group_names:
            status, data = await self.api.get_json(self.api.url("/rest/api/group/by-id"), {"id": group_id})
            self._group_names[group_id] = str(data.get("name") or "") if status == 200 else ""
        return self._group_names[group_id]

    async def _containers(
        self, pending: Mapping[str, str], parents: dict[str, str | None], own: dict[str, Restriction | str]
    ) -> None:
        """Adds to `parents` and `own` what lies between the listed pages and the space's root that is
        not a listed page: a folder, whiteboard, database or embed holding pages (or an unlisted page).

        Confluence applies such a container's read restriction to the pages in it, as it does a parent
        page's, but the listing names pages only: a page in a restricted folder would otherwise get
        the space's groups. So each container's own restriction is read (v1 reads it for any content
        id) and its parent (v2's `GET /{type}s/{id}`, `parentId` and `parentType`), up to a listed
        page or the space's root. A container that cannot be read, or of a type Candor does not know,
        is `UNREADABLE`: the pages below it are readable by no one until it can be read.
        `pending` maps each container's id to its content type."""
        for _ in range(_MAX_CONTAINER_DEPTH):
            if not pending:
                return
            batch = sorted(pending.items())
            found = await self._each([self._container(cid, kind) for cid, kind in batch])
            above: dict[str, str] = {}
            for (cid, _kind), (restriction, parent) in zip(batch, found, strict=True):
                own[cid] = restriction
                parents[cid] = parent[0] if parent else None
                if parent:
                    above.setdefault(*parent)
            pending = {cid: kind for cid, kind in above.items() if cid not in own}
        for cid in pending:  # deeper than any real tree: a loop, or Confluence misreporting parents
            log.warning("source %s: content %s is nested too deep to read its restrictions", self.name, cid)
            own[cid], parents[cid] = UNREADABLE, None

    async def _container(self, content_id: str, kind: str) -> tuple[Restriction | str, tuple[str, str] | None]:
        """A container's own read restriction (or `UNREADABLE`) and its parent's (id, content type),
        None at the space's root."""
        path = _CONTAINER_PATHS.get(kind)
        if path is None:
            log.warning(
                "source %s: pages in %s %s are readable by no one: who may read a %s is not read by Candor",
                self.name,
                kind,
                content_id,
                kind,
            )
            return UNREADABLE, None
        status, data = await self.api.get_json(self.api.url(f"/api/v2/{path}/{quote(content_id, safe='')}"))
        if status != 200:
            log.warning(
                "source %s: the %s %s holding pages: Confluence answered %s", self.name, kind, content_id, status
            )
            return UNREADABLE, None
        restriction = await self._restriction(content_id)
        parent = data.get("parentId")
        return restriction, ((str(parent), str(data.get("parentType") or "page")) if parent else None)

    async def _restriction(self, content_id: str) -> Restriction | str:
        status, data = await self.api.get_json(
            self.api.url(f"/rest/api/content/{quote(content_id, safe='')}/restriction/byOperation/read"),
            {"expand": "restrictions.group,restrictions.user"},
        )
        if status != 200:
            log.warning("source %s: the restrictions of %s: Confluence answered %s", self.name, content_id, status)
            return UNREADABLE
        return Restriction.parse(data)

    async def _attachments(self, item: _Item, page: SourceDocument) -> list[SourceDocument]:
        """The PDFs attached to a page or blog post, each with its page's access."""
        found = await self.api.results(
            f"/api/v2/{item.kind}s/{item.remote_id}/attachments",
            {"mediaType": "application/pdf", "status": "current", "limit": _LIMIT},
        )
        documents = []
        for attachment in found:
            if attachment.get("mediaType") != "application/pdf" or attachment.get("status", "current") != "current":
                continue
            aid = str(attachment["id"])
            title = str(attachment.get("title") or aid)
            version = attachment.get("version") or {}
            web = attachment.get("webuiLink") or (attachment.get("_links") or {}).get("webui")
            doc = SourceDocument(
                self._id("attachment", aid),
                self.options.base_url + str(web) if web else page.url,
                title,
                moment(version.get("createdAt") or attachment.get("createdAt")),
                page.access,
            )
            download = str(attachment.get("downloadLink") or (attachment.get("_links") or {}).get("download") or "")
            self._items[doc.id] = _Item("attachment", aid, _number(version.get("number")), download)
            documents.append(doc)
        return documents

    def _id(self, kind: str, remote_id: str) -> str:
        """A document's stable id: the site, the kind and Confluence's id (titles and URLs change)."""
        return f"{self.options.base_url}/{kind}/{quote(remote_id, safe='')}"

    # --- fetching --------------------------------------------------------------------------

    async def _fetch_page(self, document: SourceDocument, item: _Item) -> Outcome:
        body_format = self.options.body_format
        status, data = await self.api.get_json(
            self.api.url(f"/api/v2/{item.kind}s/{item.remote_id}"), {"body-format": body_format}
        )
        if status == 404:
            return Gone(document, "Confluence answered 404")
        if status != 200:
            raise ItemError(f"Confluence answered {status}")
        if data.get("status", "current") != "current":
            return Gone(document, f"the page is {data.get('status')}")
        body = ((data.get("body") or {}).get(body_format) or {}).get("value")
        if not isinstance(body, str):
            raise ItemError(f"Confluence gave no {body_format} body for the page")
        version = data.get("version") or {}
        title = str(data.get("title") or document.title)
        page = (
            f'<!doctype html><html><head><meta charset="utf-8"><title>{escape_html(title)}</title></head>'
            f"<body><h1>{escape_html(title)}</h1>{body}</body></html>"
        )
        modified = moment(version.get("createdAt")) or document.modified
        number = _number(version.get("number")) or item.version
        return Fetched(
            SourceDocument(document.id, document.url, title, modified, document.access),
            page.encode("utf-8"),
            "html",
            {"version": number} if number is not None else {},
        )

    async def _fetch_attachment(self, document: SourceDocument, item: _Item) -> Outcome:
        if not item.download:
            raise ItemError("Confluence gave no download link for the attachment")
        status, data = await self.api.get(self.api.url(item.download))
        if status in (404, 410):
            return Gone(document, f"Confluence answered {status}")
        if status != 200:
            raise ItemError(f"Confluence answered {status}")
        if not data.startswith(b"%PDF"):
            raise ItemError("the attachment is not a PDF")
        return Fetched(document, data, "pdf", {"version": item.version} if item.version is not None else {})


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
