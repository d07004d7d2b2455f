"""Issue 37, "pages that arrive in pieces are stored truncated, silently": every connector reads an
answer to its end, and refuses one over its `max_bytes`, loudly, with its size.

Each connector talks to its usual fake through `Trickle`, a real aiohttp server on 127.0.0.1 that
forwards every request to the fake and streams the answer back in 8 KB pieces a few milliseconds
apart, as a site far away delivers it (a read that takes what happens to be buffered gets the first
piece or two). A document of each fake is made 300 KB, then 3 MB: both must arrive whole, every
line of them; with `max_bytes: 2000000` the 3 MB one is refused with a line naming its size. The
website case also runs `Candor.sync`, so the stored page and the skipped line are checked end to end.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from rag.errors import ItemError
from rag.ingest.sources.base import Fetched, SourceDocument
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.registry import connector_for
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence
from tests.fakes.gdrive import FakeDrive
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, TENANT, FakeGraph
from tests.fakes.notion import TOKEN as NOTION_TOKEN
from tests.fakes.notion import FakeNotion
from tests.fakes.website import FakeWebsite

PIECE = 8 * 1024
PAUSE = 0.002
LIMIT = 2_000_000
_UNSENT = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
_UNRETURNED = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})


@dataclass
class Trickle:
    """A reverse proxy on 127.0.0.1 in front of `upstream` (`http://127.0.0.1:<port>`): each answer
    streamed back in `PIECE`s, `PAUSE` apart, with the fake's address in it (links, redirects)
    replaced by the proxy's own, so every request comes back through it."""

    upstream: str
    url: str = ""
    largest: int = 0
    """Pieces of the largest answer so far."""
    _runner: web.AppRunner | None = None
    _client: aiohttp.ClientSession | None = None

    async def start(self) -> Trickle:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        self._client = aiohttp.ClientSession(auto_decompress=False)
        return self

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._client is not None
        sent = {k: v for k, v in request.headers.items() if k.lower() not in _UNSENT}
        async with self._client.request(
            request.method, self.upstream + request.path_qs, headers=sent, data=await request.read(),
            allow_redirects=False,
        ) as answer:  # fmt: skip
            body = (await answer.read()).replace(self.upstream.encode(), self.url.encode())
            headers = {
                k: v.replace(self.upstream, self.url) for k, v in answer.headers.items() if k.lower() not in _UNRETURNED
            }
            status = answer.status
        if status in (204, 304) or not body:
            return web.Response(status=status, headers=headers)
        response = web.StreamResponse(status=status, headers=headers)
        response.enable_chunked_encoding()
        await response.prepare(request)
        pieces = range(0, len(body), PIECE)
        self.largest = max(self.largest, len(pieces))
        for start in pieces:
            await response.write(body[start : start + PIECE])
            await asyncio.sleep(PAUSE)
        await response.write_eof()
        return response


def lines(size: int, tag: str) -> list[str]:
    """About `size` bytes of numbered lines, each naming how many there are."""
    count = size // 100
    return [f"{tag} line {n:06d} of {count:06d}: " + "x" * 70 for n in range(1, count + 1)]


def whole(data: bytes, expected: list[str]) -> bool:
    """Every line, once, in order: the answer arrived to its end."""
    found = re.findall(rb"\w+ line \d{6} of \d{6}", data)
    return found == [line.split(":")[0].encode() for line in expected]


@dataclass
class Case:
    """One connector against its fake, behind the proxy: the source's entry, and how to make one of
    its documents hold `lines` (and find it in the listing)."""

    kind: str
    upstream: str
    """The fake's own address, `http://127.0.0.1:<port>`."""
    entry: Callable[[str], dict[str, Any]]
    """The source's settings, given the proxy's URL."""
    fill: Callable[[list[str]], None]
    pick: Callable[[Sequence[SourceDocument]], SourceDocument]
    lead: Callable[[Sequence[SourceDocument]], SourceDocument] | None = None
    """When the document is found by fetching the picked one (a Notion page's PDF): which lead it is."""
    environ: dict[str, str] = field(default_factory=dict)
    stop: Callable[[], None] = lambda: None


def website_case() -> Case:
    site = FakeWebsite().start()

    def fill(text: list[str]) -> None:
        paragraphs = "".join(f"<p>{line}</p>" for line in text)
        site.pages["/help/big"] = (
            f"<!doctype html><html><head><title>Big</title></head><body><main>{paragraphs}</main></body></html>"
        )

    return Case(
        "website",
        site.url,
        entry=lambda url: {"start_urls": [f"{url}/help/big"], "requests_per_second": 1000},
        fill=fill,
        pick=lambda docs: next(d for d in docs if d.id.endswith("/help/big")),
        stop=site.stop,
    )


def confluence_case() -> Case:
    wiki = FakeConfluence().start()
    page = wiki.find("Deployments 2")

    def fill(text: list[str]) -> None:
        page.body = "".join(f"<p>{line}</p>" for line in text)
        page.version += 1

    return Case(
        "confluence",
        wiki.url.removesuffix("/wiki"),
        entry=lambda url: {
            "base_url": f"{url}/wiki",
            "spaces": ["ENG"],
            "credentials": {"email": "W_EMAIL", "token": "W_TOKEN"},
        },
        fill=fill,
        pick=lambda docs: next(d for d in docs if d.title == "Deployments 2"),
        environ={"W_EMAIL": EMAIL, "W_TOKEN": TOKEN},
        stop=wiki.stop,
    )


def sharepoint_case(ca_bundle: Callable[[FakeGraph], None]) -> Case:
    graph = FakeGraph().start()
    ca_bundle(graph)
    node = graph.find("Audit notes.txt")

    def fill(text: list[str]) -> None:
        node.text = text
        node.version += 1

    return Case(
        "sharepoint",
        f"http://127.0.0.1:{graph.port}",
        entry=lambda url: {
            "sites": [f"{graph.hostname}:/sites/Finance"],
            "libraries": ["Documents"],
            "graph_url": f"{url}/v1.0",
            "authority": graph.authority,
            "permissions": {
                "site_groups": {
                    "Finance Members": ["finance"],
                    "Finance Owners": ["finance"],
                    "Finance Visitors": ["staff"],
                }
            },
            "credentials": {"tenant_id": "SP_T", "client_id": "SP_C", "client_secret": "SP_S"},
        },
        fill=fill,
        pick=lambda docs: next(d for d in docs if d.title == "Audit notes.txt"),
        environ={"SP_T": TENANT, "SP_C": CLIENT_ID, "SP_S": CLIENT_SECRET},
        stop=graph.stop,
    )


def gdrive_case() -> Case:
    drive = FakeDrive().start()
    file = drive.find("Macros.md")

    def fill(text: list[str]) -> None:
        file.content = "\n".join(text).encode()
        file.version += 1

    return Case(
        "gdrive",
        drive.url,
        entry=lambda url: {
            "api_url": url,
            "drives": [drive.drive],
            "permissions": {"domains": {"example.com": ["staff"]}, "groups": {"support-team@example.com": ["support"]}},
            "credentials": {"service_account": "GSA_KEY"},
        },
        fill=fill,
        pick=lambda docs: next(d for d in docs if d.id == f"gdrive:{file.id}"),
        environ={"GSA_KEY": drive.key_json()},
        stop=drive.stop,
    )


def notion_case() -> Case:
    notion = FakeNotion().start()
    block = next(b for b in notion.find("Rollback runbook").blocks if b.type == "pdf")

    def fill(text: list[str]) -> None:
        block.data["_bytes"] = b"%PDF-1.4\n%" + "\n%".join(text).encode()
        block.edited += 1

    return Case(
        "notion",
        notion.url,
        entry=lambda url: {
            "base_url": url,
            "access": [],
            "requests_per_second": 500,
            "credentials": {"token": "N_TOKEN"},
        },
        fill=fill,
        pick=lambda docs: next(d for d in docs if d.title == "Rollback runbook"),
        lead=lambda docs: next(d for d in docs if d.id == f"notion:file:{block.id}"),
        environ={"N_TOKEN": NOTION_TOKEN},
        stop=notion.stop,
    )


@pytest.fixture(params=["website", "confluence", "sharepoint", "gdrive", "notion"])
def case(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Case]:
    def trust(graph: FakeGraph) -> None:  # MSAL (requests) trusts the fake sign-in's CA
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", graph.ca_bundle(tmp_path))

    cases: dict[str, Callable[[], Case]] = {
        "website": website_case,
        "confluence": confluence_case,
        "sharepoint": lambda: sharepoint_case(trust),
        "gdrive": gdrive_case,
        "notion": notion_case,
    }
    made = cases[request.param]()
    yield made
    made.stop()


@pytest.fixture
async def proxy(case: Case) -> AsyncIterator[Trickle]:
    started = await Trickle(case.upstream).start()
    yield started
    await started.stop()


async def fetch(case: Case, proxy: Trickle, **more: Any) -> Fetched:
    """The case's document, fetched afresh by a connector made from the sources file's entry."""
    entry = {"name": "big", "kind": case.kind, "allow_private_network": True, **case.entry(proxy.url), **more}
    [source] = parse_sources([entry])
    connector = connector_for(source, case.environ)
    try:
        document = case.pick(await connector.listing())
        if case.lead is not None:
            page = await connector.fetch(document, None)
            assert isinstance(page, Fetched), page
            document = case.lead(page.leads_to)
        fetched = await connector.fetch(document, None)
    finally:
        await connector.aclose()
    assert isinstance(fetched, Fetched), fetched
    return fetched


def refused_size(message: str) -> int:
    """The size a refusal names (`3,000,123 bytes, larger than the limit of 2,000,000 bytes`)."""
    found = re.search(r"([\d,]+) bytes, larger than the limit of 2,000,000 bytes", message)
    assert found is not None, message
    return int(found[1].replace(",", ""))


async def test_an_answer_that_arrives_in_pieces_is_read_whole_and_one_over_the_limit_is_refused_with_its_size(
    case: Case, proxy: Trickle
) -> None:
    for size, tag in ((300_000, "small"), (3_000_000, "large")):
        text = lines(size, tag)
        case.fill(text)
        fetched = await fetch(case, proxy)
        assert whole(fetched.data, text), f"{case.kind}: the {tag} document arrived cut ({len(fetched.data)} bytes)"
    assert proxy.largest >= 3_000_000 // PIECE  # it did arrive in pieces
    with pytest.raises(ItemError) as refused:
        await fetch(case, proxy, max_bytes=LIMIT)
    assert refused_size(str(refused.value)) >= 2_999_000


async def test_candor_sync_stores_a_page_that_arrives_in_pieces_whole_and_names_the_one_too_large(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    site = FakeWebsite().start()
    proxy = await Trickle(site.url).start()
    try:
        small, large = lines(300_000, "small"), lines(3_000_000, "large")
        for path, text in (("/help/small", small), ("/help/large", large)):
            paragraphs = "".join(f"<p>{line}.</p>" for line in text)
            site.pages[path] = f"<html><head><title>{path}</title></head><body><main>{paragraphs}</main></body></html>"
        config = tmp_path / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: pieces-{kb.name}\n    kind: website\n    kb: {kb.name}\n"
            f"    allow_private_network: true\n    max_bytes: {LIMIT}\n    requests_per_second: 1000\n"
            f"    start_urls: [{proxy.url}/help/small, {proxy.url}/help/large]\n"
        )
        [report] = await candor.sync(config)
    finally:
        await proxy.stop()
        site.stop()
    assert report.added == 1 and report.fetched == 1, report
    [(page, reason)] = report.skipped
    assert page == f"{proxy.url}/help/large" and refused_size(reason) == len(site.pages["/help/large"].encode())
    for line in (small[0], small[len(small) // 2], small[-1]):
        marker = line.split(":")[0]
        [(found,)] = await candor.store.fetch_all(
            "SELECT count(*) FROM chunks WHERE kb_id = %(kb)s AND text LIKE %(m)s", {"kb": kb.id, "m": f"%{marker}%"}
        )
        assert found == 1, f"{marker} is not stored"
