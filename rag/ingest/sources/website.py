"""Websites: help centres and public docs, read through their sitemap and same-site links.

The listing is the configured start pages plus every page of the sitemap (a sitemap index is
followed), on the same site, allowed by robots.txt. Fetching a page follows its same-site links
(the sync visits each once, within `max_pages`), at most `requests_per_second` (or robots.txt's
Crawl-delay, if slower). On a re-sync each page is asked for with `If-None-Match` / `If-Modified-Since`:
a 304 downloads nothing. A 429 is waited out (its Retry-After, at most `max_wait_seconds`, twice);
a 5xx, a timeout, a page larger than `max_bytes` (20 MB) or not HTML, Markdown, text or PDF is one
skipped page. A sitemap or robots.txt that cannot be read fails the listing (`SourceError`):
nothing stored is removed. A `user:password@` in a URL is never written to a log or an error.

"The site" is the origins (scheme, host, port) of the start pages and the sitemap, plus any the
source lists under `other_sites`: a sitemap, a sitemap index's entry, a link, robots.txt or a
redirect anywhere else is not fetched (a redirect is checked before it is followed, so nothing of
an off-site answer is downloaded), and the source's `authorization` goes to its own origins only,
never to `other_sites`. Every request goes through the guarded client (`outbound.Outbound`,
`guard`), so no page of the site can lead the sync to an internal address either.

Boilerplate goes before the page is stored: navigation, header, footer, aside, script and style;
when the page has a `<main>` (or `<article>`s), only that is kept. The stored bytes are that cleaned
HTML, so a changed footer does not re-index every page.
"""

from __future__ import annotations

import asyncio
import logging
import time
import urllib.robotparser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

import aiohttp
from bs4 import BeautifulSoup, Tag
from lxml import etree

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import Fetched, Format, Gone, ItemState, NotModified, Outcome, SourceDocument
from rag.ingest.sources.common import USER_AGENT, escape_html
from rag.ingest.sources.guard import Network, origin, redact
from rag.ingest.sources.outbound import Outbound
from rag.ingest.sources.retry_after import http_date, retry_after

log = logging.getLogger("candor.sync.website")

_BOILERPLATE = ("nav", "header", "footer", "aside", "script", "style", "noscript", "template", "form", "iframe")
_BOILERPLATE_ROLES = ("navigation", "banner", "contentinfo", "search", "complementary")
_NOT_PAGES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".css", ".js", ".json", ".xml", ".zip", ".gz"}
    | {".tar", ".mp4", ".mp3", ".woff", ".woff2", ".ttf", ".exe"}
)
_FORMATS: Mapping[str, Format] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "text/plain": "txt",
    "application/pdf": "pdf",
}
_MAX_SITEMAPS = 50
_RETRIES_429 = 2


@dataclass(frozen=True, slots=True)
class WebsiteOptions:
    start_urls: tuple[str, ...]
    sitemap: str | None
    max_pages: int = 500
    requests_per_second: float = 2.0
    timeout_seconds: float = 20.0
    max_wait_seconds: float = 60.0
    max_bytes: int = 20_000_000
    other_sites: tuple[str, ...] = ()
    """Origins beyond the start pages' and the sitemap's that pages, sitemaps and redirects may be on."""

    @classmethod
    def parse(cls, options: Mapping[str, Any], where: str) -> WebsiteOptions:
        known = {
            "start_urls", "sitemap", "other_sites", "max_pages", "requests_per_second", "timeout_seconds",
            "max_wait_seconds", "max_bytes",
        }  # fmt: skip
        unknown = sorted(set(options) - known)
        if unknown:
            raise SyncError(f"{where}: unknown website settings {unknown} (known: {sorted(known)})")
        starts = options.get("start_urls") or []
        if isinstance(starts, str):
            starts = [starts]
        sitemap = options.get("sitemap")
        urls = [*starts, *([sitemap] if sitemap else [])]
        if not urls:
            raise SyncError(f"{where}: a website needs `start_urls` or a `sitemap`")
        others = options.get("other_sites") or []
        if isinstance(others, str) or not isinstance(others, list):
            raise SyncError(f"{where}: `other_sites` lists sites' URLs, like [https://docs.example.com]")
        for url in (*urls, *others):
            if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
                raise SyncError(f"{where}: {redact(repr(url))} is not an http(s) URL")
        try:
            made = cls(
                start_urls=tuple(normalise(u) for u in starts),
                sitemap=sitemap,
                max_pages=int(options.get("max_pages", 500)),
                requests_per_second=float(options.get("requests_per_second", 2.0)),
                timeout_seconds=float(options.get("timeout_seconds", 20.0)),
                max_wait_seconds=float(options.get("max_wait_seconds", 60.0)),
                max_bytes=int(options.get("max_bytes", 20_000_000)),
                other_sites=tuple(sorted({_site(u) for u in others})),
            )
        except (TypeError, ValueError) as exc:
            raise SyncError(f"{where}: a website setting is not a number: {exc}") from exc
        if made.max_pages < 1 or made.requests_per_second <= 0 or made.timeout_seconds <= 0 or made.max_bytes < 1:
            raise SyncError(f"{where}: max_pages, requests_per_second, timeout_seconds and max_bytes must be positive")
        return made

    @property
    def own_sites(self) -> frozenset[str]:
        """The origins of the start pages and the sitemap: the only ones credentials go to."""
        return frozenset(_site(u) for u in (*self.start_urls, *([self.sitemap] if self.sitemap else [])))

    @property
    def sites(self) -> frozenset[str]:
        """The origins (scheme, host, port) pages, sitemaps and redirects may be on."""
        return self.own_sites | frozenset(self.other_sites)


class Website:
    """A `Connector` for one website."""

    kind = "website"

    def __init__(
        self,
        options: WebsiteOptions,
        *,
        access: Sequence[str] = (),
        credentials: Mapping[str, str] | None = None,
        user_agent: str = USER_AGENT,
        network: Network | None = None,
    ) -> None:
        """`network`: how the site is reached (default: the guard, no internal addresses)."""
        self.options = options
        self.access = tuple(access)
        self.max_documents = options.max_pages
        self.not_synced: Mapping[str, int] = {}
        """Nothing is left out by kind: what this source lists, Candor reads."""
        self.user_agent = user_agent
        given = credentials or {}
        secret = {"Authorization": given["authorization"]} if "authorization" in given else {}
        self._client = Outbound(
            network or Network(),
            owners=options.own_sites,
            reach=options.sites,
            headers={"User-Agent": user_agent},
            credentials=secret,
            timeout_seconds=options.timeout_seconds,
            max_bytes=options.max_bytes,
        )
        self._robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self._interval = 1.0 / options.requests_per_second
        self._next_request = 0.0

    # --- the Connector Protocol ------------------------------------------------------------

    async def listing(self) -> Sequence[SourceDocument]:
        for site in sorted(self.options.sites):
            await self._load_robots(site)
        found: dict[str, SourceDocument] = {}
        for url in self.options.start_urls:
            found.setdefault(url, self._document(url))
        if self.options.sitemap:
            for url, modified in await self._sitemap_pages(self.options.sitemap):
                if self._allowed(url):
                    found.setdefault(url, self._document(url, modified))
        return [doc for doc in found.values() if self._allowed(doc.id)]

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        headers: dict[str, str] = {}
        if previous is not None:
            if previous.values.get("etag"):
                headers["If-None-Match"] = str(previous.values["etag"])
            if previous.values.get("last_modified"):
                headers["If-Modified-Since"] = str(previous.values["last_modified"])
        status, response_headers, body, final_url = await self._get(document.url, headers)
        if status == 304:
            return NotModified(document)
        if status in (404, 410):
            return Gone(document, f"the site answered {status}")
        if status != 200:
            raise ItemError(f"the site answered {status}")
        kind = response_headers.get("Content-Type", "").split(";")[0].strip().lower()
        page_format = _FORMATS.get(kind)
        if page_format is None:
            raise ItemError(f"not a page Candor reads (Content-Type {kind or 'missing'!r})")
        modified = http_date(response_headers.get("Last-Modified")) or document.modified
        state = {"etag": response_headers.get("ETag"), "last_modified": response_headers.get("Last-Modified")}
        leads: list[SourceDocument] = []
        if page_format == "html":
            try:
                body, links = clean_page(body, final_url)
            except (ValueError, TypeError) as exc:
                raise ItemError(f"the page could not be read as HTML ({exc})") from exc
            leads = [self._document(link) for link in links if self._follow(link)]
        return Fetched(
            SourceDocument(document.id, document.url, document.title, modified, document.access),
            body,
            page_format,
            {k: v for k, v in state.items() if v},
            leads,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- pieces ----------------------------------------------------------------------------

    def _document(self, url: str, modified: datetime | None = None) -> SourceDocument:
        """A page as the listing names it. A site says nothing of who may read a page: every page, listed
        or led to, has the source's `access`, so a sync past its budget applies that to every stored page."""
        parts = urlsplit(url)
        title = parts.path.rstrip("/").rsplit("/", 1)[-1] or parts.netloc
        return SourceDocument(url, url, title, modified, self.access)

    def _follow(self, url: str) -> bool:
        path = urlsplit(url).path.lower()
        dot = path.rfind(".")
        if dot > path.rfind("/") and path[dot:] in _NOT_PAGES:
            return False
        return _site(url) in self.options.sites and self._allowed(url)

    def _allowed(self, url: str) -> bool:
        robots = self._robots.get(_site(url))
        return robots is None or robots.can_fetch(self.user_agent, url)

    async def _load_robots(self, site: str) -> None:
        """robots.txt of `site`: a 4xx means no rules; a 5xx or no answer fails the listing (RFC 9309
        says to assume everything is disallowed, and a sync then must not delete what it cannot see)."""
        try:
            status, _, body, _ = await self._get(f"{site}/robots.txt", {})
        except ItemError as exc:
            raise SourceError(redact(f"robots.txt of {site} could not be read: {exc}")) from exc
        parser = urllib.robotparser.RobotFileParser()
        if status >= 500 or status == 429:
            raise SourceError(redact(f"robots.txt of {site} could not be read: the site answered {status}"))
        parser.parse(body.decode("utf-8", "replace").splitlines() if status == 200 else [])
        delay = parser.crawl_delay(self.user_agent)
        if delay:
            self._interval = max(self._interval, float(delay))
        self._robots[site] = parser

    async def _sitemap_pages(self, first: str) -> list[tuple[str, datetime | None]]:
        pages: list[tuple[str, datetime | None]] = []
        queue, read = [first], 0
        while queue and read < _MAX_SITEMAPS:
            url = queue.pop(0)
            read += 1
            try:
                status, _, body, _ = await self._get(url, {})
            except ItemError as exc:
                raise SourceError(redact(f"the sitemap {url} could not be read: {exc}")) from exc
            if status != 200:
                raise SourceError(redact(f"the sitemap {url} could not be read: the site answered {status}"))
            try:
                root = etree.fromstring(body, parser=etree.XMLParser(resolve_entities=False, no_network=True))
            except etree.XMLSyntaxError as exc:
                raise SourceError(redact(f"the sitemap {url} is not valid XML: {exc}")) from exc
            for entry in root:
                if not isinstance(entry.tag, str):
                    continue
                loc = _child_text(entry, "loc")
                if not loc:
                    continue
                if etree.QName(root).localname == "sitemapindex":
                    if _site(loc) in self.options.sites:
                        queue.append(loc)
                    else:  # not fetched: nothing of the source's goes off the site, not even a request
                        log.warning("the sitemap index %s lists %s, off the site: not read", redact(url), redact(loc))
                elif _site(loc) in self.options.sites:
                    pages.append((normalise(loc), _w3c_date(_child_text(entry, "lastmod"))))
        return pages

    async def _get(self, url: str, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes, str]:
        """One GET at the rate limit through the guarded client, a 429 waited out; (status, headers,
        body, final URL). `ItemError` when the site does not answer in time, the connection fails,
        the guard refuses the address, a redirect leaves the site or the body is too large."""
        for attempt in range(_RETRIES_429 + 1):
            await self._pace()
            try:
                reply = await self._client.get(url, headers=headers)
            except TimeoutError as exc:
                raise ItemError(f"no answer within {self.options.timeout_seconds:g} s") from exc
            except aiohttp.ClientError as exc:
                raise ItemError(redact(f"could not be fetched ({type(exc).__name__}: {exc})")[:300]) from exc
            if reply.status == 429 and attempt < _RETRIES_429:
                wait = retry_after(reply.headers.get("Retry-After"), self.options.max_wait_seconds)
                log.info("%s: 429, waiting %.1f s", redact(url), wait)
                await asyncio.sleep(wait)
                continue
            return reply.status, reply.headers, reply.body if reply.status == 200 else b"", reply.url
        raise ItemError(f"the site kept answering 429 after {_RETRIES_429} waits")  # pragma: no cover

    async def _pace(self) -> None:
        now = time.monotonic()
        wait = self._next_request - now
        if wait > 0:
            await asyncio.sleep(wait)
        self._next_request = max(now, self._next_request) + self._interval


def clean_page(data: bytes, url: str) -> tuple[bytes, list[str]]:
    """The page with its boilerplate gone (its `<main>` or `<article>`s alone when it has them), as
    UTF-8 HTML, and its links (normalised, absolute, in order, each once), read before any is dropped."""
    soup = BeautifulSoup(data, "lxml")
    base = soup.find("base", href=True)
    base_url = urljoin(url, str(base["href"])) if isinstance(base, Tag) else url
    links: dict[str, None] = {}
    for anchor in soup.find_all("a", href=True):
        href = str(anchor["href"]).strip()
        if href.startswith(("mailto:", "tel:", "javascript:", "#")):
            continue
        absolute = urljoin(base_url, href)
        if urlsplit(absolute).scheme in ("http", "https"):
            links.setdefault(normalise(absolute), None)
    head = soup.head
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    metas = [str(m) for m in (head.find_all("meta") if head else []) if m.get("name") or m.get("property")]
    for element in soup.find_all(True, attrs={"role": list(_BOILERPLATE_ROLES)}):
        element.decompose()
    for element in soup.find_all(list(_BOILERPLATE)):
        inside = element.name == "header" and element.find_parent(["article", "main", "section"])
        if not inside:
            element.decompose()
    main = soup.find("main")
    parts = [main] if main is not None else soup.find_all("article")
    if not parts:
        parts = [soup.body] if soup.body is not None else [soup]
    body = "".join(str(part) for part in parts if part is not None)
    page = (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{escape_html(title)}</title>{"".join(metas)}'
        f"</head><body>{body}</body></html>"
    )
    return page.encode("utf-8"), list(links)


def normalise(url: str) -> str:
    """A page's stable id: no fragment, lower-case scheme and host, no default port, `/` for no path."""
    url, _ = urldefrag(url.strip())
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and (parts.scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path or "/", parts.query, ""))


def _site(url: str) -> str:
    return origin(url)


def _child_text(entry: Any, name: str) -> str:
    for child in entry:
        if isinstance(child.tag, str) and etree.QName(child).localname == name:
            return (child.text or "").strip()
    return ""


def _w3c_date(value: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
