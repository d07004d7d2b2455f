"""`Candor.sync` of a Confluence source against a local fake Confluence Cloud (tests/fakes/confluence.py),
into the real Postgres with the real embedder: the first sync and answers citing a page, restricted
pages (mapped, inherited, unmapped, in a restricted folder), a re-sync that downloads only the edited
page, a trashed page deleted, a failed listing that removes nothing, refused credentials, a 429 and a
5xx, and a download redirected to another host, which gets no credentials."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.model.answers import Answer, Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence

PAGES = 35
"""ENG: home, 4 sections, 16 pages below them, the incident bridge, its child, the vault page and 2 blog
posts; HR: 7, and a page in each of its two folders (a folder is not a document)."""
SYNCED = PAGES + 1
"""... and the PDF attached to Deployments (the PNG beside it is not listed)."""


@pytest.fixture
def wiki(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConfluence]:
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_TOKEN", TOKEN)
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


def source(wiki: FakeConfluence, kb: KnowledgeBase, name: str = "wiki", token: str = "CONFLUENCE_TOKEN") -> str:
    """A source called `name`-<kb> (sync state is kept by name, and the session's tests share a database)."""
    return f"""
  - name: {name}-{kb.name}
    kind: confluence
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    base_url: {wiki.url}
    spaces: [ENG, HR]
    space_access: {{HR: [staff]}}
    permissions:
      groups: {{sre: [sre-team], hr-managers: [hr]}}
      users: {{"557058:hr-lead": [hr]}}
    credentials: {{email: CONFLUENCE_EMAIL, token: {token}}}
"""


def sources_file(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:" + "".join(entries))
    return path


async def documents(candor: Candor, kb: KnowledgeBase) -> dict[str, str]:
    return {source: doc.content_hash for source, doc in (await candor.store.documents(kb)).items()}


async def access_groups(candor: Candor, kb: KnowledgeBase) -> dict[str, list[str]]:
    rows = await candor.store.fetch_all(
        "SELECT source, access_groups FROM documents WHERE kb_id = %(kb)s", {"kb": kb.id}
    )
    return {str(source): list(groups) for source, groups in rows}


async def ask(candor: Candor, kb: KnowledgeBase, text: str, *groups: str) -> Answer:
    scope = AccessScope(frozenset(groups), frozenset([kb.name]))
    return await candor.answer(Question(text, scope=scope, platform="cli"))


async def test_spaces_sync_answer_with_the_page_url_and_resync_only_the_edited_page(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(wiki, kb))
    [first] = await candor.sync(config)
    assert first.listing_error is None and first.complete and first.ok, first
    assert (first.added, first.updated, first.deleted, first.fetched) == (SYNCED, 0, 0, SYNCED)
    assert sum(wiki.body_fetches.values()) == PAGES and sum(wiki.downloads.values()) == 1
    stored = await documents(candor, kb)
    assert f"{wiki.url}/attachment/att900" in stored and len(stored) == SYNCED

    deploys = await ask(candor, kb, "When are production deploys frozen?")
    assert deploys.route == "answered", deploys.text
    assert "Friday after 14:00" in deploys.text
    assert wiki.page_url(wiki.find("Deployments 1").id) in {s.url for s in deploys.sources}
    rollback = await ask(candor, kb, "How long does a rollback to the previous release take?")
    assert rollback.route == "answered" and "7 minutes" in rollback.text, rollback.text
    post = wiki.find("Release notes 4.2")
    cache = await ask(candor, kb, "Where did release 4.2 move the build cache?")
    assert "eu-west" in cache.text and wiki.page_url(post.id) in {s.url for s in cache.sources}, cache.text
    assert "/blog/" in wiki.page_url(post.id) and f"{wiki.url}/blogpost/{post.id}" in stored
    outage = "How long did the outage last?"
    assert "37 minutes" not in (await ask(candor, kb, outage)).text  # a blog post restricted to sre
    assert "37 minutes" in (await ask(candor, kb, outage, "sre-team")).text

    # between runs: one page edited (a new version), one trashed
    wiki.reset_counts()
    edited = wiki.edit("Code review 1", "<p>Every change needs three approving reviews before it merges.</p>")
    trashed = wiki.trash("Databases 3")
    wiki.trash("Release notes 4.2")
    [second] = await candor.sync(config)
    assert (second.added, second.updated, second.deleted, second.fetched) == (0, 1, 2, 1), second
    assert second.unchanged == SYNCED - 3
    assert dict(wiki.body_fetches) == {edited.id: 1} and sum(wiki.downloads.values()) == 0
    after = await documents(candor, kb)
    assert f"{wiki.url}/page/{trashed.id}" not in after and len(after) == SYNCED - 2
    assert f"{wiki.url}/blogpost/{post.id}" not in after
    assert after[f"{wiki.url}/page/{edited.id}"] != stored[f"{wiki.url}/page/{edited.id}"]
    reviews = await ask(candor, kb, "How many approving reviews does a change need before it merges?")
    assert "three approving reviews" in reviews.text, reviews.text

    wiki.reset_counts()
    [third] = await candor.sync(config)
    assert (third.added, third.updated, third.deleted, third.fetched) == (0, 0, 0, 0)
    assert sum(wiki.body_fetches.values()) == 0


async def test_restricted_pages_reach_only_readers_with_their_groups(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    [report] = await candor.sync(sources_file(tmp_path, source(wiki, kb)))
    assert report.ok, report
    groups = await access_groups(candor, kb)

    def of(title: str) -> list[str]:
        return groups[f"{wiki.url}/page/{wiki.find(title).id}"]

    assert of("Incident bridge") == ["sre-team"]
    assert of("Pager escalation") == ["sre-team"]  # inherits its parent's restriction
    assert of("Vault rotation") == [NO_ONE]  # restricted to a group with no mapping
    assert of("Salary bands") == ["hr"]  # a mapped group and a mapped user
    assert of("Leave policy") == ["staff"]  # HR is not public: space_access
    assert of("Deployments 2") == [] and groups[f"{wiki.url}/attachment/att900"] == []
    assert of("Performance reviews") == ["hr"]  # in the Managers folder, restricted to hr-managers
    assert of("Calibration guide") == ["hr"]  # a folder deeper, still under Managers' restriction

    pin = "What is the incident bridge PIN?"
    public = await ask(candor, kb, pin)
    assert public.route == "abstained" and "4417" not in public.text
    other = await ask(candor, kb, pin, "staff", "hr")
    assert "4417" not in other.text
    allowed = await ask(candor, kb, pin, "sre-team")
    assert allowed.route == "answered" and "4417" in allowed.text, allowed.text
    pager = await ask(candor, kb, "What is the pager escalation timeout?", "sre-team")
    assert "12 minutes" in pager.text, pager.text
    assert "12 minutes" not in (await ask(candor, kb, "What is the pager escalation timeout?")).text

    vault = "How often do the database vault credentials rotate?"
    for reader in [(), ("sre-team",), ("staff", "hr", "sre-team", NO_ONE)]:
        answer = await ask(candor, kb, vault, *reader)
        assert "19 days" not in answer.text, (reader, answer.text)

    leave = "How many days of paid leave do employees receive per year?"
    assert "27 days" not in (await ask(candor, kb, leave)).text
    assert "27 days" in (await ask(candor, kb, leave, "staff")).text
    salary = "Where does the senior engineer salary band start?"
    assert "71000" not in (await ask(candor, kb, salary, "staff")).text
    assert "71000" in (await ask(candor, kb, salary, "hr")).text
    reviews = "How often do performance reviews take place?"
    assert "9 months" not in (await ask(candor, kb, reviews, "staff")).text  # HR's readers, not its managers
    assert "9 months" in (await ask(candor, kb, reviews, "hr")).text
    cap = "At what percentage do calibration sessions cap top ratings?"
    assert "15 percent" not in (await ask(candor, kb, cap, "staff")).text


async def test_a_restriction_added_between_runs_is_applied(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(wiki, kb))
    await candor.sync(config)
    page = wiki.find("Expenses")
    page.groups = ["hr-managers"]  # a restriction changes no version number
    [again] = await candor.sync(config)
    assert (again.updated, again.fetched) == (1, 1), again
    assert (await access_groups(candor, kb))[f"{wiki.url}/page/{page.id}"] == ["hr"]


def by_space_permissions(wiki: FakeConfluence, kb: KnowledgeBase, groups: str, extra: str = "") -> str:
    """A source with no `space_access`: who may read each space comes from Confluence."""
    return f"""
  - name: spaces-{kb.name}
    kind: confluence
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    base_url: {wiki.url}
    spaces: [ENG, HR]
    permissions:
      groups: {groups}
      users: {{"557058:hr-lead": [hr]}}
    credentials: {{email: CONFLUENCE_EMAIL, token: CONFLUENCE_TOKEN}}{extra}
"""


async def test_space_permissions_from_confluence_give_unrestricted_pages_their_readers_groups(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    def of(groups: dict[str, list[str]], title: str) -> list[str]:
        return groups[f"{wiki.url}/page/{wiki.find(title).id}"]

    mapped = sources_file(tmp_path, by_space_permissions(wiki, kb, "{hr-staff: [staff], sre: [sre-team]}"))
    [report] = await candor.sync(mapped)
    assert report.ok, report
    groups = await access_groups(candor, kb)
    assert of(groups, "Deployments 2") == []  # ENG: anyone may read it (the ANONYMOUS role)
    assert of(groups, "Leave policy") == ["hr", "staff"]  # HR: hr-staff by name, the HR lead; admins left out
    assert of(groups, "Incident bridge") == ["sre-team"]  # a page restriction still wins
    leave = "How many days of paid leave do employees receive per year?"
    assert "27 days" not in (await ask(candor, kb, leave)).text
    assert "27 days" in (await ask(candor, kb, leave, "staff")).text

    wiki.space_permissions["1001"] = [("group", "g-admins", "read", "space")]  # ENG is no longer open
    unmapped = sources_file(tmp_path, by_space_permissions(wiki, kb, "{sre: [sre-team]}"))
    [again] = await candor.sync(unmapped)
    assert again.ok and again.updated > 0 and again.fetched == again.updated, again
    groups = await access_groups(candor, kb)
    assert of(groups, "Deployments 2") == [NO_ONE]  # none of ENG's readers maps: no one, never public
    assert of(groups, "Leave policy") == ["hr"]  # hr-staff unmapped now: only the HR lead's group
    assert "Friday after 14:00" not in (await ask(candor, kb, "When are production deploys frozen?")).text

    wiki.space_permissions_status = 500  # permissions that cannot be read: the listing fails
    before = await documents(candor, kb)
    [failed] = await candor.sync(unmapped)
    assert failed.listing_error is not None and failed.deleted == 0
    assert await documents(candor, kb) == before

    wiki.space_permissions_status = 200
    configured = sources_file(tmp_path, by_space_permissions(wiki, kb, "{}", "\n    space_permissions: false"))
    [off] = await candor.sync(configured)
    assert off.ok, off
    groups = await access_groups(candor, kb)
    assert of(groups, "Deployments 2") == [] and of(groups, "Leave policy") == []  # the source's `access`: public


async def test_a_restriction_that_cannot_be_read_makes_the_page_no_one_s_until_it_can(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(wiki, kb))
    await candor.sync(config)
    on_call, bridge, pager = wiki.find("On-call"), wiki.find("Incident bridge"), wiki.find("Pager escalation")
    wiki.restriction_failing.add(bridge.id)
    [report] = await candor.sync(config)
    assert report.listing_error is None, report
    groups = await access_groups(candor, kb)
    assert groups[f"{wiki.url}/page/{bridge.id}"] == [NO_ONE]  # not the sre-team it had
    assert groups[f"{wiki.url}/page/{pager.id}"] == [NO_ONE]  # below it: as unknown
    assert groups[f"{wiki.url}/page/{on_call.id}"] == []  # above it: untouched
    assert "4417" not in (await ask(candor, kb, "What is the incident bridge PIN?", "sre-team")).text
    wiki.restriction_failing.clear()
    await candor.sync(config)
    assert (await access_groups(candor, kb))[f"{wiki.url}/page/{bridge.id}"] == ["sre-team"]


async def test_a_folder_that_cannot_be_read_makes_the_pages_in_it_no_one_s_until_it_can(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(wiki, kb))
    await candor.sync(config)
    reviews, guide = wiki.find("Performance reviews"), wiki.find("Calibration guide")
    managers, calibration = wiki.find("Managers"), wiki.find("Calibration")

    def of(groups: dict[str, list[str]], page: str) -> list[str]:
        return groups[f"{wiki.url}/page/{page}"]

    wiki.folder_failing.add(managers.id)  # where the folder sits, and so who it lets read, is unknown
    [report] = await candor.sync(config)
    assert report.listing_error is None and report.deleted == 0, report
    groups = await access_groups(candor, kb)
    assert of(groups, reviews.id) == [NO_ONE] and of(groups, guide.id) == [NO_ONE]
    assert of(groups, wiki.find("Leave policy").id) == ["staff"]  # beside the folder: untouched
    assert "9 months" not in (await ask(candor, kb, "How often do performance reviews take place?", "hr")).text

    wiki.folder_failing.clear()
    wiki.restriction_failing.add(calibration.id)  # the inner folder's restriction: a 5xx
    await candor.sync(config)
    groups = await access_groups(candor, kb)
    assert of(groups, guide.id) == [NO_ONE] and of(groups, reviews.id) == ["hr"]

    wiki.restriction_failing.clear()
    managers.groups = ["sre"]  # and a restriction changed on the folder, not the pages, is applied
    await candor.sync(config)
    groups = await access_groups(candor, kb)
    assert of(groups, guide.id) == ["sre-team"] and of(groups, reviews.id) == ["sre-team"]


async def test_a_download_redirected_to_another_host_is_sent_no_credentials(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    wiki.redirect_downloads = True  # the site answers the PDF's download with a 302 to 127.0.0.2
    [report] = await candor.sync(sources_file(tmp_path, source(wiki, kb)))
    assert report.ok and report.added == SYNCED, report
    assert wiki.media_authorization == [None]  # one request, with no Authorization header
    assert f"{wiki.url}/attachment/att900" in await documents(candor, kb)
    rollback = await ask(candor, kb, "How long does a rollback to the previous release take?")
    assert "7 minutes" in rollback.text, rollback.text


async def test_a_failed_listing_removes_nothing(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(wiki, kb))
    await candor.sync(config)
    before = await documents(candor, kb)
    wiki.pages_listing_status = 503
    wiki.trash("Onboarding")
    [report] = await candor.sync(config)
    assert report.listing_error is not None and "503" in report.listing_error
    assert report.deleted == 0 and not report.ok
    assert await documents(candor, kb) == before


async def test_refused_credentials_name_their_variables_and_other_sources_still_sync(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLD_CONFLUENCE_TOKEN", "ATATT-expired-token-value")
    config = sources_file(tmp_path, source(wiki, kb, "stale", "OLD_CONFLUENCE_TOKEN"), source(wiki, kb, "wiki"))
    stale, fresh = await candor.sync(config)
    assert stale.listing_error is not None
    assert f"source 'stale-{kb.name}'" in stale.listing_error and "HTTP 401" in stale.listing_error
    assert "$CONFLUENCE_EMAIL and $OLD_CONFLUENCE_TOKEN" in stale.listing_error
    assert "ATATT-expired-token-value" not in stale.listing_error and EMAIL not in stale.listing_error
    assert (stale.added, stale.deleted) == (0, 0)
    assert fresh.ok and fresh.added == SYNCED


async def test_a_throttled_request_is_waited_for_and_a_failing_page_is_skipped(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    wiki.throttled["/wiki/api/v2/spaces"] = 2
    broken = wiki.find("On-call 3")
    wiki.failing.add(broken.id)
    config = sources_file(tmp_path, source(wiki, kb))
    [report] = await candor.sync(config)
    assert wiki.requested["/wiki/api/v2/spaces"] == 3 and wiki.throttled["/wiki/api/v2/spaces"] == 0
    assert report.skipped == [(f"{wiki.url}/page/{broken.id}", "Confluence answered 500")]
    assert report.added == SYNCED - 1 and report.complete

    wiki.failing.clear()
    [again] = await candor.sync(config)  # the skipped page was not remembered: it is fetched now
    assert (again.added, again.fetched) == (1, 1) and again.ok
