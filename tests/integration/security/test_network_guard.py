"""Issue 37, "the website connector can be aimed at the inside": every request of a source goes
through the guarded client (rag/ingest/sources/outbound.py, guard.py).

Real servers on 127.0.0.x answer; a test resolver maps made-up names to addresses (169.254.169.254,
10.0.0.1, 127.0.0.1) without any DNS query, and a test socket factory, called for every connection
attempt the guard lets through, records it and refuses any outside 127.0.0.0/8: no test here sends
a packet off the loopback network, and each asserts which connections were attempted.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from aiohappyeyeballs import AddrInfoType
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import Fetched, SourceDocument
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.guard import Network, origin, redact, refusal
from rag.ingest.sources.registry import connector_for
from rag.ingest.sources.website import Website, WebsiteOptions
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence
from tests.fakes.notion import TOKEN as NOTION_TOKEN
from tests.fakes.notion import FakeNotion

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
SECRET = "Bearer site-secret-7f3e"


@dataclass
class Connections:
    """The test's socket factory: every attempt recorded, any outside 127.0.0.0/8 refused."""

    attempts: list[str] = field(default_factory=list)

    def __call__(self, addr_info: AddrInfoType) -> socket.socket:
        family, kind, proto, _, address = addr_info
        self.attempts.append(str(address[0]))
        if ipaddress.ip_address(address[0]) not in LOOPBACK:
            raise OSError(f"the test refuses a connection to {address[0]}")
        return socket.socket(family, kind, proto)

    def outside(self) -> list[str]:
        return [a for a in self.attempts if ipaddress.ip_address(a) not in LOOPBACK]


class Names(AbstractResolver):
    """The test's resolver: made-up names to fixed addresses, each lookup recorded, no DNS query."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        if host not in self.table:
            raise OSError(f"{host} is not a name this test knows")
        return [{"hostname": host, "host": self.table[host], "port": port, "family": socket.AF_INET, "proto": 0,
                 "flags": socket.AI_NUMERICHOST}]  # fmt: skip

    async def close(self) -> None:
        return None


@dataclass
class Server:
    """A server on one loopback address that records each request's path and Authorization."""

    answer: Callable[[web.Request], Awaitable[web.StreamResponse]]
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.path, request.headers.get("Authorization")))
        return await self.answer(request)


@asynccontextmanager
async def serving(server: Server, host: str) -> AsyncIterator[Server]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, 0).start()
    server.url = f"http://{host}:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


def page(text: str) -> web.Response:
    return web.Response(text=f"<html><body><main><p>{text}</p></main></body></html>", content_type="text/html")


@dataclass
class Site:
    """A help site: a sitemap index (its own page sitemap plus `elsewhere`), two pages, redirects."""

    elsewhere: list[str] = field(default_factory=list)
    """More `<loc>`s of the sitemap index."""
    redirects: dict[str, str] = field(default_factory=dict)
    """/go/<name> answers a 302 to this."""
    sitemap_status: int = 200
    server: Server | None = None

    async def answer(self, request: web.Request) -> web.StreamResponse:
        assert self.server is not None
        own = self.server.url
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/sitemap.xml":
            if self.sitemap_status != 200:
                return web.Response(status=self.sitemap_status)
            locs = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in [f"{own}/pages.xml", *self.elsewhere])
            return web.Response(text=f"<sitemapindex>{locs}</sitemapindex>", content_type="application/xml")
        if request.path == "/pages.xml":
            urls = "".join(f"<url><loc>{own}/{p}</loc></url>" for p in ("a", "b"))
            return web.Response(text=f"<urlset>{urls}</urlset>", content_type="application/xml")
        if request.path.startswith("/go/"):
            raise web.HTTPFound(self.redirects[request.path.removeprefix("/go/")])
        if request.path in ("/a", "/b"):
            return page(f"Page {request.path[1:]} of the help site.")
        return web.Response(status=404)


async def recorder_answer(request: web.Request) -> web.StreamResponse:
    """What an attacker's server would gladly answer: a sitemap, or a page."""
    if request.path.endswith(".xml"):
        return web.Response(text="<urlset><url><loc>http://127.0.0.3/x</loc></url></urlset>")
    return page("Planted text from elsewhere.")


@pytest.fixture
async def site() -> AsyncIterator[tuple[Site, Server]]:
    made = Site()
    made.server = Server(made.answer)
    async with serving(made.server, "127.0.0.1") as server:
        yield made, server


@pytest.fixture
async def recorder() -> AsyncIterator[Server]:
    async with serving(Server(recorder_answer), "127.0.0.3") as server:
        yield server


def website(site: Server, network: Network, *, start: tuple[str, ...] = (), **more: object) -> Website:
    options = WebsiteOptions.parse(
        {"sitemap": f"{site.url}/sitemap.xml", "start_urls": list(start), "requests_per_second": 1000, **more}, "t"
    )
    return Website(options, credentials={"authorization": SECRET}, network=network)


async def test_a_sitemap_index_or_a_redirect_off_the_site_reaches_nothing_and_sends_no_secret(
    site: tuple[Site, Server], recorder: Server
) -> None:
    fake, server = site
    fake.elsewhere = [f"{recorder.url}/stolen.xml"]
    fake.redirects["away"] = f"{recorder.url}/page"
    connections = Connections()
    source = website(server, Network(allow_private=True, socket_factory=connections), start=(f"{server.url}/go/away",))
    try:
        listed = {doc.id for doc in await source.listing()}
        assert listed == {f"{server.url}/go/away", f"{server.url}/a", f"{server.url}/b"}
        with pytest.raises(ItemError, match=r"redirected off the site, to http://127\.0\.0\.3:\d+/page"):
            await source.fetch(next(d for d in await source.listing() if d.id.endswith("/go/away")), None)
    finally:
        await source.aclose()
    assert recorder.seen == []  # not a request, so not a header either
    assert set(connections.attempts) == {"127.0.0.1"}
    assert {auth for _, auth in server.seen} == {SECRET}  # the site itself does get its credentials


async def test_a_listed_other_site_is_read_but_never_gets_the_credentials(
    site: tuple[Site, Server], recorder: Server
) -> None:
    fake, server = site
    fake.elsewhere = [f"{recorder.url}/more.xml"]
    fake.redirects["away"] = f"{recorder.url}/moved"
    source = website(server, Network(allow_private=True), start=(f"{server.url}/go/away",), other_sites=[recorder.url])
    try:
        documents = {doc.id: doc for doc in await source.listing()}
        fetched = await source.fetch(documents[f"{server.url}/go/away"], None)
    finally:
        await source.aclose()
    assert isinstance(fetched, Fetched) and b"Planted text from elsewhere." in fetched.data
    assert recorder.seen == [("/robots.txt", None), ("/more.xml", None), ("/moved", None)]
    assert {auth for _, auth in server.seen} == {SECRET}


@pytest.mark.parametrize(
    ("name", "address", "kind"),
    [("metadata.test", "169.254.169.254", "link-local"), ("intranet.test", "10.0.0.1", "private")],
)
async def test_a_redirect_to_a_name_that_resolves_inside_is_refused_before_any_connection(
    site: tuple[Site, Server], name: str, address: str, kind: str
) -> None:
    fake, server = site
    port = server.url.rsplit(":", 1)[1]
    fake.redirects["inside"] = f"http://{name}:{port}/latest/meta-data/"
    fake.redirects["literal"] = f"http://{address}:{port}/latest/meta-data/"
    names, connections = Names({name: address}), Connections()
    # the site itself is on loopback: this source may reach 127.0.0.0/8 and nothing else inside
    network = Network(networks=(LOOPBACK,), resolver=names, socket_factory=connections)
    others = [f"http://{name}:{port}", f"http://{address}:{port}"]  # on the site: only the guard stands between
    source = website(server, network, other_sites=others)
    inside, literal = (SourceDocument(f"{server.url}/go/{n}", f"{server.url}/go/{n}") for n in ("inside", "literal"))
    try:
        with pytest.raises(ItemError, match=rf"{name} resolves to {address}, which is a {kind} address: refused"):
            await source.fetch(inside, None)
        with pytest.raises(ItemError, match=rf"^{address} is a {kind} address: refused"):
            await source.fetch(literal, None)
        with pytest.raises(
            SourceError, match=rf"robots.txt of http://{address}:{port} could not be read: {address} is"
        ):
            await source.listing()  # the listing reads each site's robots.txt: refused the same way
    finally:
        await source.aclose()
    assert names.asked == [name]  # the redirect's lookup: the listing stopped at the literal address, sorted first
    assert connections.outside() == [] and set(connections.attempts) == {"127.0.0.1"}

    # the same redirect from a source that does not list those hosts: off the site, not even looked up
    names.asked.clear()
    plain = website(server, Network(networks=(LOOPBACK,), resolver=names, socket_factory=connections))
    try:
        with pytest.raises(ItemError, match="redirected off the site"):
            await plain.fetch(inside, None)
    finally:
        await plain.aclose()
    assert names.asked == [] and connections.outside() == []


async def test_a_name_that_resolves_to_loopback_is_refused_by_default_and_read_with_the_setting(
    site: tuple[Site, Server],
) -> None:
    _, server = site
    port = server.url.rsplit(":", 1)[1]
    names, connections = Names({"help.internal.test": "127.0.0.1"}), Connections()
    options = WebsiteOptions.parse(
        {"start_urls": [f"http://help.internal.test:{port}/a"], "requests_per_second": 1000}, "t"
    )
    guarded = Website(options, network=Network(resolver=names, socket_factory=connections))
    try:
        with pytest.raises(SourceError, match=r"help\.internal\.test resolves to 127\.0\.0\.1, which is a loopback"):
            await guarded.listing()
    finally:
        await guarded.aclose()
    assert server.seen == [] and connections.attempts == [] and names.asked == ["help.internal.test"]

    allowed = Website(options, network=Network(allow_private=True, resolver=names, socket_factory=connections))
    try:
        [document] = await allowed.listing()
        fetched = await allowed.fetch(document, None)
    finally:
        await allowed.aclose()
    assert isinstance(fetched, Fetched) and b"Page a of the help site." in fetched.data
    assert [path for path, _ in server.seen] == ["/robots.txt", "/a"] and set(connections.attempts) == {"127.0.0.1"}


async def test_the_defaults_a_user_gets_refuse_internal_addresses_and_the_setting_is_announced(
    site: tuple[Site, Server], caplog: pytest.LogCaptureFixture
) -> None:
    _, server = site
    entry = {"name": "help", "kind": "website", "start_urls": [f"{server.url}/a"], "requests_per_second": 1000}
    [default] = parse_sources([entry])
    source = connector_for(default, {})
    try:
        with pytest.raises(SourceError, match=r"127\.0\.0\.1 is a loopback address: refused.*allow_private_network"):
            await source.listing()
    finally:
        await source.aclose()
    assert server.seen == []

    for setting, said in ((True, "every loopback, link-local and private address"), (["127.0.0.0/8"], "127.0.0.0/8")):
        caplog.clear()
        [allowed] = parse_sources([{**entry, "allow_private_network": setting}])
        with caplog.at_level(logging.WARNING, logger="candor.sync"):
            source = connector_for(allowed, {})
        try:
            [document] = await source.listing()
            assert isinstance(await source.fetch(document, None), Fetched)
        finally:
            await source.aclose()
        assert f"sync help: allow_private_network is on: this source may reach {said}" in caplog.text


@pytest.mark.parametrize("kind", ["confluence", "notion"])
async def test_every_kind_of_source_is_guarded_by_default(kind: str) -> None:
    if kind == "confluence":
        fake: FakeConfluence | FakeNotion = FakeConfluence().start()
        entry = {"base_url": fake.url, "spaces": ["ENG"], "credentials": {"email": "W_EMAIL", "token": "W_TOKEN"}}
        environ = {"W_EMAIL": EMAIL, "W_TOKEN": TOKEN}
    else:
        fake = FakeNotion().start()
        entry = {"base_url": fake.url, "access": [], "credentials": {"token": "N_TOKEN"}}
        environ = {"N_TOKEN": NOTION_TOKEN}
    try:
        [default] = parse_sources([{"name": "src", "kind": kind, **entry}])
        source = connector_for(default, environ)
        try:
            with pytest.raises(SourceError, match=r"127\.0\.0\.1 is a loopback address: refused"):
                await source.listing()
        finally:
            await source.aclose()
        assert sum(fake.requested.values()) == 0
        [allowed] = parse_sources([{"name": "src", "kind": kind, "allow_private_network": True, **entry}])
        source = connector_for(allowed, environ)
        try:
            assert await source.listing()
        finally:
            await source.aclose()
        assert sum(fake.requested.values()) > 0
    finally:
        fake.stop()


async def test_a_password_in_a_sitemap_url_reaches_no_log_and_no_error(
    site: tuple[Site, Server], caplog: pytest.LogCaptureFixture
) -> None:
    fake, server = site
    with_password = server.url.replace("http://", "http://reader:hunter2@")
    fake.elsewhere = ["https://bot:s3cret-pass@elsewhere.test/x.xml"]
    options = WebsiteOptions.parse({"sitemap": f"{with_password}/sitemap.xml", "requests_per_second": 1000}, "t")
    source = Website(options, network=Network(allow_private=True))
    try:
        with caplog.at_level(logging.INFO, logger="candor.sync"):
            assert {doc.id for doc in await source.listing()} == {f"{server.url}/a", f"{server.url}/b"}
            fake.sitemap_status = 503
            with pytest.raises(SourceError) as failed:
                await source.listing()
    finally:
        await source.aclose()
    assert "http://***@127.0.0.1" in str(failed.value) and "503" in str(failed.value)
    assert "https://***@elsewhere.test/x.xml" in caplog.text and "off the site" in caplog.text
    for secret in ("hunter2", "s3cret-pass"):
        assert secret not in str(failed.value) and secret not in caplog.text


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("10.0.0.1", "private"),
        ("172.16.5.4", "private"), ("192.168.1.1", "private"), ("fd00:ec2::254", "private"),
        ("224.0.0.251", "multicast"), ("ff02::1", "multicast"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
        ("100.64.0.1", "non-public"), ("93.184.215.14", None), ("2606:4700:4700::1111", None),
    ],
)  # fmt: skip
def test_each_internal_range_is_named_and_public_addresses_pass(address: str, kind: str | None) -> None:
    assert refusal(address) == kind


def test_urls_are_redacted_and_origins_compared_as_sites() -> None:
    assert redact("the sitemap https://ana:pw@help.test/s.xml and http://x@y.test/") == (
        "the sitemap https://***@help.test/s.xml and http://***@y.test/"
    )
    assert redact("no secret at https://help.test/a@b") == "no secret at https://help.test/a@b"
    assert origin("HTTPS://Help.Test:443/a?b") == "https://help.test" == origin("https://u:p@help.test/")
    assert origin("http://help.test:8080/") == "http://help.test:8080" != origin("https://help.test:8080/")


@pytest.mark.parametrize("value", ["yes", 1, [], ["not-a-network"], [10]])
def test_the_setting_is_true_false_or_a_list_of_networks(value: object) -> None:
    with pytest.raises(SyncError, match="allow_private_network"):
        parse_sources(
            [{"name": "x", "kind": "website", "start_urls": ["https://a.test/"], "allow_private_network": value}]
        )
    [listed] = parse_sources([{"name": "x", "kind": "website", "allow_private_network": ["10.20.0.1/16"]}])
    assert listed.allow_private_network == ("10.20.0.0/16",)
    [unset] = parse_sources([{"name": "x", "kind": "website"}])
    assert unset.allow_private_network is False
