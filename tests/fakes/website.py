"""A fake website on 127.0.0.1 for `candor sync`: a help centre of a few dozen pages with a sitemap
index, nested links, a robots.txt that disallows /private/, ETags, a page that answers 500, and
pages a test can change, remove or make fail. It runs on its own thread (`BackgroundLoop`) so both
the test's own loop and a `candor sync` process can use it, and counts what it served.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web

from tests.fakes.background import BackgroundLoop

TOPICS = [
    ("returns", "Returns", "Unworn shoes can be returned within 45 days of delivery for a full refund."),
    ("shipping", "Shipping", "Standard shipping to Portugal takes 3 business days and costs 4 euros."),
    ("warranty", "Warranty", "Every Trailrunner boot carries a two-year warranty against sole separation."),
    ("sizes", "Sizes", "Our sizes follow the EU scale; half sizes are available from 38 to 46."),
    ("payment", "Payment", "We accept Visa, Mastercard and MB Way; payment is taken when the order ships."),
]


def _page(title: str, body: str, links: list[str]) -> str:
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body>"
        f"<header><p>Acme Shoes help centre</p></header>"
        f"<nav><ul>{nav}</ul><p>Navigation boilerplate mentions the cookie jar banana.</p></nav>"
        f"<main><h1>{title}</h1>{body}</main>"
        f"<aside><p>Related: the cookie jar banana sidebar.</p></aside>"
        f"<footer><p>Copyright Acme. Footer boilerplate cookie jar banana.</p></footer></body></html>"
    )


@dataclass
class FakeWebsite:
    pages: dict[str, str] = field(default_factory=dict)
    """Path → HTML (only these answer 200)."""
    failing: set[str] = field(default_factory=set)
    """Paths that answer 500."""
    full: Counter[str] = field(default_factory=Counter)
    """200 responses with a body, per path."""
    not_modified: Counter[str] = field(default_factory=Counter)
    """304 responses, per path."""
    requested: Counter[str] = field(default_factory=Counter)
    sitemap_status: int = 200
    throttled: Counter[str] = field(default_factory=Counter)
    """Paths that answer 429 (Retry-After: 0) this many more times before they answer."""
    binary: dict[str, bytes] = field(default_factory=dict)
    """Paths served as image/png."""
    held: set[str] = field(default_factory=set)
    """Paths whose answer waits while they are in here (a test sees a sync in progress)."""
    host: str = "127.0.0.1"
    port: int = 0
    _runner: web.AppRunner | None = None
    _loop: BackgroundLoop = field(default_factory=lambda: BackgroundLoop("fake-website"))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def build(self) -> None:
        """The site: a home page, five sections of five articles each, a private area and a broken page."""
        sections = [f"/help/{slug}/" for slug, _, _ in TOPICS]
        self.pages["/"] = _page("Acme Shoes help", "<p>Welcome to the Acme Shoes help centre.</p>", sections)
        for slug, title, fact in TOPICS:
            articles = [f"/help/{slug}/article-{n}" for n in range(1, 6)]
            self.pages[f"/help/{slug}/"] = _page(f"{title} overview", f"<p>{title} questions, answered.</p>", articles)
            for n, article in enumerate(articles, 1):
                text = fact if n == 1 else f"{title} note {n}: article {n} of the {title.lower()} section."
                self.pages[article] = _page(f"{title} article {n}", f"<p>{text}</p>", ["/", f"/help/{slug}/"])
        # reached only through a link from the shipping section's third article (not in the sitemap)
        self.pages["/help/shipping/article-3"] = _page(
            "Shipping article 3", "<p>Express shipping arrives the next day.</p>", ["/help/shipping/deep/customs"]
        )
        self.pages["/help/shipping/deep/customs"] = _page(
            "Customs", "<p>Orders to Switzerland pay customs duties of 8 percent on delivery.</p>", []
        )
        self.pages["/private/salaries"] = _page("Salaries", "<p>Secret salary bands.</p>", [])
        self.pages["/help/broken"] = _page("Broken", "<p>This page fails.</p>", [])
        self.pages["/"] = self.pages["/"].replace(
            "</main>", '<a href="/private/salaries">x</a><a href="/help/broken">b</a></main>'
        )
        self.failing.add("/help/broken")

    def sitemap_paths(self) -> list[str]:
        return sorted(p for p in self.pages if p != "/help/shipping/deep/customs")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.requested[path] += 1
        while path in self.held:  # noqa: ASYNC110 (the test's thread edits the set: no event of this loop to share)
            await asyncio.sleep(0.02)
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n", content_type="text/plain")
        if path == "/sitemap.xml":
            if self.sitemap_status != 200:
                return web.Response(status=self.sitemap_status, text="down")
            body = (
                '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<sitemap><loc>{self.url}/sitemap-pages.xml</loc></sitemap></sitemapindex>"
            )
            return web.Response(text=body, content_type="application/xml")
        if path == "/sitemap-pages.xml":
            urls = "".join(f"<url><loc>{self.url}{p}</loc></url>" for p in self.sitemap_paths())
            body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
            return web.Response(text=body, content_type="application/xml")
        if self.throttled[path] > 0:
            self.throttled[path] -= 1
            return web.Response(status=429, headers={"Retry-After": "0"}, text="slow down")
        if path in self.binary:
            self.full[path] += 1
            return web.Response(body=self.binary[path], content_type="image/png")
        if path in self.failing:
            return web.Response(status=500, text="internal error")
        html = self.pages.get(path)
        if html is None:
            return web.Response(status=404, text="not found")
        etag = '"' + hashlib.sha256(html.encode()).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == etag:
            self.not_modified[path] += 1
            return web.Response(status=304, headers={"ETag": etag})
        self.full[path] += 1
        return web.Response(text=html, content_type="text/html", headers={"ETag": etag})

    def reset_counts(self) -> None:
        self.full.clear()
        self.not_modified.clear()
        self.requested.clear()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> FakeWebsite:
        self.build()
        self._loop.start(self._start())
        return self

    def stop(self) -> None:
        self._loop.stop(self._stop())
