"""The dashboard's sources, knowledge bases and documents pages (`bot.web.sources`) over real HTTP and
in headless Chromium: a real sync against the fake website (tests/fakes/website.py) into the
session's Postgres, `candor serve`'s app with the sources pages, the browser over the DevTools
protocol (tests/browser.py), as the review queue is tested. An operator logs in, sees a source that
never ran and one whose listing fails (with its error), presses Sync now and watches its progress
and counts, finds a document, reads its chunks (restricted text included: the admin sees all) and
the answer that cited it, and sees the counts change after the source changed. Sync now is for the
admin, from this server's page only, and runs once across two replicas (two apps that share only
Postgres)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest
from aiohttp import ClientSession

from bot.server import build_app
from rag import SourceOverview
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.browser import Chromium
from tests.fakes.website import FakeWebsite
from tests.integration.ingest.test_sync_runs import HELD, runs_of
from tests.integration.ingest.test_sync_website import SYNCED
from tests.integration.web.test_dashboard import TOKEN, base_of, bearer, origin_of, running


@pytest.fixture
def site() -> Iterator[FakeWebsite]:
    fake = FakeWebsite().start()
    yield fake
    fake.held.clear()
    fake.stop()


@pytest.fixture
def down() -> Iterator[FakeWebsite]:
    """A site whose sitemap answers 503: its source's listing fails."""
    fake = FakeWebsite(sitemap_status=503).start()
    yield fake
    fake.stop()


def sources_yaml(tmp_path: Path, kb: KnowledgeBase, *sites: tuple[str, FakeWebsite, str]) -> Path:
    entries = "".join(
        f"""  - name: {name}
    kind: website
    allow_private_network: true
    kb: {kb.name}
    access: {access}
    start_urls: [{fake.url}/]
    sitemap: {fake.url}/sitemap.xml
    requests_per_second: 500
"""
        for name, fake, access in sites
    )
    path = tmp_path / "sources.yaml"
    path.write_text("sources:\n" + entries)
    return path


def with_sources(candor: Candor, config: Path) -> Candor:
    """The session's core, reading `config` as its CANDOR_SOURCES."""
    return dataclasses.replace(candor, settings=candor.settings.model_copy(update={"sources": config}))


@asynccontextmanager
async def served(core: Candor, overview: SourceOverview | None = None) -> AsyncIterator[ClientSession]:
    app = build_app(core, reports=core, admin_token=TOKEN, sources=overview or SourceOverview(core))
    async with running(app) as http:
        yield http


async def settled(browser: Chromium, expression: str, timeout: float = 60.0) -> Any:  # noqa: ASYNC109
    """`expression`'s value once truthy, across the page's own reloads (a run in progress reloads it)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            value = await browser.evaluate(expression)
        except (AssertionError, RuntimeError):  # the page was navigating: ask the next one
            value = None
        if value:
            return value
        assert loop.time() < deadline, f"still false after {timeout}s: {expression}"
        await asyncio.sleep(0.1)


def text_of(selector: str) -> str:
    return f"((document.querySelector({json.dumps(selector)}) || {{}}).innerText || '')"


async def test_an_operator_syncs_a_source_finds_a_document_and_sees_the_counts_change(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, down: FakeWebsite, tmp_path: Path
) -> None:
    help_, broken = f"help-{kb.name}", f"down-{kb.name}"
    core = with_sources(candor, sources_yaml(tmp_path, kb, (help_, site, "[support]"), (broken, down, "[]")))
    async with served(core) as http, await Chromium.start(tmp_path) as browser:
        base = base_of(http)
        await browser.goto(f"{base}/dashboard/sources")
        assert await browser.evaluate("document.querySelector('input[name=next]').value") == "/dashboard/sources"
        await browser.evaluate(f"document.getElementById('token').value = {json.dumps(TOKEN)}")
        await browser.evaluate("document.querySelector('form').submit()")
        row = "tr[data-source='{}']"
        for name in (help_, broken):  # configured, never run: marked
            shown = await settled(browser, text_of(row.format(name)))
            assert "never run" in shown and "website" in shown and kb.name in shown
            assert (
                await browser.evaluate(f"document.querySelector({json.dumps(row.format(name))}).className") == "marked"
            )
        assert "the groups support" in await browser.evaluate(text_of(row.format(help_)))

        # the failing source: Sync now, and its error in full
        await browser.evaluate(f"document.querySelector({json.dumps(row.format(broken) + ' button')}).click()")
        await settled(browser, f"{text_of('#last-run')}.includes('failed')")
        assert "503" in await browser.evaluate(text_of("#last-error"))
        await browser.goto(f"{base}/dashboard/sources")
        failed = await browser.evaluate(text_of(row.format(broken)))
        assert "last run failed" in failed and "503" in failed

        # open the other source; Sync now; its progress while a page is held, then its counts
        await browser.evaluate(f"document.querySelector({json.dumps(row.format(help_) + ' a')}).click()")
        await settled(browser, f"location.pathname === '/dashboard/sources/{help_}'")
        site.held.add(HELD)
        await browser.evaluate("document.querySelector('button[name=sync]').click()")
        progress = await settled(
            browser,
            f"/running: [1-9][0-9]* of [0-9]+ documents/.test({text_of('#last-run')}) && {text_of('#last-run')}",
        )
        assert "Started" in await browser.evaluate("document.body.innerText")
        assert "Sync now" in await browser.evaluate("document.querySelector('button[name=sync]').outerHTML")
        assert await browser.evaluate("document.querySelector('button[name=sync]').disabled")  # not twice
        site.held.clear()
        last = await settled(browser, f"{text_of('#last-run')}.includes('succeeded') && {text_of('#last-run')}")
        assert f"{SYNCED} added, 0 updated, 0 unchanged, 0 deleted, 1 skipped; {SYNCED} fetched in full" in last, (
            progress
        )
        assert "the site answered 500" in await browser.evaluate("document.body.innerText")

        # find a document: the source's documents, searched by title
        await browser.evaluate("[...document.querySelectorAll('a')].find(a => a.href.includes('source=')).click()")
        await settled(browser, "document.querySelector('input[name=q]') !== null")
        assert f"{SYNCED} documents from source {help_}" in await browser.evaluate(text_of("#found"))
        await browser.evaluate("document.querySelector('input[name=q]').value = 'Returns article'")
        await browser.evaluate("document.querySelector('form[role=search]').submit()")
        await settled(browser, f"{text_of('#found')}.startsWith('5 documents')")
        listed = await browser.evaluate(text_of("#documents"))
        assert "support" in listed and f"{site.url}/help/returns/article-1" in listed
        await browser.evaluate(
            "[...document.querySelectorAll('#documents a')].find(a => a.innerText === 'Returns article 1').click()"
        )
        await settled(browser, "document.getElementById('chunks') !== null")
        read = await browser.evaluate(text_of("#chunks"))
        assert "within 45 days" in read and "banana" not in read  # the page furniture is not in the text
        page = await browser.evaluate("document.body.innerText")
        assert "restricted: shown here because you are the admin" in page and "No answer cited it" in page

        # an answer cites it: the document's page says so
        scope = AccessScope(frozenset({"support"}), frozenset([kb.name]))
        answer = await core.answer(Question("How many days do I have to return unworn shoes?", scope=scope))
        assert answer.route == "answered" and "45 days" in answer.text
        await browser.goto(await browser.evaluate("location.href"))
        assert "How many days do I have to return unworn shoes?" in await browser.evaluate(text_of("#cited-by"))

        # the source changes; Sync now again: the counts change
        article = "/help/returns/article-1"
        site.pages[article] = site.pages[article].replace("within 45 days", "within 60 days")
        await browser.goto(f"{base}/dashboard/sources/{help_}?kb={kb.name}")
        await browser.evaluate("document.querySelector('button[name=sync]').click()")
        again = await settled(browser, f"{text_of('#last-run')}.includes('1 updated') && {text_of('#last-run')}")
        assert f"0 added, 1 updated, {SYNCED - 1} unchanged, 0 deleted, 1 skipped; 1 fetched in full" in again
        runs = await browser.evaluate(text_of("#runs"))
        assert runs.count("dashboard") == 2
        await browser.goto(f"{base}/dashboard/sources")
        fine = await browser.evaluate(text_of(row.format(help_)))
        assert "1 skipped" in fine and "skipped " + site.url + "/help/broken: the site answered 500" in fine


async def test_sync_now_is_the_admins_from_this_site_and_runs_once_across_replicas(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    name = f"help-{kb.name}"
    core = with_sources(candor, sources_yaml(tmp_path, kb, (name, site, "[]")))
    replica_a, replica_b = SourceOverview(core), SourceOverview(core)
    sync = f"/dashboard/sources/{name}/sync"
    async with served(core, replica_a) as a, served(core, replica_b) as b:
        anonymous = await a.post(sync, data={"kb": kb.name}, headers=origin_of(a), allow_redirects=False)
        assert anonymous.status == 401 and 'name="token"' in await anonymous.text()
        evil = {**bearer(), "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
        assert (await a.post(sync, data={"kb": kb.name}, headers=evil, allow_redirects=False)).status == 403
        unknown = await a.post("/dashboard/sources/nope/sync", headers={**bearer(), **origin_of(a)})
        assert unknown.status == 404
        assert await runs_of(candor, kb) == []

        site.held.add(HELD)
        started = await a.post(sync, data={"kb": kb.name}, headers={**bearer(), **origin_of(a)}, allow_redirects=False)
        assert started.status == 303 and "Started" in unquote_plus(started.headers["Location"])
        refused = await b.post(sync, data={"kb": kb.name}, headers={**bearer(), **origin_of(b)}, allow_redirects=False)
        location = unquote_plus(refused.headers["Location"])
        assert refused.status == 303 and "Not started" in location and "being synced now (dashboard," in location
        page = await (await b.get(refused.headers["Location"], headers=bearer())).text()
        assert "Not started" in page and 'class="running"' in page and 'http-equiv="refresh"' in page
        [run] = await runs_of(candor, kb)
        assert (run["status"], run["trigger"]) == ("running", "dashboard")
        site.held.clear()
        await replica_a.sync_now.wait()
        [run] = await runs_of(candor, kb)
        assert run["status"] == "succeeded" and run["added"] == SYNCED

        bases = await (await a.get("/dashboard/knowledge-bases", headers=bearer())).text()
        mine = re.search(rf'<tr data-kb="{kb.name}">(.*?)</tr>', bases)
        assert mine is not None and f">{SYNCED}<" in mine.group(1) and "everyone (public)" in mine.group(1)
        documents = f"/dashboard/documents?kb={kb.name}"
        assert (await a.get(documents + "&page=0", headers=bearer())).status == 400
        assert (await a.get("/dashboard/documents?kb=no-such-base", headers=bearer())).status == 404
        wildcard = await (await a.get(documents + "&q=%25", headers=bearer())).text()
        assert "0 documents matching" in wildcard  # a % is a character searched for, not a wildcard
        assert (await a.get("/dashboard/documents/999999999999", headers=bearer())).status == 404
        assert (await a.get(documents)).status == 401
