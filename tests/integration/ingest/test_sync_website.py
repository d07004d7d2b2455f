"""`Candor.sync` of a website source against a local fake site (tests/fakes/website.py), into the
real Postgres with the real embedder: first sync, answers citing the page, conditional re-sync,
deletions, a failing sitemap, a dry run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.model.answers import Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.website import FakeWebsite

SYNCED = 32
"""Home, 5 sections, 25 articles, the customs page reached only by a link; not /private/ (robots),
not /help/broken (500)."""


@pytest.fixture
def site() -> Iterator[FakeWebsite]:
    fake = FakeWebsite().start()
    yield fake
    fake.stop()


def sources_file(
    tmp_path: Path, site: FakeWebsite, kb: KnowledgeBase, access: str = "[]", name: str | None = None
) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(
        f"""sources:
  - name: {name or f"help-{kb.name}"}
    kind: website
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    access: {access}
    start_urls: [{site.url}/]
    sitemap: {site.url}/sitemap.xml
    requests_per_second: 500
"""
    )
    return path


async def documents(candor: Candor, kb: KnowledgeBase) -> dict[str, str]:
    return {source: doc.content_hash for source, doc in (await candor.store.documents(kb)).items()}


async def test_a_website_syncs_answers_and_resyncs_only_what_changed(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    [first] = await candor.sync(config)
    assert first.listing_error is None and first.complete
    assert (first.added, first.updated, first.deleted) == (SYNCED, 0, 0)
    assert first.skipped == [(f"{site.url}/help/broken", "the site answered 500")]
    stored = await documents(candor, kb)
    assert len(stored) == SYNCED and f"{site.url}/help/shipping/deep/customs" in stored
    assert site.requested["/private/salaries"] == 0  # robots.txt disallows it
    boilerplate = await candor.store.fetch_one(
        "SELECT count(*) FROM chunks WHERE kb_id = %(kb)s AND text ILIKE '%%banana%%'", {"kb": kb.id}
    )
    assert boilerplate == (0,)  # nav, aside and footer were stripped

    question = Question(
        "How many days do I have to return unworn shoes?",
        scope=AccessScope(frozenset(), frozenset([kb.name])),
        platform="cli",
    )
    answer = await candor.answer(question)
    assert answer.route == "answered", answer.text
    assert "45 days" in answer.text
    assert f"{site.url}/help/returns/article-1" in {source.url for source in answer.sources}

    # the re-sync: one page changed, one removed from the site (and so from the sitemap)
    site.reset_counts()
    site.pages["/help/returns/article-2"] = site.pages["/help/returns/article-2"].replace(
        "article 2 of", "article 2 (revised) of"
    )
    del site.pages["/help/sizes/article-5"]
    [second] = await candor.sync(config)
    assert (second.added, second.updated, second.deleted) == (0, 1, 1), second
    assert second.unchanged == SYNCED - 2
    assert sum(site.full.values()) == 1 and site.full["/help/returns/article-2"] == 1
    assert sum(site.not_modified.values()) == SYNCED - 2  # every other page answered 304
    after = await documents(candor, kb)
    assert f"{site.url}/help/sizes/article-5" not in after and len(after) == SYNCED - 1
    assert after[f"{site.url}/help/returns/article-2"] != stored[f"{site.url}/help/returns/article-2"]

    # a third run changes nothing and downloads nothing
    site.reset_counts()
    [third] = await candor.sync(config)
    assert (third.added, third.updated, third.deleted, third.unchanged) == (0, 0, 0, SYNCED - 1)
    assert sum(site.full.values()) == 0


async def test_a_failing_sitemap_removes_nothing(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    await candor.sync(config)
    before = await documents(candor, kb)
    site.sitemap_status = 503
    del site.pages["/help/payment/article-4"]
    [report] = await candor.sync(config)
    assert report.listing_error is not None and "503" in report.listing_error
    assert report.deleted == 0 and not report.ok
    assert await documents(candor, kb) == before


async def test_a_source_that_cannot_start_is_reported_and_the_others_still_sync(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    path = sources_file(tmp_path, site, kb)
    broken_entry = "\n  - {name: broken, kind: website, access: [], credentials: {a: UNSET_X}}"
    path.write_text(path.read_text().replace("sources:", "sources:" + broken_entry))
    broken, synced = await candor.sync(path)
    assert broken.source == "broken" and broken.listing_error is not None and "$UNSET_X" in broken.listing_error
    assert not broken.ok and broken.added == 0
    assert synced.listing_error is None and synced.added == SYNCED


async def test_a_dry_run_lists_changes_and_writes_nothing(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    [empty] = await candor.sync(config, dry_run=True)
    assert empty.added == SYNCED and await documents(candor, kb) == {}
    await candor.sync(config)
    before = await documents(candor, kb)
    site.pages["/help/warranty/article-3"] = site.pages["/help/warranty/article-3"].replace("note 3", "note three")
    del site.pages["/help/warranty/article-4"]
    [dry] = await candor.sync(config, dry_run=True)
    assert ("updated", f"{site.url}/help/warranty/article-3") in dry.changes
    assert ("deleted", f"{site.url}/help/warranty/article-4") in dry.changes
    assert (dry.updated, dry.deleted) == (1, 1)
    assert await documents(candor, kb) == before
    [real] = await candor.sync(config)  # the state was not advanced by the dry run
    assert (real.updated, real.deleted) == (1, 1)


async def test_a_source_moved_to_another_knowledge_base_leaves_the_old_one_on_the_next_sync(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    name = f"moving-{kb.name}"
    await candor.sync(sources_file(tmp_path, site, kb, name=name))
    assert len(await documents(candor, kb)) == SYNCED
    other = await candor.knowledge_base(f"{kb.name}-new", create=True)
    assert other is not None
    moved = sources_file(tmp_path, site, other, name=name)

    [dry] = await candor.sync(moved, dry_run=True)
    [dry_retired] = [r for r in await candor.retire_sources(moved, dry_run=True) if r.source == name]
    assert dry.added == SYNCED and (dry_retired.knowledge_base, dry_retired.deleted) == (kb.name, SYNCED)
    assert len(await documents(candor, kb)) == SYNCED and await documents(candor, other) == {}

    site.sitemap_status = 503  # the new base cannot be filled yet: the old copies go all the same
    [failed] = await candor.sync(moved)
    assert failed.listing_error is not None
    [retired] = [r for r in await candor.retire_sources(moved) if r.source == name]
    assert retired.retired and (retired.knowledge_base, retired.deleted) == (kb.name, SYNCED)
    assert await documents(candor, kb) == {} and await documents(candor, other) == {}

    site.sitemap_status = 200
    [move] = await candor.sync(moved)
    assert move.complete and move.added == SYNCED, move
    assert await documents(candor, kb) == {} and len(await documents(candor, other)) == SYNCED
    [again] = await candor.sync(moved)
    assert (again.added, again.unchanged, again.fetched) == (0, SYNCED, 0)
    assert [r for r in await candor.retire_sources(moved) if r.source == name] == []


async def test_a_document_removed_from_the_store_is_fetched_again_though_the_site_says_not_modified(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    await candor.sync(config)
    lost = f"{site.url}/help/sizes/article-2"
    await candor.store.delete_documents([(await candor.store.documents(kb))[lost].id])
    [again] = await candor.sync(config)
    assert (again.added, again.unchanged) == (1, SYNCED - 1), again
    assert site.full["/help/sizes/article-2"] == 2 and lost in await documents(candor, kb)


async def test_a_page_that_cannot_be_fetched_keeps_its_copy_but_only_for_readers_the_site_still_allows(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    await candor.sync(sources_file(tmp_path, site, kb, access="[support-team, partners]"))
    site.failing.add("/help/shipping/article-1")
    [narrowed] = await candor.sync(sources_file(tmp_path, site, kb, access="[support-team]"))
    assert narrowed.narrowed == 1 and (f"{site.url}/help/shipping/article-1", "the site answered 500") in (
        narrowed.skipped
    )
    rows = dict(
        await candor.store.fetch_all(
            "SELECT d.source, array_agg(DISTINCT c.access_groups) FROM documents d"
            " JOIN chunks c ON c.document_id = d.id WHERE d.kb_id = %(kb)s GROUP BY d.source",
            {"kb": kb.id},
        )
    )
    assert rows[f"{site.url}/help/shipping/article-1"] == [["support-team"]]  # the chunks too, not partners
    partners = AccessScope(frozenset(["partners"]), frozenset([kb.name]))
    shipping = "How long does standard shipping to Portugal take?"
    assert "3 business days" not in (await candor.answer(Question(shipping, scope=partners, platform="cli"))).text

    [closed] = await candor.sync(sources_file(tmp_path, site, kb, access="[legal]"))  # nothing in common
    assert closed.narrowed == 1
    stored = await candor.store.documents(kb)
    assert stored[f"{site.url}/help/shipping/article-1"].access_groups == (NO_ONE,)
    site.failing.discard("/help/shipping/article-1")
    [fetched] = await candor.sync(sources_file(tmp_path, site, kb, access="[legal]"))
    assert fetched.narrowed == 0 and (await candor.store.documents(kb))[
        f"{site.url}/help/shipping/article-1"
    ].access_groups == ("legal",)


async def test_a_site_larger_than_its_budget_is_visited_a_budget_at_a_time_new_and_oldest_first(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    config.write_text(config.read_text() + "    max_pages: 12\n")
    counts = []
    for _ in range(3):
        [report] = await candor.sync(config)
        assert not report.complete and report.note is not None
        counts.append(len(await documents(candor, kb)))
    assert counts[0] < counts[1] < counts[2] and counts[2] >= 30, counts  # not the same 12 pages each run


async def test_a_restricted_site_is_read_only_with_its_group(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    await candor.sync(sources_file(tmp_path, site, kb, access="[support-team]"))
    text = "How long does standard shipping to Portugal take?"
    public = await candor.answer(Question(text, scope=AccessScope(frozenset(), frozenset([kb.name])), platform="cli"))
    assert public.route == "abstained" and "3 business days" not in public.text
    groups = await candor.store.fetch_all(
        "SELECT DISTINCT access_groups FROM documents WHERE kb_id = %(kb)s", {"kb": kb.id}
    )
    assert groups == [(["support-team"],)]
    team = AccessScope(frozenset(["support-team"]), frozenset([kb.name]))
    allowed = await candor.answer(Question(text, scope=team, platform="cli"))
    assert allowed.route == "answered" and "3 business days" in allowed.text, allowed.text


async def test_a_throttled_page_is_waited_for_and_a_page_that_is_not_a_document_is_skipped(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    site.throttled["/help/returns/article-1"] = 2
    site.binary["/help/returns/photo"] = b"\x89PNG\r\n\x1a\n" + bytes(64)
    site.pages["/help/returns/"] = site.pages["/help/returns/"].replace("</main>", '<a href="photo">photo</a></main>')
    [report] = await candor.sync(sources_file(tmp_path, site, kb))
    assert site.requested["/help/returns/article-1"] == 3 and site.throttled["/help/returns/article-1"] == 0
    assert f"{site.url}/help/returns/article-1" in await documents(candor, kb)
    assert (f"{site.url}/help/returns/photo", "not a page Candor reads (Content-Type 'image/png')") in report.skipped
    assert report.added == SYNCED
