"""`Candor.sync` of a SharePoint / OneDrive source against a local fake Microsoft Graph and sign-in
(tests/fakes/graph.py, MSAL talking to it over TLS), into the real Postgres with the real embedder:
the first sync and answers citing a file's webUrl, a re-sync that downloads only what changed (and
re-reads every permission), restricted items (Entra group, SharePoint group, unmapped people, links),
a permission change applied, a failed listing or vanished site that removes nothing, refused
credentials named by variable, a 429 waited out, and a failing item, conversion or permission skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.model.answers import Answer, Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, TENANT, FakeGraph, user

FILES = 33
"""Documents (18: the handbook tree, payroll, projects, a readme), Policies (13), Hana's OneDrive (2);
not the .png and .xlsx beside them, nor the Archive library, which is not configured."""
PAGES = 2
"""The site's published pages (the draft is not synced)."""
SYNCED = FILES + PAGES
WORD = 4
"""Word files among them, converted to PDF by Graph."""


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeGraph]:
    fake = FakeGraph().start()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", fake.ca_bundle(tmp_path))  # MSAL (requests) trusts the fake's CA
    monkeypatch.setenv("SP_TENANT_ID", TENANT)
    monkeypatch.setenv("SP_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SP_CLIENT_SECRET", CLIENT_SECRET)
    yield fake
    fake.stop()


def source(graph: FakeGraph, kb: KnowledgeBase, name: str = "intranet", secret: str = "SP_CLIENT_SECRET") -> str:
    """A source called `name`-<kb> (sync state is kept by name, and the session's tests share a database)."""
    return f"""
  - name: {name}-{kb.name}
    kind: sharepoint
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    sites: ["{graph.hostname}:/sites/Finance"]
    libraries: [Documents, Policies]
    drives: [b!onedrive-hana-5e0f]
    site_pages: [staff]
    graph_url: {graph.graph_url}
    authority: {graph.authority}
    permissions:
      site_groups: {{Finance Members: [finance], Finance Owners: [finance], Finance Visitors: [staff],
                    Payroll Team: [payroll]}}
      groups: {{g-7f3e-lead: [finance-leads]}}
      users: {{hana@contoso.com: [hr]}}
      organization: [staff]
      anonymous: public
    credentials: {{tenant_id: SP_TENANT_ID, client_id: SP_CLIENT_ID, client_secret: {secret}}}
"""


def sources_file(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:" + "".join(entries))
    return path


def doc_id(graph: FakeGraph, name: str) -> str:
    node = graph.find(name)
    return f"{graph.graph_url}/drives/{node.drive_id}/items/{node.id}"


async def documents(candor: Candor, kb: KnowledgeBase) -> dict[str, str]:
    return {source: doc.content_hash for source, doc in (await candor.store.documents(kb)).items()}


async def stored(candor: Candor, kb: KnowledgeBase) -> dict[str, tuple[list[str], str]]:
    """Each document's access groups and citation URL."""
    rows = await candor.store.fetch_all(
        "SELECT source, access_groups, url FROM documents WHERE kb_id = %(kb)s", {"kb": kb.id}
    )
    return {str(source): (list(groups), str(url)) for source, groups, url in rows}


async def ask(candor: Candor, kb: KnowledgeBase, text: str, *groups: str) -> Answer:
    scope = AccessScope(frozenset(groups), frozenset([kb.name]))
    return await candor.answer(Question(text, scope=scope, platform="cli"))


async def test_sites_and_drives_sync_answer_with_the_web_url_and_resync_only_what_changed(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(graph, kb))
    [first] = await candor.sync(config)
    assert first.listing_error is None and first.complete and first.ok, first
    assert (first.added, first.updated, first.deleted, first.fetched) == (SYNCED, 0, 0, SYNCED)
    assert sum(graph.downloads.values()) == FILES and sum(graph.conversions.values()) == WORD
    assert sum(graph.page_fetches.values()) == PAGES and set(graph.permission_reads.values()) == {1}
    assert "Forecast.xlsx" not in graph.downloads and "Old budget.md" not in graph.permission_reads
    assert first.not_synced == {".png files": 1, ".xlsx files": 1}, first.not_synced  # for the summary
    assert graph.tokens_issued == 1  # one token for the whole run
    before = await documents(candor, kb)
    assert len(before) == SYNCED and doc_id(graph, "Board pack.docx") in before

    closed = await ask(candor, kb, "On which day is the office closed?")  # public: an anyone link
    assert closed.route == "answered" and "24 December" in closed.text, closed.text
    assert graph.web_url(graph.find("Holiday calendar.md")) in {s.url for s in closed.sources}
    invoices = await ask(candor, kb, "Within how many days are supplier invoices paid?", "staff")
    assert "30 days" in invoices.text, invoices.text  # a Word file, converted by Graph
    assert "30 days" not in (await ask(candor, kb, "Within how many days are supplier invoices paid?")).text
    budget = await ask(candor, kb, "What is the 2025 travel budget?", "finance")  # three folders down
    assert "48000 euros" in budget.text, budget.text
    page = await ask(candor, kb, "When does the year-end close finish?", "staff")
    assert "15 January" in page.text and graph.page_url(graph.pages["p-close"]) in {s.url for s in page.sources}

    # between runs: one file edited (a new cTag), one deleted, one renamed, one re-permissioned
    graph.reset_counts()
    graph.edit("Travel budget.md", ["# Travel budget", "", "The 2025 travel budget is 52000 euros."])
    graph.repeated.add("Travel budget.md")  # also earlier in the feed, as it was: the last occurrence counts
    deleted = graph.delete("Vendor 3.md")
    renamed = graph.rename("Policy 2.md", "Policy two.md")
    restricted = graph.find("Audit notes.txt")
    restricted.inherits, restricted.permissions = False, [user("Hana Kim", "u-hana", "hana@contoso.com")]
    [second] = await candor.sync(config)
    assert (second.added, second.updated, second.deleted, second.fetched) == (0, 3, 1, 3), second
    assert dict(graph.downloads) == {"Travel budget.md": 1, "Policy two.md": 1, "Audit notes.txt": 1}
    assert sum(graph.permission_reads.values()) == FILES - 1 and set(graph.permission_reads.values()) == {1}
    assert sum(graph.page_fetches.values()) == 0
    after = await stored(candor, kb)
    assert doc_id(graph, deleted.name) not in after and len(after) == SYNCED - 1
    assert after[doc_id(graph, renamed.name)][1] == graph.web_url(renamed)  # the same document, moved
    assert after[doc_id(graph, "Audit notes.txt")][0] == ["hr"]
    assert "52000 euros" in (await ask(candor, kb, "What is the 2025 travel budget?", "finance")).text

    graph.reset_counts()
    [third] = await candor.sync(config)
    assert (third.added, third.updated, third.deleted, third.fetched, third.unchanged) == (0, 0, 0, 0, SYNCED - 1)
    assert sum(graph.downloads.values()) == 0 and sum(graph.page_fetches.values()) == 0


async def test_restricted_items_reach_only_readers_with_their_groups(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    [report] = await candor.sync(sources_file(tmp_path, source(graph, kb)))
    assert report.ok, report
    groups = {source: access for source, (access, _) in (await stored(candor, kb)).items()}

    def of(name: str) -> list[str]:
        return groups[doc_id(graph, name)]

    assert of("Month end.md") == ["finance", "staff"]  # the site's groups, inherited
    assert of("Board pack.docx") == ["finance-leads"]  # broken inheritance: an Entra group
    assert of("Payroll calendar.md") == ["payroll"]  # inherits its folder's SharePoint group
    assert of("Project Falcon.docx") == [NO_ONE]  # only people with no mapping
    assert of("Holiday calendar.md") == []  # an anyone link, mapped to public
    assert of("Code of conduct.md") == ["staff"]  # an organization-wide link only
    assert of("Shared notes.txt") == ["hr"]  # Hana (mapped); the guest it was shared with is left out
    assert groups[f"{graph.graph_url}/sites/{graph.site_id}/pages/p-home"] == ["staff"]

    dividend = "What dividend did the board approve?"
    assert "4 cents" not in (await ask(candor, kb, dividend)).text
    assert "4 cents" not in (await ask(candor, kb, dividend, "finance", "staff", "payroll")).text
    assert "4 cents" in (await ask(candor, kb, dividend, "finance-leads")).text
    payroll = "On which day does payroll run each month?"
    assert "25th" not in (await ask(candor, kb, payroll, "finance", "staff")).text
    assert "25th" in (await ask(candor, kb, payroll, "payroll")).text
    falcon = "When does Project Falcon close the acquisition?"
    for reader in [(), ("finance",), ("finance", "staff", "payroll", "finance-leads", "hr", NO_ONE)]:
        answer = await ask(candor, kb, falcon, *reader)
        assert "June" not in answer.text, (reader, answer.text)
    gifts = "Which gifts must be declared?"
    assert "50 euros" not in (await ask(candor, kb, gifts)).text
    assert "50 euros" in (await ask(candor, kb, gifts, "staff")).text


async def test_a_permission_change_alone_is_applied_without_other_downloads(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(graph, kb))
    await candor.sync(config)
    remote = graph.find("Remote work.md")
    remote.inherits, remote.permissions = False, [user("Dana Ruiz", "u-dana", "dana@contoso.com")]  # no cTag change
    graph.reset_counts()
    [again] = await candor.sync(config)
    assert (again.updated, again.fetched) == (1, 1) and dict(graph.downloads) == {"Remote work.md": 1}, again
    assert (await stored(candor, kb))[doc_id(graph, "Remote work.md")][0] == [NO_ONE]


async def test_a_failed_listing_or_a_vanished_site_removes_nothing(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(graph, kb))
    await candor.sync(config)
    before = await documents(candor, kb)
    graph.delete("Vendor 5.md")
    graph.delta_status = 503  # Retry-After absent: waited 1 s twice, then the listing fails
    [broken] = await candor.sync(config)
    assert broken.listing_error is not None and "503" in broken.listing_error and "/root/delta" in broken.listing_error
    assert (broken.deleted, broken.fetched) == (0, 0) and not broken.ok
    graph.delta_status, graph.site_gone = 200, True
    [gone] = await candor.sync(config)
    assert gone.listing_error is not None and "is not there (Graph answered 404)" in gone.listing_error
    assert gone.deleted == 0
    assert await documents(candor, kb) == before


async def test_refused_credentials_name_their_variables_and_other_sources_still_sync(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLD_SP_SECRET", "Qx8~expired-secret-value")
    config = sources_file(tmp_path, source(graph, kb, "stale", "OLD_SP_SECRET"), source(graph, kb, "intranet"))
    stale, fresh = await candor.sync(config)
    assert stale.listing_error is not None and f"source 'stale-{kb.name}'" in stale.listing_error
    assert "invalid_client, AADSTS7000215" in stale.listing_error
    assert "$SP_TENANT_ID, $SP_CLIENT_ID, $OLD_SP_SECRET" in stale.listing_error
    for value in ("Qx8~expired-secret-value", TENANT, CLIENT_ID):
        assert value not in stale.listing_error
    assert (stale.added, stale.deleted) == (0, 0)
    assert fresh.ok and fresh.added == SYNCED

    graph.forbidden = True  # a token, but an app without the Graph permissions
    [refused] = await candor.sync(sources_file(tmp_path, source(graph, kb, "intranet")))
    assert refused.listing_error is not None and "HTTP 403 from Graph" in refused.listing_error
    assert "$SP_CLIENT_SECRET" in refused.listing_error and refused.deleted == 0
    assert len(await documents(candor, kb)) == SYNCED


async def test_throttling_is_waited_out_and_a_failing_item_conversion_or_permission_is_skipped(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(graph, kb))
    drive = graph.find("Month end.md").drive_id
    delta = f"/v1.0/drives/{drive}/root/delta"
    pages = -(-sum(1 for n in graph.nodes.values() if n.drive_id == drive) // graph.page_size)
    graph.throttled[delta] = 2
    [first] = await candor.sync(config)
    assert graph.requested[delta] == 2 + pages and graph.throttled[delta] == 0  # two 429s, then its pages
    assert first.ok and first.added == SYNCED
    before = await documents(candor, kb)
    passwords = doc_id(graph, "Passwords.txt")
    readers = (await stored(candor, kb))[passwords][0]
    assert readers and readers != [NO_ONE]

    graph.edit("Q1 summary.pdf", ["Q1 summary", "Q1 revenue grew by 15 percent."])
    graph.failing.add("Q1 summary.pdf")
    graph.edit("Incident response.docx", ["Incident response", "Report a security incident within 2 hours."])
    graph.unconvertible.add("Incident response.docx")
    graph.failing_permissions.add("Passwords.txt")
    [second] = await candor.sync(config)
    assert sorted(second.skipped) == sorted(
        [
            (doc_id(graph, "Q1 summary.pdf"), "Graph answered 500"),
            (doc_id(graph, "Incident response.docx"), "Graph could not convert it to PDF (HTTP 406)"),
            (doc_id(graph, "Passwords.txt"), "its permissions could not be read; its stored version stays"),
        ]
    )
    assert second.complete and second.deleted == 0 and await documents(candor, kb) == before
    assert (await stored(candor, kb))[passwords][0] == [NO_ONE]  # who may read it is unknown: no one

    graph.failing.clear()
    graph.unconvertible.clear()
    graph.failing_permissions.clear()
    [third] = await candor.sync(config)
    # the two edited files, and the copy narrowed in place, fetched again to get its readers back
    assert third.ok and (third.updated, third.fetched) == (3, 3), third
    assert (await stored(candor, kb))[passwords][0] == readers
    assert "15 percent" in (await ask(candor, kb, "By how much did Q1 revenue grow?", "finance")).text


async def test_an_unknown_tenant_or_an_unreachable_sign_in_stops_the_source_with_a_line(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SP_TENANT_ID", "00000000-0000-0000-0000-00000000dead")
    [unknown] = await candor.sync(sources_file(tmp_path, source(graph, kb)))
    assert unknown.listing_error is not None and "does not know the tenant" in unknown.listing_error
    assert "$SP_TENANT_ID" in unknown.listing_error and "00000000dead" not in unknown.listing_error

    monkeypatch.setenv("SP_TENANT_ID", TENANT)
    closed = source(graph, kb).replace(graph.authority, "https://127.0.0.1:9")  # nothing listens on port 9
    [unreachable] = await candor.sync(sources_file(tmp_path, closed))
    assert unreachable.listing_error is not None and "could not be reached" in unreachable.listing_error
    assert (unknown.added, unreachable.added, graph.tokens_issued) == (0, 0, 0)
