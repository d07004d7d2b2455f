"""Notion: every page and database row shared with an integration, or only those below configured
roots, through the public API (`notion_api`, the maintained `notion-client`, `Notion-Version:
2025-09-03`) with an internal integration's secret named by environment variable.

The listing is the workspace search (`POST /v1/search`: every page and data source shared with the
integration) plus each data source's rows (`POST /v1/data_sources/{id}/query`); with `roots`, only
the roots (pages, databases or data sources) and what lies below them, found by walking each page's
`parent` ids (a parent block is looked up with `GET /v1/blocks/{id}`). Nothing of a page's content
is read while listing, so a page whose `last_edited_time` is the one stored last time costs no
request at all. A page that changed is read block by block (`GET /v1/blocks/{id}/children`,
recursing where `has_children`) and rendered to Markdown by `notion_blocks`: a database row's
properties come first as a `name: value` list. Its PDFs (`pdf` blocks, or `file` blocks named
`*.pdf`) hosted by Notion are documents of their own, downloaded from the block's file URL; a PDF
linked from elsewhere (`external`) is not fetched.

A page is stored under its id (`notion:page:<id>`, so a renamed or moved page is updated, not
duplicated), cited by its `url`, dated by `last_edited_time`. Notion rounds that time to the minute,
so an edit made within the same minute as a sync is read by the next edit's sync, not this one.
Who may read it is worked out in `notion_access` (Notion's API does not say; the sources file
does). A page whose place cannot be read (a parent block's lookup answers 5xx) is synced readable
by no one, and so are its PDFs, until its place can be read again: never with the source's `access`
(which may be public) nor kept with groups its new place may narrow; with `roots` it is kept the
same way, since it may lie below one, so a failed lookup deletes nothing. A page in the trash, or no
longer shared with the integration, is deleted; a listing that fails (a refused token, a search that
answers 5xx) raises `SourceError` and removes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import Fetched, Gone, ItemState, NotModified, Outcome, SourceDocument
from rag.ingest.sources.common import moment
from rag.ingest.sources.guard import Network
from rag.ingest.sources.notion_access import TOP, notion_id, page_groups, under_roots, unread_ancestor, unseen_ids
from rag.ingest.sources.notion_api import NotionApi
from rag.ingest.sources.notion_blocks import CHILDREN, page_url, property_lines, render_page, title_of
from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.notion")

_PAGE, _FILE = "notion:page:", "notion:file:"


@dataclass(frozen=True, slots=True)
class NotionOptions:
    roots: tuple[str, ...] = ()
    """Pages, databases or data sources whose subtrees are synced; none: everything shared."""
    page_access: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pdfs: bool = True
    base_url: str = "https://api.notion.com"
    requests_per_second: float = 3.0
    max_documents: int = 5000
    timeout_seconds: float = 30.0
    max_wait_seconds: float = 60.0
    max_bytes: int = 50_000_000
    """The largest answer read (a list of blocks, a PDF): a larger PDF is skipped, with its size."""

    @classmethod
    def parse(cls, options: Mapping[str, Any], where: str) -> NotionOptions:
        known = {
            "roots", "page_access", "pdfs", "base_url", "requests_per_second", "max_documents",
            "timeout_seconds", "max_wait_seconds", "max_bytes",
        }  # fmt: skip
        unknown = sorted(set(options) - known)
        if unknown:
            raise SyncError(f"{where}: unknown notion settings {unknown} (known: {sorted(known)})")
        roots = options.get("roots") or []
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise SyncError(f"{where}: `roots` lists page or database ids (or their URLs)")
        page_access = options.get("page_access") or {}
        if not isinstance(page_access, dict):
            raise SyncError(f"{where}: `page_access` maps page or database ids to access groups")
        base_url = str(options.get("base_url") or "https://api.notion.com").rstrip("/")
        if not base_url.startswith(("https://", "http://")):
            raise SyncError(f"{where}: `base_url` is the API's URL, https://api.notion.com")
        try:
            made = cls(
                roots=tuple(dict.fromkeys(_id(r, f"{where}: roots") for r in roots)),
                page_access={
                    _id(str(k), f"{where}: page_access"): _groups(v, f"{where}: page_access.{k}")
                    for k, v in page_access.items()
                },
                pdfs=bool(options.get("pdfs", True)),
                base_url=base_url,
                requests_per_second=float(options.get("requests_per_second", 3.0)),
                max_documents=int(options.get("max_documents", 5000)),
                timeout_seconds=float(options.get("timeout_seconds", 30.0)),
                max_wait_seconds=float(options.get("max_wait_seconds", 60.0)),
                max_bytes=int(options.get("max_bytes", 50_000_000)),
            )
        except (TypeError, ValueError) as exc:
            raise SyncError(f"{where}: a notion setting is not a number: {exc}") from exc
        if made.requests_per_second <= 0 or made.max_documents < 1 or made.timeout_seconds <= 0:
            raise SyncError(f"{where}: requests_per_second, max_documents and timeout_seconds must be positive")
        if made.max_wait_seconds < 0 or made.max_bytes < 1:
            raise SyncError(f"{where}: max_wait_seconds cannot be negative, max_bytes must be positive")
        return made


def _id(value: str, where: str) -> str:
    found = notion_id(value)
    if found is None:
        raise SyncError(f"{where}: {value!r} is not a Notion id (32 hex digits) nor a page's URL")
    return found


def _groups(value: object, where: str) -> tuple[str, ...]:
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(g, str) and g.strip() for g in listed):
        raise SyncError(f"{where} must be a list of access groups ([] for public)")
    return tuple(sorted({g.strip() for g in listed}))


@dataclass(frozen=True, slots=True)
class _Page:
    page: Mapping[str, Any]
    edited: str
    row: bool
    trashed: bool


@dataclass(frozen=True, slots=True)
class _File:
    block_id: str
    page_id: str
    url: str
    edited: str


class Notion:
    """A `Connector` for the pages an internal integration can see in one Notion workspace."""

    kind = "notion"

    def __init__(
        self,
        options: NotionOptions,
        *,
        name: str,
        credentials: Mapping[str, str],
        variables: Mapping[str, str],
        access: Sequence[str] = (),
        network: Network | None = None,
    ) -> None:
        """`network`: how Notion is reached (default: the guard, no internal addresses)."""
        if "token" not in credentials:
            raise SyncError(
                f"source {name!r}: a notion source needs `credentials: {{token: VARIABLE}}` (an internal "
                "integration's secret, by the name of the environment variable that holds it)"
            )
        self.options = options
        self.name = name
        self.access = tuple(sorted(set(access)))
        self.max_documents = options.max_documents
        self.not_synced: Mapping[str, int] = {}
        """Nothing is left out by kind: what this source lists, Candor reads."""
        self.api = NotionApi(
            credentials["token"],
            refused=f"Notion refused the integration secret in ${variables['token']} (wrong, revoked or expired?)",
            base_url=options.base_url,
            requests_per_second=options.requests_per_second,
            timeout_seconds=options.timeout_seconds,
            max_wait_seconds=options.max_wait_seconds,
            max_bytes=options.max_bytes,
            network=network,
        )
        self._pages: dict[str, _Page] = {}
        self._files: dict[str, _File] = {}
        self._links: dict[str, tuple[str, tuple[str, ...]]] = {}
        """Page and database id → (URL, access groups), for the links a page's blocks hold."""
        self._unchanged: set[str] = set()

    # --- the Connector Protocol ------------------------------------------------------------

    async def listing(self) -> Sequence[SourceDocument]:
        try:
            return await self._listing()
        except ItemError as exc:
            raise SourceError(f"source {self.name!r}: {exc}") from exc

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        if document.id.startswith(_FILE):
            return await self._fetch_file(document, previous)
        item = self._pages.get(document.id)
        if item is None:
            raise ItemError("not in this run's listing")
        if item.trashed:
            return Gone(document, "the page is in Notion's trash")
        page_id = str(item.page["id"])
        if previous is not None and previous.values.get("last_edited_time") == item.edited:
            self._unchanged.add(page_id)
            return NotModified(document)
        blocks = await self.api.block_tree(page_id)
        links = {key: url for key, (url, groups) in self._links.items() if _within(groups, document.access)}
        properties = property_lines(item.page.get("properties") or {}) if item.row else []
        text = render_page(document.title, properties, blocks, links)
        leads = self._pdfs(blocks, page_id, document) if self.options.pdfs else []
        return Fetched(document, text.encode("utf-8"), "md", {"last_edited_time": item.edited}, leads)

    async def aclose(self) -> None:
        await self.api.aclose()

    # --- listing ---------------------------------------------------------------------------

    async def _listing(self) -> list[SourceDocument]:
        found = await self.api.search()
        pages = {str(r["id"]): r for r in found if r.get("object") == "page" and r.get("id")}
        sources = [r for r in found if r.get("object") == "data_source" and r.get("id")]
        parents: dict[str, str] = {}
        for source in sources:
            if source.get("in_trash") or source.get("archived"):
                continue
            for row in await self.api.rows(str(source["id"])):
                if row.get("object") == "page" and row.get("id"):
                    pages.setdefault(str(row["id"]), row)
            parents[str(source["id"])] = _parent_id(source.get("parent"))
            database = (source.get("parent") or {}).get("database_id")
            if database:
                parents[str(database)] = _parent_id(source.get("database_parent"))
        parents.update({pid: _parent_id(page.get("parent")) for pid, page in pages.items()})
        unreadable = await self._resolve_blocks(parents)
        where = f"source {self.name!r}"
        absent = unseen_ids(self.options.roots, parents)
        if absent:
            raise ItemError(f"roots {', '.join(absent)} are not shared with the integration (or were deleted)")
        unseen = unseen_ids(self.options.page_access, parents)
        if unseen:
            log.warning(
                "%s: page_access names %s, which the integration cannot see: share it with the integration "
                "in Notion (··· → Connections) or remove it from page_access",
                where,
                ", ".join(unseen),
            )

        def groups(node: str) -> tuple[str, ...]:
            return page_groups(
                node, parents, self.options.page_access, self.access, unseen=unseen, unreadable=unreadable, where=where
            )

        documents: list[SourceDocument] = []
        self._links = {}
        for pid, page in pages.items():
            inside = under_roots(pid, parents, self.options.roots, unreadable) if self.options.roots else True
            if inside is False:
                continue
            # When it cannot be told whether the page lies below a root, even its own `page_access`
            # would admit readers to a page that may lie outside the roots: no one reads it until then.
            access = groups(pid) if inside else (NO_ONE,)
            if access == (NO_ONE,) and (blocked := unread_ancestor(pid, parents, unreadable)) is not None:
                log.warning(
                    "%s: page %s is synced readable by no one (and so are its PDFs) until its place in the "
                    "workspace can be read: the lookup of its parent block %s failed",
                    where,
                    pid,
                    blocked,
                )
            url = str(page.get("url") or page_url(pid))
            self._links[pid] = (url, access)
            doc = SourceDocument(
                _PAGE + pid,
                url,
                title_of(page.get("properties") or {}) or "Untitled",
                moment(page.get("last_edited_time")),
                access,
            )
            trashed = bool(page.get("in_trash") or page.get("archived"))
            in_database = (page.get("parent") or {}).get("type") in ("data_source_id", "database_id")
            edited = str(page.get("last_edited_time") or "")
            self._pages[doc.id] = _Page(page, edited, in_database, trashed)
            documents.append(doc)
        for node in parents:
            if node not in pages:
                self._links[node] = (page_url(node), groups(node))  # databases and data sources
        return documents

    async def _resolve_blocks(self, parents: dict[str, str]) -> set[str]:
        """Follow the parents that are blocks (a page inside a toggle or a column) up to their page,
        adding each to `parents`; the ids whose parent could not be read."""
        unreadable: set[str] = set()
        pending = [p for p in parents.values() if p.startswith("block:")]
        for key, value in list(parents.items()):
            if value.startswith("block:"):
                parents[key] = value.removeprefix("block:")
        while pending:
            block_id = pending.pop().removeprefix("block:")
            if block_id in parents or block_id in unreadable:
                continue
            try:
                block = await self.api.block(block_id)
            except ItemError as exc:
                log.warning("source %s: the parent block %s could not be read: %s", self.name, block_id, exc)
                unreadable.add(block_id)
                continue
            if block is None:
                continue  # not shared with the integration: the ancestry stops here
            parent = _parent_id(block.get("parent"))
            if parent.startswith("block:"):
                pending.append(parent)
                parent = parent.removeprefix("block:")
            parents[block_id] = parent
        return unreadable

    # --- fetching --------------------------------------------------------------------------

    def _pdfs(self, blocks: Sequence[Mapping[str, Any]], page_id: str, page: SourceDocument) -> list[SourceDocument]:
        found: list[SourceDocument] = []
        for block in _walk(blocks):
            kind = block.get("type")
            data = block.get(str(kind)) or {}
            name = str(data.get("name") or "")
            if kind not in ("pdf", "file") or (kind == "file" and not name.lower().endswith(".pdf")):
                continue
            if data.get("type") != "file":
                log.info("source %s: PDF %s on page %s is linked from elsewhere: not fetched", self.name, name, page_id)
                continue
            block_id = str(block["id"])
            doc = SourceDocument(
                _FILE + block_id,
                f"{page.url}#{block_id.replace('-', '')}",
                name or "document.pdf",
                moment(block.get("last_edited_time")),
                page.access,
            )
            url = str((data.get("file") or {}).get("url") or "")
            self._files[doc.id] = _File(block_id, page_id, url, str(block.get("last_edited_time") or ""))
            found.append(doc)
        return found

    async def _fetch_file(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        item = self._files.get(document.id)
        if item is None:
            if previous is not None and previous.values.get("page") in self._unchanged:
                return NotModified(document)  # its page did not change, so neither did the block
            item = await self._file_block(document)
            if item is None:
                return Gone(document, "the PDF's block is no longer in Notion")
        state = {"last_edited_time": item.edited, "page": item.page_id}
        if previous is not None and previous.values.get("last_edited_time") == item.edited:
            return NotModified(document)
        if not item.url:
            raise ItemError("Notion gave no URL for the file")
        data = await self.api.download(item.url)
        if not data.startswith(b"%PDF"):
            raise ItemError("the file is not a PDF")
        return Fetched(document, data, "pdf", state)

    async def _file_block(self, document: SourceDocument) -> _File | None:
        """The PDF's block read afresh (its file URL expires within the hour), None when it is gone."""
        block = await self.api.block(document.id.removeprefix(_FILE))
        if block is None or block.get("in_trash") or block.get("archived"):
            return None
        data = block.get(str(block.get("type"))) or {}
        page = _parent_id(block.get("parent"))
        url = str((data.get("file") or {}).get("url") or "")
        return _File(str(block["id"]), page.removeprefix("block:"), url, str(block.get("last_edited_time") or ""))


def _parent_id(parent: object) -> str:
    """The id a `parent` object points to; blocks as `block:<id>` (to be looked up), the top as `TOP`."""
    if not isinstance(parent, Mapping):
        return TOP
    kind = parent.get("type")
    if kind == "block_id":
        return "block:" + str(parent.get("block_id"))
    if kind in ("page_id", "data_source_id", "database_id"):
        return str(parent.get(str(kind)) or TOP)
    return TOP  # workspace (or a teamspace)


def _walk(blocks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for block in blocks:
        found.append(block)
        found.extend(_walk(block.get(CHILDREN) or []))
    return found


def _within(groups: tuple[str, ...], reader: tuple[str, ...]) -> bool:
    """Whether a page readable by `groups` may be named (linked) in a page readable by `reader`:
    whoever reads the one reads the other."""
    if not groups:
        return True
    return bool(reader) and set(reader) <= set(groups)
