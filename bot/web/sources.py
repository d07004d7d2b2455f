"""The dashboard's sources, knowledge bases and documents pages, behind its login (`Dashboard.refusal`):

- ``GET /dashboard/sources``: every source, its last run and what it holds (`bot.render.sources_html`);
- ``GET /dashboard/sources/<name>?kb=``: one source, its last run in full and its latest runs;
- ``POST /dashboard/sources/<name>/sync``: Sync now, for the admin only and from this server's own
  page (refused from another site, like the login): one run started in this process, claimed in
  Postgres so no replica runs the source twice; back (303) to the source's page, which shows its
  progress and reloads itself until the run ends;
- ``GET /dashboard/knowledge-bases``: each base's documents, chunks, readers and dates;
- ``GET /dashboard/documents?kb=&q=&source=&page=``: a base's documents, searched by title or URL;
- ``GET /dashboard/documents/<id>``: one document's chunks as Candor reads them, and the answers
  that cited it in the last 30 days.

A thin adapter: query → the core's `SourcesService` (`rag.SourceOverview`) → a pure renderer. Every
value is escaped; pages carry no script. An unknown source, base or document is a 404, a bad
parameter a 400, an unreadable sources file the page saying why, a database failure a 503; logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol
from urllib.parse import quote, urlencode

from aiohttp import web

from bot.render.documents_html import document_page, documents_page, knowledge_bases_page
from bot.render.sources_html import source_page, sources_page
from bot.web.dashboard_auth import same_origin
from rag.errors import CandorError, NotFound, SyncError
from rag.model.sources import (
    DocumentPage,
    DocumentSearch,
    KnowledgeBaseStatus,
    SourceStatus,
    SyncRun,
    SyncStart,
)

log = logging.getLogger("candor.dashboard")

SOURCES = "/dashboard/sources"
SOURCE = "/dashboard/sources/{name}"
SYNC = "/dashboard/sources/{name}/sync"
BASES = "/dashboard/knowledge-bases"
DOCUMENTS = "/dashboard/documents"
DOCUMENT = "/dashboard/documents/{document_id}"
MAX_QUERY_CHARS = 200
MAX_PAGE = 100_000
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
UNAVAILABLE = "The sources could not be read right now: the database did not answer. Try again in a moment."

Refusal = Callable[..., web.Response | None]


class SourcesService(Protocol):
    """What these pages need from the core (`rag.SourceOverview` has it)."""

    async def sources(self) -> list[SourceStatus]: ...

    async def source(self, name: str, kb: str | None = None) -> tuple[SourceStatus, list[SyncRun]]: ...

    async def knowledge_bases(self) -> list[KnowledgeBaseStatus]: ...

    async def documents(
        self, kb: str, query: str = "", *, source: str | None = None, page: int = 1, per_page: int = 50
    ) -> DocumentSearch: ...

    async def document(self, document_id: int) -> DocumentPage: ...

    async def start_sync(self, name: str) -> SyncStart: ...

    async def aclose(self) -> None: ...


def add_source_routes(app: web.Application, service: SourcesService, refusal: Refusal) -> None:
    pages = SourcePages(service, refusal)
    app.router.add_get(SOURCES, pages.sources)
    app.router.add_get(SOURCE, pages.source)
    app.router.add_post(SYNC, pages.sync)
    app.router.add_get(BASES, pages.bases)
    app.router.add_get(DOCUMENTS, pages.documents)
    app.router.add_get(DOCUMENT, pages.document)

    async def stop_runs(app: web.Application) -> None:
        await service.aclose()

    app.on_cleanup.append(stop_runs)


def source_url(name: str, kb: str | None, **extra: str) -> str:
    query = {key: value for key, value in {"kb": kb or "", **extra}.items() if value}
    return f"{SOURCES}/{quote(name, safe='')}" + ("?" + urlencode(query) if query else "")


class SourcePages:
    def __init__(self, service: SourcesService, refusal: Refusal) -> None:
        self.service = service
        self.refusal = refusal

    async def sources(self, request: web.Request) -> web.StreamResponse:
        if (refused := self.refusal(request, back_to=SOURCES)) is not None:
            return refused
        try:
            found = await self.service.sources()
        except SyncError as exc:
            return _html(sources_page([], problem=f"The sources file could not be read: {exc}"))
        except CandorError as exc:
            return _unavailable("the sources", exc)
        return _html(sources_page(found, message=request.query.get("message")))

    async def source(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if (refused := self.refusal(request, back_to=SOURCES + "/" + quote(name, safe=""))) is not None:
            return refused
        try:
            status, runs = await self.service.source(name, request.query.get("kb") or None)
        except NotFound:
            return _text(404, "No such source.")
        except SyncError as exc:
            return _html(sources_page([], problem=f"The sources file could not be read: {exc}"))
        except CandorError as exc:
            return _unavailable(f"source {name}", exc)
        return _html(source_page(status, runs, message=request.query.get("message")))

    async def sync(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if (refused := self.refusal(request, back_to=SOURCES)) is not None:
            return refused
        if not same_origin(request.headers, request.host):
            return _text(403, "Refused: press Sync now on this server's own page.")
        form = await request.post()
        kb = str(form.get("kb") or "") or None
        try:
            started = await self.service.start_sync(name)
        except NotFound:
            return _text(404, "No such source in the sources file.")
        except SyncError as exc:
            return _see(SOURCES + "?" + urlencode({"message": str(exc)}))
        except CandorError as exc:
            return _unavailable(f"Sync now of {name}", exc)
        log.info("dashboard: Sync now of %s: %s", name, started.message)
        return _see(source_url(name, kb, message=started.message))

    async def bases(self, request: web.Request) -> web.StreamResponse:
        if (refused := self.refusal(request, back_to=BASES)) is not None:
            return refused
        try:
            return _html(knowledge_bases_page(await self.service.knowledge_bases()))
        except CandorError as exc:
            return _unavailable("the knowledge bases", exc)

    async def documents(self, request: web.Request) -> web.StreamResponse:
        if (refused := self.refusal(request, back_to=DOCUMENTS)) is not None:
            return refused
        kb, query = request.query.get("kb", "").strip(), request.query.get("q", "")
        written = request.query.get("page") or "1"
        if not kb:
            return _see(BASES)
        if len(query) > MAX_QUERY_CHARS:
            return _text(400, f"The search is too long (the limit is {MAX_QUERY_CHARS} characters).")
        if not written.isdigit() or not 1 <= int(written) <= MAX_PAGE:
            return _text(400, f"page must be a number from 1 to {MAX_PAGE}")
        try:
            found = await self.service.documents(
                kb, query, source=request.query.get("source") or None, page=int(written)
            )
        except NotFound:
            return _text(404, "No such knowledge base.")
        except CandorError as exc:
            return _unavailable(f"the documents of {kb}", exc)
        return _html(documents_page(found))

    async def document(self, request: web.Request) -> web.StreamResponse:
        written = request.match_info["document_id"]
        back_to = DOCUMENTS + "/" + written if written.isdigit() else None
        if (refused := self.refusal(request, back_to=back_to)) is not None:
            return refused
        if not written.isdigit() or len(written) > 18:
            return _text(404, "No such document.")
        try:
            found = await self.service.document(int(written))
        except NotFound:
            return _text(404, "No such document.")
        except CandorError as exc:
            return _unavailable(f"document {written}", exc)
        return _html(document_page(found))


def next_pages() -> Sequence[str]:
    """The patterns of these pages a login may return to (`bot.web.dashboard.next_page`)."""
    return (SOURCES, SOURCES + r"/[a-z0-9][a-z0-9._-]{0,63}", BASES, DOCUMENTS, DOCUMENTS + r"/[0-9]{1,18}")


def _html(page: str) -> web.Response:
    headers = {**_HEADERS, "Content-Security-Policy": CSP}
    return web.Response(text=page, content_type="text/html", charset="utf-8", headers=headers)


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers=_HEADERS)


def _see(location: str) -> web.Response:
    return web.Response(status=303, headers={**_HEADERS, "Location": location})


def _unavailable(what: str, exc: CandorError) -> web.Response:
    log.warning("dashboard: could not read %s: %s", what, exc)
    return _text(503, UNAVAILABLE)
