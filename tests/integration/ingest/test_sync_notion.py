"""`Candor.sync` of a Notion source against a local fake Notion API (tests/fakes/notion.py), through the
real `notion-client`, into the real Postgres with the real embedder: the first sync and answers
citing a page (nested pages, a database row, a table, a toggle, a PDF), a re-sync that reads the
blocks of the edited page only, a trashed and an unshared page deleted, a restricted subtree,
configured roots, a failed search that removes nothing, a refused token, a 429 and a 5xx, and a page
whose place in the workspace cannot be read (its parent block's lookup answers 503): it and its PDF
are readable by no one, never public, and not deleted, until the lookup answers again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.model.answers import Answer, Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.confluence import minimal_pdf
from tests.fakes.notion import TOKEN, FakeNotion, pdf_block

PAGES = 35
"""30 pages (handbook, Engineering's 20, Support's 5, People's 4) and the 5 rows of Incidents."""
SYNCED = PAGES + 1
"""... and the PDF on the rollback runbook (the externally hosted PDF and the image are not)."""


@pytest.fixture
def notion(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNotion]:
    monkeypatch.setenv("NOTION_TOKEN", TOKEN)
    fake = FakeNotion().start()
    yield fake
    fake.stop()


def source(
    notion: FakeNotion,
    kb: KnowledgeBase,
    name: str = "notion",
    extra: str = "",
    token: str = "NOTION_TOKEN",
    restricted: str = "People",
) -> str:
    """A source called `name`-<kb> (sync state is kept by name, and the session's tests share a database)
    whose page `restricted` and everything below it is for `hr` only."""
    return f"""
  - name: {name}-{kb.name}
    kind: notion
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    access: []
    base_url: {notion.url}
    requests_per_second: 500
    page_access: {{"{notion.find(restricted).id}": [hr]}}
    credentials: {{token: {token}}}{extra}
"""


def sources_file(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:" + "".join(entries))
    return path


def page_doc(notion: FakeNotion, title: str) -> str:
    return f"notion:page:{notion.find(title).id}"


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


async def test_a_workspace_syncs_answers_with_the_page_url_and_resyncs_only_the_edited_page(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(notion, kb))
    [first] = await candor.sync(config)
    assert first.listing_error is None and first.complete and first.ok, first
    assert (first.added, first.updated, first.deleted, first.fetched) == (SYNCED, 0, 0, SYNCED)
    assert set(notion.block_requests) == set(notion.pages) and sum(notion.downloads.values()) == 1
    assert notion.file_authorizations == []  # the token goes to the API only
    stored = await documents(candor, kb)
    assert len(stored) == SYNCED and page_doc(notion, "Glossary") in stored  # a page inside a toggle

    deploys = await ask(candor, kb, "When are production deploys frozen?")
    assert deploys.route == "answered" and "Friday after 14:00" in deploys.text, deploys.text
    assert notion.page_url(notion.find("Deployments")) in {s.url for s in deploys.sources}
    staging = await ask(candor, kb, "When does the staging cluster restart?")
    assert "Sunday at 03:00" in staging.text, staging.text  # inside a toggle
    rollback = await ask(candor, kb, "How long does a rollback to the previous release take?")
    assert rollback.route == "answered" and "7 minutes" in rollback.text, rollback.text  # the PDF
    outage = await ask(candor, kb, "How long did the checkout outage last?")
    assert "42 minutes" in outage.text, outage.text  # a database row's content
    assert notion.page_url(notion.find("Checkout outage")) in {s.url for s in outage.sources}
    escalate = await ask(candor, kb, "When should the backup be paged?")
    assert "12 minutes" in escalate.text, escalate.text  # a list nested in a numbered list
    week = await ask(candor, kb, "Who is the on-call engineer in week 2?")
    assert "Engineer: Priya" in week.text, week.text  # a table row, read with its header

    # between runs: one page edited (a new last_edited_time), one trashed, one no longer shared
    notion.reset_counts()
    edited = notion.edit("Code review", "Every change needs three approving reviews before it merges.")
    trashed = notion.trash("Databases note 2")
    unshared = notion.find("Returns")
    unshared.shared = False
    [second] = await candor.sync(config)
    assert (second.added, second.updated, second.deleted, second.fetched) == (0, 1, 2, 1), second
    assert second.unchanged == SYNCED - 3
    assert dict(notion.block_requests) == {edited.id: 2}  # its blocks, 2 pages of them; no other page's
    assert sum(notion.downloads.values()) == 0
    after = await documents(candor, kb)
    assert page_doc(notion, trashed.title) not in after and f"notion:page:{unshared.id}" not in after
    assert after[page_doc(notion, "Code review")] != stored[page_doc(notion, "Code review")]
    reviews = await ask(candor, kb, "How many approving reviews does a change need before it merges?")
    assert "three approving reviews" in reviews.text, reviews.text

    notion.reset_counts()
    [third] = await candor.sync(config)
    assert (third.added, third.updated, third.deleted, third.fetched) == (0, 0, 0, 0), third
    assert sum(notion.block_requests.values()) == 0 and sum(notion.downloads.values()) == 0


async def test_a_renamed_page_is_updated_not_duplicated(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(notion, kb))
    await candor.sync(config)
    page = notion.find("Shipping")
    page.title, page.edited = "Delivery times", page.edited + 1
    [again] = await candor.sync(config)
    assert (again.added, again.updated, again.deleted) == (0, 1, 0), again
    rows = await candor.store.fetch_all(
        "SELECT title, url FROM documents WHERE kb_id = %(kb)s AND source = %(s)s",
        {"kb": kb.id, "s": f"notion:page:{page.id}"},
    )
    assert [tuple(row) for row in rows] == [("Delivery times", notion.page_url(page))]
    assert len(await documents(candor, kb)) == SYNCED


async def test_the_restricted_subtree_reaches_only_its_group(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    [report] = await candor.sync(sources_file(tmp_path, source(notion, kb)))
    assert report.ok, report
    groups = await access_groups(candor, kb)
    for title in ("People", "Salary bands", "Bonus scheme", "Leave policy"):
        assert groups[page_doc(notion, title)] == ["hr"], title
    assert groups[page_doc(notion, "Deployments")] == [] and groups[page_doc(notion, "Checkout outage")] == []

    salary = "Where does the senior engineer salary band start?"
    assert "71000" not in (await ask(candor, kb, salary)).text
    assert "71000" not in (await ask(candor, kb, salary, "staff")).text
    assert "71000" in (await ask(candor, kb, salary, "hr")).text
    bonus = "What is the annual bonus capped at?"  # three levels down, below the configured page
    assert "15 percent" not in (await ask(candor, kb, bonus)).text
    assert "15 percent" in (await ask(candor, kb, bonus, "hr")).text
    handbook = await candor.store.fetch_all(
        "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.source = %(s)s",
        {"s": page_doc(notion, "Acme handbook")},
    )
    assert handbook and not any("People" in str(text) for (text,) in handbook)  # the public page names no hr page


async def test_roots_limit_the_sync_to_their_subtrees(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    database = f"https://www.notion.so/acme/Incidents-{notion.database_id.replace('-', '')}"  # a URL will do
    roots = f"\n    roots: [{notion.find('Engineering').id}, {database}]"
    [report] = await candor.sync(sources_file(tmp_path, source(notion, kb, extra=roots)))
    assert report.ok, report
    stored = await documents(candor, kb)
    assert len(stored) == 20 + 5 + 1  # Engineering and below, the 5 rows, the PDF
    assert page_doc(notion, "Backups") in stored and page_doc(notion, "Login errors") in stored
    assert page_doc(notion, "Support") not in stored and page_doc(notion, "Acme handbook") not in stored

    missing = "\n    roots: [0123456789abcdef0123456789abcdef]"
    [refused] = await candor.sync(sources_file(tmp_path, source(notion, kb, extra=missing)))
    assert refused.listing_error is not None and "not shared with the integration" in refused.listing_error
    assert refused.deleted == 0 and await documents(candor, kb) == stored


async def test_a_failed_search_removes_nothing_and_a_refused_token_is_named(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = sources_file(tmp_path, source(notion, kb))
    await candor.sync(config)
    before = await documents(candor, kb)
    notion.search_status = 503
    notion.trash("Backups")
    [broken] = await candor.sync(config)
    assert broken.listing_error is not None and "503" in broken.listing_error, broken
    assert broken.deleted == 0 and await documents(candor, kb) == before

    notion.search_status = 200
    monkeypatch.setenv("OLD_NOTION_TOKEN", "ntn_revoked_secret_value")
    stale_config = sources_file(tmp_path, source(notion, kb, "stale", token="OLD_NOTION_TOKEN"))
    [stale] = await candor.sync(stale_config)
    assert stale.listing_error is not None and "HTTP 401" in stale.listing_error
    assert "$OLD_NOTION_TOKEN" in stale.listing_error and "ntn_revoked_secret_value" not in stale.listing_error
    assert (stale.added, stale.deleted) == (0, 0) and await documents(candor, kb) == before


async def test_a_throttled_search_is_waited_for_and_a_failing_page_keeps_its_stored_version(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(notion, kb))
    notion.throttled["POST /v1/search"] = 2
    [first] = await candor.sync(config)
    assert notion.requested["POST /v1/search"] == 8 + 2  # 36 results at 5 a page, and the two 429s
    assert first.ok and first.added == SYNCED

    broken = notion.edit("Escalations", "Tier 2 answers escalated tickets within 2 hours.")
    notion.failing.add(broken.id)
    before = await documents(candor, kb)
    [second] = await candor.sync(config)
    assert [doc for doc, _ in second.skipped] == [f"notion:page:{broken.id}"], second.skipped
    assert "500" in second.skipped[0][1] and second.complete and second.deleted == 0
    assert await documents(candor, kb) == before  # the stored version stays

    notion.failing.clear()
    [third] = await candor.sync(config)  # the skipped page was not remembered: it is read now
    assert (third.updated, third.fetched) == (1, 1) and third.ok, third


GLOSSARY_PDF = "glossary-terms.pdf"
GLOSSARY_FACT = "A priority ticket is answered within 35 minutes."


def file_doc(notion: FakeNotion, title: str, name: str) -> str:
    """The source id of the PDF `name` uploaded to page `title`."""
    block = next(b for b in notion.find(title).blocks if b.data.get("name") == name)
    return f"notion:file:{block.id}"


async def place_unreadable_then_readable(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, config: Path, expected: int
) -> None:
    """Glossary sits in a toggle block of Support, which `page_access` gives to hr only, and has a PDF.
    The first run stores both for hr; in the second, the toggle's lookup answers 503, so Glossary's
    place (and so its groups, and whether it lies below a root) cannot be read: it and its PDF must
    be readable by no one, never public (the source's `access` is `[]`), and neither is deleted; the
    third run, the lookup answering again, gives them hr back."""
    notion.attach("Glossary", pdf_block(GLOSSARY_PDF, minimal_pdf(["Glossary terms", GLOSSARY_FACT])))
    glossary, pdf = page_doc(notion, "Glossary"), file_doc(notion, "Glossary", GLOSSARY_PDF)
    [first] = await candor.sync(config)
    assert first.ok and first.added == expected, first
    groups = await access_groups(candor, kb)
    assert groups[glossary] == ["hr"] and groups[pdf] == ["hr"], groups
    question = "How fast is a priority ticket answered?"
    assert "35 minutes" in (await ask(candor, kb, question, "hr")).text

    toggle = notion.find("Glossary").parent[1]
    assert toggle is not None and toggle not in notion.pages  # a block, not a page
    notion.failing_blocks.add(toggle)
    [second] = await candor.sync(config)
    assert second.listing_error is None and second.complete and second.deleted == 0, second
    groups = await access_groups(candor, kb)
    assert glossary in groups and pdf in groups  # nothing deleted
    assert groups[pdf] == [NO_ONE], groups[pdf]  # never public (`access: []`), nor still hr
    assert groups[glossary] == [NO_ONE], groups[glossary]
    assert "35 minutes" not in (await ask(candor, kb, question)).text
    assert "35 minutes" not in (await ask(candor, kb, question, "hr")).text
    assert len(await documents(candor, kb)) == expected

    notion.failing_blocks.clear()
    [third] = await candor.sync(config)
    assert third.ok and third.deleted == 0, third
    groups = await access_groups(candor, kb)
    assert groups[glossary] == ["hr"] and groups[pdf] == ["hr"], groups
    assert "35 minutes" in (await ask(candor, kb, question, "hr")).text
    assert "35 minutes" not in (await ask(candor, kb, question)).text


async def test_a_page_whose_place_cannot_be_read_is_readable_by_no_one_and_so_is_its_pdf(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = sources_file(tmp_path, source(notion, kb, restricted="Support"))
    with caplog.at_level("WARNING", logger="candor.sync.notion"):
        await place_unreadable_then_readable(candor, kb, notion, config, SYNCED + 1)
    glossary = notion.find("Glossary").id
    assert any(glossary in r.getMessage() and "no one" in r.getMessage() for r in caplog.records), caplog.text


async def test_with_roots_a_page_whose_place_cannot_be_read_is_kept_not_deleted(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    roots = f"\n    roots: [{notion.find('Support').id}]"
    config = sources_file(tmp_path, source(notion, kb, extra=roots, restricted="Support"))
    # Support, Glossary, Shipping, Returns, Escalations and Glossary's PDF
    await place_unreadable_then_readable(candor, kb, notion, config, 6)
