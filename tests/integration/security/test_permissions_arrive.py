"""Permissions that arrive (issue 37): a run's budget limits downloads, never permission updates; a
source removed from the sources file, renamed or moved to another knowledge base leaves nothing
readable behind. Real Postgres, the real embedder, the fake website and fake Confluence on 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.errors import SyncError
from rag.ingest.sources.sync import SyncReport
from rag.model.answers import Audience, Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence
from tests.fakes.website import FakeWebsite

SITE_PAGES = 32
"""What the fake site stores (tests/integration/ingest/test_sync_website.py)."""
CUSTOMS = "Who pays customs duties on orders to Switzerland?"
"""Answered by the one page reached only through a link (not in the sitemap)."""


@pytest.fixture
def site() -> Iterator[FakeWebsite]:
    fake = FakeWebsite().start()
    yield fake
    fake.stop()


@pytest.fixture
def wiki(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConfluence]:
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_TOKEN", TOKEN)
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


def website(site: FakeWebsite, kb: KnowledgeBase, name: str, access: str = "[]", extra: str = "") -> str:
    return f"""
  - name: {name}
    kind: website
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    access: {access}
    start_urls: [{site.url}/]
    sitemap: {site.url}/sitemap.xml
    requests_per_second: 500{extra}
"""


def sources(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:" + "".join(entries))
    return path


async def access_groups(candor: Candor, kb: KnowledgeBase) -> dict[str, list[str]]:
    rows = await candor.store.fetch_all(
        "SELECT source, access_groups FROM documents WHERE kb_id = %(kb)s", {"kb": kb.id}
    )
    return {str(source): sorted(groups) for source, groups in rows}


async def chunk_groups(candor: Candor, kb: KnowledgeBase) -> set[tuple[str, ...]]:
    rows = await candor.store.fetch_all("SELECT DISTINCT access_groups FROM chunks WHERE kb_id = %(kb)s", {"kb": kb.id})
    return {tuple(sorted(groups)) for (groups,) in rows}


async def public_answer(candor: Candor, kb: KnowledgeBase, text: str) -> str:
    answer = await candor.answer(Question(text, scope=AccessScope(frozenset(), frozenset([kb.name])), platform="cli"))
    return answer.text


def retired(reports: list[SyncReport], name: str) -> SyncReport:
    """The report on source `name` (the session's tests share a database: others' sources retire too)."""
    [report] = [r for r in reports if r.source == name]
    assert report.retired
    return report


# --- a budget limits downloads, never permission updates ----------------------------------------------


async def test_a_website_past_its_budget_gets_its_new_access_on_every_stored_page(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    name = f"budget-{kb.name}"
    [first] = await candor.sync(sources(tmp_path, website(site, kb, name, "[support-team, partners]")))
    assert first.complete and first.added == SITE_PAGES

    site.reset_counts()
    budgeted = sources(tmp_path, website(site, kb, name, "[support-team]", "\n    max_pages: 3"))
    [narrowed] = await candor.sync(budgeted)
    assert not narrowed.complete and narrowed.note is not None
    downloaded = sum(site.full.values())
    assert 1 <= downloaded <= 3  # the budget: three pages visited (the failing one among them), no more
    groups = await access_groups(candor, kb)
    assert len(groups) == SITE_PAGES and set(map(tuple, groups.values())) == {("support-team",)}, groups
    assert await chunk_groups(candor, kb) == {("support-team",)}
    assert narrowed.narrowed == SITE_PAGES - downloaded  # the customs page too: reached through its stored link
    assert "8 percent" not in await public_answer(candor, kb, CUSTOMS)

    # the source widens again: a page narrowed in place is downloaded again to get its listed access
    [whole] = await candor.sync(sources(tmp_path, website(site, kb, name, "[support-team, partners]")))
    assert whole.complete
    final = await access_groups(candor, kb)
    assert set(map(tuple, final.values())) == {("partners", "support-team")}, (
        {k: v for k, v in final.items() if v != ["partners", "support-team"]},
        whole.unchanged,
        whole.updated,
        whole.fetched,
    )


def confluence(wiki: FakeConfluence, kb: KnowledgeBase, name: str, extra: str = "") -> str:
    return f"""
  - name: {name}
    kind: confluence
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    base_url: {wiki.url}
    spaces: [ENG, HR]
    space_access: {{HR: [staff]}}
    permissions:
      groups: {{sre: [sre-team], hr-managers: [hr]}}
    credentials: {{email: CONFLUENCE_EMAIL, token: CONFLUENCE_TOKEN}}{extra}
"""


async def test_a_confluence_page_restricted_past_the_budget_is_restricted_in_the_same_run(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    name = f"budget-{kb.name}"
    await candor.sync(sources(tmp_path, confluence(wiki, kb, name)))
    expenses, leave = wiki.find("Expenses"), wiki.find("Leave policy")
    before = await access_groups(candor, kb)
    assert before[f"{wiki.url}/page/{expenses.id}"] == ["staff"] == before[f"{wiki.url}/page/{leave.id}"]

    wiki.reset_counts()
    expenses.groups = ["hr-managers"]  # restricted at the source (no new version)
    wiki.trash("Leave policy")  # gone from the listing (or hidden from Candor's account)
    [report] = await candor.sync(sources(tmp_path, confluence(wiki, kb, name, "\n    max_documents: 2")))
    assert not report.complete and report.deleted == 0
    assert wiki.body_fetches[expenses.id] == 0 and sum(wiki.body_fetches.values()) <= 2  # not downloaded
    after = await access_groups(candor, kb)
    # staff read the stored copy, hr may read the page now: no reader both allow, so no one until fetched
    assert after[f"{wiki.url}/page/{expenses.id}"] == [NO_ONE]
    assert after[f"{wiki.url}/page/{leave.id}"] == [NO_ONE]  # until a complete run removes it
    assert report.narrowed == 2
    assert "10 working days" not in await public_answer(candor, kb, "How fast are expenses reimbursed?")

    [whole] = await candor.sync(sources(tmp_path, confluence(wiki, kb, name)))  # fetched again, listed access
    assert whole.complete and whole.deleted == 1
    assert (await access_groups(candor, kb))[f"{wiki.url}/page/{expenses.id}"] == ["hr"]


# --- a source removed, renamed or moved leaves nothing readable behind ---------------------------------


async def test_a_removed_source_s_documents_are_removed_on_the_next_sync(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    gone, staying = f"gone-{kb.name}", f"staying-{kb.name}"
    other = await candor.knowledge_base(f"{kb.name}-b", create=True)
    assert other is not None
    await candor.sync(
        sources(tmp_path, website(site, kb, gone), website(site, other, staying, extra="\n    max_pages: 2"))
    )
    assert len(await access_groups(candor, kb)) == SITE_PAGES
    theirs = await access_groups(candor, other)
    assert theirs

    without = sources(tmp_path, website(site, other, staying, extra="\n    max_pages: 2"))
    dry = retired(await candor.retire_sources(without, dry_run=True), gone)
    assert (dry.deleted, dry.knowledge_base) == (SITE_PAGES, kb.name)
    assert len(await access_groups(candor, kb)) == SITE_PAGES  # a dry run writes nothing

    done = retired(await candor.retire_sources(without), gone)
    assert done.deleted == SITE_PAGES and await access_groups(candor, kb) == {}
    assert [r.source for r in await candor.retire_sources(without)] == []  # said once
    assert await access_groups(candor, other) == theirs  # the configured source keeps its own


async def test_a_removed_source_kept_is_readable_by_no_one_until_removed(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    kept = f"kept-{kb.name}"
    await candor.sync(sources(tmp_path, website(site, kb, kept)))
    assert "8 percent" in await public_answer(candor, kb, CUSTOMS)  # the control
    other = await candor.knowledge_base(f"{kb.name}-b", create=True)
    assert other is not None
    without = sources(tmp_path, website(site, other, f"other-{kb.name}"))

    report = retired(await candor.retire_sources(without, keep=True), kept)
    assert (report.narrowed, report.deleted) == (SITE_PAGES, 0)
    groups = await access_groups(candor, kb)
    assert len(groups) == SITE_PAGES and set(map(tuple, groups.values())) == {(NO_ONE,)}
    assert await chunk_groups(candor, kb) == {(NO_ONE,)}
    assert "8 percent" not in await public_answer(candor, kb, CUSTOMS)

    assert retired(await candor.retire_sources(without), kept).deleted == SITE_PAGES
    assert await access_groups(candor, kb) == {}


async def test_a_renamed_source_keeps_the_documents_its_new_name_holds(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    old, new = f"old-{kb.name}", f"new-{kb.name}"
    await candor.sync(sources(tmp_path, website(site, kb, old)))
    renamed = sources(tmp_path, website(site, kb, new, extra="\n    max_pages: 5"))
    [first] = await candor.sync(renamed)  # past its budget: a few pages are the new name's so far
    assert not first.complete and first.unchanged >= 1 and first.added == 0

    report = retired(await candor.retire_sources(renamed), old)
    assert report.deleted == SITE_PAGES - first.unchanged
    assert len(await access_groups(candor, kb)) == first.unchanged


async def test_pages_two_removed_names_both_held_are_kept_for_no_one(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    old, new = f"old-{kb.name}", f"new-{kb.name}"
    await candor.sync(sources(tmp_path, website(site, kb, old)))
    await candor.sync(sources(tmp_path, website(site, kb, new)))  # renamed: the same pages, held by both names
    other = await candor.knowledge_base(f"{kb.name}-b", create=True)
    assert other is not None
    neither = sources(tmp_path, website(site, other, f"other-{kb.name}"))  # and then removed

    reports = await candor.retire_sources(neither, keep=True)
    assert retired(reports, old).narrowed + retired(reports, new).narrowed >= SITE_PAGES
    assert set(map(tuple, (await access_groups(candor, kb)).values())) == {(NO_ONE,)}


async def test_a_source_moved_to_another_knowledge_base_leaves_the_old_one_though_no_run_completes(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    name = f"moving-{kb.name}"
    await candor.sync(sources(tmp_path, website(site, kb, name)))
    other = await candor.knowledge_base(f"{kb.name}-new", create=True)
    assert other is not None
    moved = sources(tmp_path, website(site, other, name, extra="\n    max_pages: 3"))
    [run] = await candor.sync(moved)
    assert not run.complete and run.added >= 1

    report = retired(await candor.retire_sources(moved), name)
    assert (report.knowledge_base, report.deleted) == (kb.name, SITE_PAGES)
    assert await access_groups(candor, kb) == {} and len(await access_groups(candor, other)) == run.added
    assert [r for r in await candor.retire_sources(moved) if r.source == name] == []  # the new base's is kept


# --- an asker's rule that grants no groups here opens no knowledge base --------------------------------

PARKING = "When does the staff car park close on weekdays?"


async def test_an_askers_rule_that_grants_nothing_here_does_not_open_every_knowledge_base(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    internal = f"{kb.name}-internal"
    note = tmp_path / "parking.md"
    note.write_text("# Car park\n\nThe staff car park closes at 21:40 on weekdays.\n", encoding="utf-8")
    assert (await candor.ingest([note], kb=internal)).ok  # public, in a base Slack is not given
    policy = tmp_path / "access.yaml"
    policy.write_text(
        f'- platform: slack\n  knowledge_bases: ["{kb.name}"]\n'
        # no knowledge_bases: every one, where the rule counts
        '- platform: slack\n  asker: "U0ADMIN"\n  groups: [finance]\n',
        encoding="utf-8",
    )
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)

    def asked(audience: Audience, asker: str = "U0ADMIN") -> Question:
        channel = "D0ADMIN" if audience == "direct" else "C0GENERAL"
        return Question(PARKING, platform="slack", conversation=f"T0001/{channel}", asker=asker, audience=audience)

    direct = await core.answer(asked("direct"))  # the control: the rule counts in a DM, and opens every base
    assert "21:40" in direct.text, direct.text
    for audience in ("public", "private"):  # the rule grants the admin nothing here: Slack's base only
        answer = await core.answer(asked(audience))
        assert "21:40" not in answer.text and not {s.url for s in answer.sources} & {str(note)}, answer.text
    assert "21:40" not in (await core.answer(asked("public", asker="U0SOMEONE"))).text


# --- a website read with credentials says who may read it ----------------------------------------------


async def test_a_website_with_credentials_and_no_access_is_refused_before_anything_is_read(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTRANET_AUTH", "Bearer intranet-secret")
    name = f"intranet-{kb.name}"
    entry = website(site, kb, name).replace("    access: []\n", "    credentials: {authorization: INTRANET_AUTH}\n")
    with pytest.raises(SyncError, match=rf"source '{name}': a website source with `credentials` needs an explicit"):
        await candor.sync(sources(tmp_path, entry))
    assert sum(site.requested.values()) == 0 and await access_groups(candor, kb) == {}

    [staff] = await candor.sync(sources(tmp_path, entry + "    access: [staff]\n"))  # said: it syncs
    assert staff.added == SITE_PAGES
    assert set(map(tuple, (await access_groups(candor, kb)).values())) == {("staff",)}
