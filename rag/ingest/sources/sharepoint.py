"""SharePoint Online and OneDrive: the files of the configured sites' document libraries and drives,
and the sites' pages, through Microsoft Graph with an app-only token (`graph_api`).

The listing resolves each site (`GET /sites/{hostname}:/{path}`, or `/sites/{id}`), reads its
libraries (`/sites/{id}/drives`, only those named in `libraries` if given), then every item of each
library and configured drive at every depth with one paged delta query from scratch
(`/drives/{d}/root/delta`), and the permissions of each file it will sync
(`/drives/{d}/items/{i}/permissions`, mapped in `sharepoint_access`). PDFs, `.txt`, `.md` and
`.html` files are downloaded (`/content`); Word files are converted to PDF by Graph itself
(`/content?format=pdf`); other kinds are counted and left out. A site's published pages
(`/sites/{id}/pages/microsoft.graph.sitePage`) are fetched with their canvas, and the text web
parts' HTML is the page's body. Each is cited by its `webUrl` and stored under
`<graph_url>/drives/<drive id>/items/<item id>` (or `.../sites/<site>/pages/<page>`), so a file that
is moved or renamed is updated, not duplicated.

Why no delta cursor: the Syncer's model is a complete listing each run (a document it does not meet
is deleted) and per-item state, and it keeps the cursor itself. Keeping `@odata.deltaLink` would
give only the changes, which the Syncer would read as deletions of everything else. So the delta
query runs from scratch (every item in a few large pages, cheaper than walking folders), and each
item's `cTag` (its content's version; `eTag` for a page) and `webUrl` are its state: an item whose
tag and address did not change is not downloaded (`NotModified`), while its permissions are read
every run, so a permission change is applied (the Syncer fetches it again with its new groups).
A `deleted` item, or one no longer listed, is deleted. A listing that fails (refused credentials,
a site or drive that vanished, a 5xx after the waits) raises `SourceError` and removes nothing.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import NO_ONE, Fetched, Format, Gone, ItemState, NotModified, Outcome, SourceDocument
from rag.ingest.sources.common import moment
from rag.ingest.sources.graph_api import GraphApi
from rag.ingest.sources.guard import Network
from rag.ingest.sources.sharepoint_access import item_access
from rag.ingest.sources.sharepoint_options import SharePointOptions

log = logging.getLogger("candor.sync.sharepoint")

FORMATS: Mapping[str, tuple[Format, bool]] = {
    "pdf": ("pdf", False),
    "txt": ("txt", False),
    "md": ("md", False),
    "markdown": ("md", False),
    "html": ("html", False),
    "htm": ("html", False),
    "docx": ("pdf", True),
}
"""A file's extension → the format Candor reads it in, and whether Graph converts it to PDF first."""
_PARALLEL = 4
"""Permission reads in flight at once while listing."""
_CREDENTIALS = ("tenant_id", "client_id", "client_secret")


@dataclass(frozen=True, slots=True)
class _Item:
    """What the listing learnt of a document, for its fetch."""

    kind: Literal["file", "page"]
    container: str
    """The drive's id (a file) or the site's (a page)."""
    remote_id: str
    tag: str
    format: Format = "html"
    convert: bool = False
    unreadable: bool = False


class SharePoint:
    """A `Connector` for the libraries and pages of some SharePoint sites and some OneDrive drives."""

    kind = "sharepoint"

    def __init__(
        self,
        options: SharePointOptions,
        *,
        name: str,
        credentials: Mapping[str, str],
        variables: Mapping[str, str],
        network: Network | None = None,
    ) -> None:
        """`network`: how Graph is reached (default: the guard, no internal addresses)."""
        missing = [key for key in _CREDENTIALS if key not in credentials]
        if missing:
            raise SyncError(
                f"source {name!r}: a sharepoint source needs `credentials: {{tenant_id: VARIABLE, client_id: "
                f"VARIABLE, client_secret: VARIABLE}}` (an Entra app registration's); missing: {', '.join(missing)}"
            )
        self.options = options
        self.name = name
        self.max_documents = options.max_documents
        named = ", ".join(f"${variables[key]}" for key in _CREDENTIALS)
        self.api = GraphApi(
            options.graph_url,
            authority=options.authority,
            tenant=credentials["tenant_id"],
            client_id=credentials["client_id"],
            client_secret=credentials["client_secret"],
            scope=options.scope,
            refused=f"Microsoft refused the app credentials in {named} (a wrong or expired client secret, "
            "or an app without Sites.Read.All / Files.Read.All?)",
            timeout_seconds=options.timeout_seconds,
            max_wait_seconds=options.max_wait_seconds,
            max_bytes=options.max_bytes,
            network=network,
        )
        self._items: dict[str, _Item] = {}
        self._logged: set[str] = set()
        self.not_synced: Counter[str] = Counter()
        """Files of kinds Candor does not read, by extension, in the last listing."""

    # --- the Connector Protocol ------------------------------------------------------------

    async def listing(self) -> Sequence[SourceDocument]:
        self._items.clear()
        self.not_synced.clear()
        try:
            documents = await self._listing()
        except ItemError as exc:
            raise SourceError(f"source {self.name!r}: {exc}") from exc
        if self.not_synced:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.not_synced.items()))
            log.info("source %s: %d files of kinds Candor does not read were left out (%s)",
                     self.name, self.not_synced.total(), kinds)  # fmt: skip
        return documents

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        item = self._items.get(document.id)
        if item is None:
            raise ItemError("not in this run's listing")
        if item.unreadable:
            raise ItemError("its permissions could not be read; its stored version stays")
        if (
            previous is not None
            and item.tag
            and previous.values.get("tag") == item.tag
            and previous.values.get("url") == document.url
        ):
            return NotModified(document)
        if item.kind == "page":
            return await self._fetch_page(document, item)
        return await self._fetch_file(document, item)

    async def aclose(self) -> None:
        await self.api.aclose()

    # --- listing ---------------------------------------------------------------------------

    async def _listing(self) -> list[SourceDocument]:
        documents: list[SourceDocument] = []
        for reference in self.options.sites:
            path = f"/sites/{reference}" if ":/" in reference else f"/sites/{quote(reference, safe=',')}"
            status, site = await self.api.get_json(self.api.url(path))
            if status != 200:
                raise ItemError(f"the site {reference} is not there (Graph answered {status}): deleted, or renamed?")
            site_id = str(site["id"])
            drives = await self.api.values(f"/sites/{quote(site_id, safe=',')}/drives")
            if self.options.libraries:
                named = {str(d.get("name")): d for d in drives}
                absent = [name for name in self.options.libraries if name not in named]
                if absent:
                    raise ItemError(f"the site {reference} has no library {', '.join(absent)} (renamed, or deleted?)")
                drives = [named[name] for name in self.options.libraries]
            for drive in drives:
                documents.extend(await self._drive(str(drive["id"])))
            if self.options.site_pages is not None:
                documents.extend(await self._pages(site_id, self.options.site_pages))
        for drive_id in self.options.drives:
            status, _ = await self.api.get_json(self.api.url(f"/drives/{quote(drive_id, safe='!')}"))
            if status != 200:
                raise ItemError(f"the drive {drive_id} is not there (Graph answered {status}): deleted?")
            documents.extend(await self._drive(drive_id))
        return documents

    async def _drive(self, drive_id: str) -> list[SourceDocument]:
        listed = await self.api.values(f"/drives/{quote(drive_id, safe='!')}/root/delta")
        # an item may appear more than once in a delta feed: its last occurrence is the one to use
        items = {str(entry.get("id")): entry for entry in listed}
        files: list[tuple[dict[str, Any], Format, bool]] = []
        for entry in items.values():
            if "deleted" in entry or "root" in entry or not isinstance(entry.get("file"), dict):
                continue  # a deleted item (never listed, so deleted here), the root, a folder, a package
            name = str(entry.get("name") or "")
            extension = name.rsplit(".", 1)[1].lower() if "." in name else ""
            if extension not in FORMATS:
                self.not_synced[f".{extension} files" if extension else "files without an extension"] += 1
                continue
            files.append((entry, *FORMATS[extension]))
        limit = asyncio.Semaphore(_PARALLEL)

        async def permissions(item_id: str) -> tuple[int, list[dict[str, Any]]]:
            async with limit:
                return await self.api.collection(f"/drives/{quote(drive_id, safe='!')}/items/{item_id}/permissions")

        read = await asyncio.gather(*(permissions(str(entry["id"])) for entry, _, _ in files), return_exceptions=True)
        documents: list[SourceDocument] = []
        for (entry, fmt, convert), answer in zip(files, read, strict=True):
            if isinstance(answer, BaseException):
                raise answer  # a refused token or an unreachable Graph: the listing fails
            item_id, name = str(entry["id"]), str(entry.get("name") or entry["id"])
            status, granted = answer
            access: tuple[str, ...] = (NO_ONE,)  # unknown until read: the item is skipped, never opened
            if status == 200:
                access = self._access(name, granted)
            else:
                log.warning("source %s: the permissions of %s: Graph answered %s", self.name, name, status)
            doc = SourceDocument(
                f"{self.options.graph_url}/drives/{quote(drive_id, safe='!')}/items/{quote(item_id, safe='!')}",
                str(entry.get("webUrl") or ""),
                name,
                moment(entry.get("lastModifiedDateTime")),
                access,
            )
            tag = str(entry.get("cTag") or entry.get("eTag") or "")
            self._items[doc.id] = _Item("file", drive_id, item_id, tag, fmt, convert, unreadable=status != 200)
            documents.append(doc)
        return documents

    def _access(self, name: str, granted: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        access, unmapped = item_access(granted, self.options.permissions)
        for principal in unmapped:
            if principal.label not in self._logged:
                self._logged.add(principal.label)
                log.warning("source %s: %s can read items but has no mapping under `permissions`: left out of "
                            "their readers (it narrows who may read them)", self.name, principal.label)  # fmt: skip
        if NO_ONE in access:
            log.warning("source %s: %s is readable by no one in Candor: none of its readers maps to an access group",
                        self.name, name)  # fmt: skip
        return access

    async def _pages(self, site_id: str, groups: tuple[str, ...]) -> list[SourceDocument]:
        pages = await self.api.values(f"/sites/{quote(site_id, safe=',')}/pages/microsoft.graph.sitePage")
        documents: list[SourceDocument] = []
        for page in pages:
            level = (page.get("publishingState") or {}).get("level", "published")
            if level != "published":
                continue  # a draft or a checked-out page: not what readers see
            page_id = str(page["id"])
            doc = SourceDocument(
                f"{self.options.graph_url}/sites/{quote(site_id, safe=',')}/pages/{quote(page_id, safe='')}",
                str(page.get("webUrl") or ""),
                str(page.get("title") or page.get("name") or page_id),
                moment(page.get("lastModifiedDateTime")),
                groups,
            )
            tag = str(page.get("eTag") or page.get("lastModifiedDateTime") or "")
            self._items[doc.id] = _Item("page", site_id, page_id, tag)
            documents.append(doc)
        return documents

    # --- fetching --------------------------------------------------------------------------

    async def _fetch_file(self, document: SourceDocument, item: _Item) -> Outcome:
        path = f"/drives/{quote(item.container, safe='!')}/items/{quote(item.remote_id, safe='!')}/content"
        status, data = await self.api.get(self.api.url(path), {"format": "pdf"} if item.convert else None)
        if status in (404, 410):
            return Gone(document, f"Graph answered {status}")
        if status != 200:
            if item.convert:
                raise ItemError(f"Graph could not convert it to PDF (HTTP {status})")
            raise ItemError(f"Graph answered {status}")
        if item.format == "pdf" and not data.startswith(b"%PDF"):
            raise ItemError("Graph's PDF conversion gave no PDF" if item.convert else "the file is not a PDF")
        return Fetched(document, data, item.format, {"tag": item.tag, "url": document.url})

    async def _fetch_page(self, document: SourceDocument, item: _Item) -> Outcome:
        site, page_id = quote(item.container, safe=","), quote(item.remote_id, safe="")
        path = f"/sites/{site}/pages/{page_id}/microsoft.graph.sitePage"
        status, page = await self.api.get_json(self.api.url(path), {"$expand": "canvasLayout"})
        if status == 404:
            return Gone(document, "Graph answered 404")
        if status != 200:
            raise ItemError(f"Graph answered {status}")
        parts = page_html(page.get("canvasLayout") or {})
        if not parts:
            raise ItemError("the page has no text web parts to read")
        title = str(page.get("title") or document.title)
        body = (
            f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
            f"<body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>"
        )
        fetched = SourceDocument(document.id, document.url, title, document.modified, document.access)
        return Fetched(fetched, body.encode("utf-8"), "html", {"tag": item.tag, "url": document.url})


def page_html(canvas: Mapping[str, Any]) -> list[str]:
    """The `innerHtml` of every text web part of a page's canvas, in reading order: each horizontal
    section's columns, then the vertical section."""
    sections = [s for s in canvas.get("horizontalSections") or [] if isinstance(s, dict)]
    columns = [c for s in sections for c in s.get("columns") or [] if isinstance(c, dict)]
    vertical = canvas.get("verticalSection")
    if isinstance(vertical, dict):
        columns.append(vertical)
    return [
        str(part["innerHtml"])
        for column in columns
        for part in column.get("webparts") or []
        if isinstance(part, dict)
        and part.get("@odata.type") == "#microsoft.graph.textWebPart"
        and isinstance(part.get("innerHtml"), str)
    ]
