"""`Candor.sync` of a Google Drive source against a local fake Drive (tests/fakes/gdrive.py), into the real
Postgres with the real embedder: the first sync and answers citing a file's link, restricted files
(a mapped group, user and domain; anyone with the link, `anyone: public` and not mapped; only unmapped
people), a re-sync that downloads only what changed, a sharing change applied without a new version, a
trashed file deleted, a listing that fails, one Drive says is incomplete, or a folder that vanished
removing nothing, a refused key, 429s, a 5xx, an export Google refuses, and permissions that cannot be
read making a file no one's until they can be read again."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.model.answers import Answer, Question
from rag.model.types import NO_ONE, AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.gdrive import FakeDrive, permission, service_account_key

SYNCED = 29
"""The folder tree: 2 at its top, 5 in Policies, 3 in HR, 3 in Benefits, 9 in Engineering; the shared
drive: 7 (one in its Escalations folder). Not synced: 3 Sheets, 1 Slides, 2 images."""


@pytest.fixture
def drive(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDrive]:
    fake = FakeDrive().start()
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT_JSON", fake.key_json())
    yield fake
    fake.stop()


def source(
    drive: FakeDrive,
    kb: KnowledgeBase,
    name: str = "drive",
    variable: str = "GOOGLE_SERVICE_ACCOUNT_JSON",
    anyone: str | None = "public",
) -> str:
    """A source called `name`-<kb> (sync state is kept by name, and the session's tests share a database);
    `anyone`: what a link anyone can open maps to (None: not mapped)."""
    link = "" if anyone is None else f"\n      anyone: {anyone}"
    return f"""
  - name: {name}-{kb.name}
    kind: gdrive
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    api_url: {drive.url}
    folders: [{drive.root}]
    drives: [{drive.drive}]
    subject: sync-admin@example.com
    max_wait_seconds: 1
    permissions:
      users: {{ana@example.com: [hr]}}
      groups: {{hr-team@example.com: [hr], support-team@example.com: [support]}}
      domains: {{example.com: [staff]}}{link}
    credentials: {{service_account: {variable}}}
"""


def sources_file(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:" + "".join(entries))
    return path


def gid(drive: FakeDrive, name: str) -> str:
    return f"gdrive:{drive.find(name).id}"


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


async def test_a_drive_syncs_answers_with_the_file_s_link_and_resyncs_only_what_changed(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = sources_file(tmp_path, source(drive, kb))
    with caplog.at_level(logging.INFO, logger="candor.sync.gdrive"):
        [first] = await candor.sync(config)
    assert first.listing_error is None and first.complete and first.ok, first
    assert (first.added, first.updated, first.deleted, first.fetched) == (SYNCED, 0, 0, SYNCED)
    assert sum(drive.downloads.values()) == SYNCED and drive.grants == 1
    assert drive.subjects == ["sync-admin@example.com"]  # domain-wide delegation: the grant's `sub`
    skipped = [r.getMessage() for r in caplog.records if "not documents Candor reads" in r.getMessage()]
    assert skipped == [
        f"source 'drive-{kb.name}': 6 files are not documents Candor reads, not synced: "
        "3 Google Sheets, 1 Google Slides, 2 images"
    ]
    assert first.not_synced == {"Google Sheets": 3, "Google Slides": 1, "images": 2}  # for the summary
    stored = await documents(candor, kb)
    assert (
        len(stored) == SYNCED and gid(drive, "Pension plan.pdf") in stored and gid(drive, "Budget 2026") not in stored
    )

    returns = await ask(candor, kb, "Within how many days may customers return unworn items?", "support")
    assert returns.route == "answered" and "45 days" in returns.text, returns.text
    assert drive.find("Returns policy").link in {s.url for s in returns.sources}
    deploys = await ask(candor, kb, "When are production deploys frozen?", "staff")
    assert "Friday after 14:00" in deploys.text, deploys.text
    warranty = await ask(candor, kb, "How long does the Aurora kettle warranty last?", "support")
    assert "3 years" in warranty.text and drive.find("Kettle warranty.pdf").link in {s.url for s in warranty.sources}

    # between runs: a Doc edited, one renamed (both new versions), a text file trashed
    drive.reset_counts()
    edited = drive.edit("Travel policy", "Travel.\nEconomy class is required for flights shorter than 8 hours.")
    renamed = drive.rename("Shipping times", "Shipping times 2026")
    trashed = drive.trash("Gym discount.txt")
    [second] = await candor.sync(config)
    assert (second.added, second.updated, second.deleted, second.fetched) == (0, 2, 1, 2), second
    assert second.unchanged == SYNCED - 3
    assert dict(drive.downloads) == {edited.id: 1, renamed.id: 1}
    after = await documents(candor, kb)
    assert f"gdrive:{trashed.id}" not in after and len(after) == SYNCED - 1
    assert after[f"gdrive:{edited.id}"] != stored[f"gdrive:{edited.id}"]
    titles = await candor.store.fetch_all(
        "SELECT title FROM documents WHERE kb_id = %(kb)s AND source = %(s)s",
        {"kb": kb.id, "s": f"gdrive:{renamed.id}"},
    )
    assert [t for (t,) in titles] == ["Shipping times 2026"]  # the same document, its new name
    travel = await ask(candor, kb, "For flights shorter than how many hours is economy class required?", "staff")
    assert "8 hours" in travel.text, travel.text

    drive.reset_counts()
    [third] = await candor.sync(config)
    assert (third.added, third.updated, third.deleted, third.fetched) == (0, 0, 0, 0)
    assert sum(drive.downloads.values()) == 0
    assert sum(drive.permission_reads.values()) == 7  # a shared drive's files: their permissions, every run


async def test_restricted_files_reach_only_readers_with_their_groups(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    [report] = await candor.sync(sources_file(tmp_path, source(drive, kb)))
    assert report.ok, report
    groups = await access_groups(candor, kb)

    def of(name: str) -> list[str]:
        return groups[gid(drive, name)]

    assert of("Salary review") == ["hr"]  # a mapped group; its owner and the service account are left out
    assert of("Pension plan.pdf") == ["hr"]  # four levels down
    assert of("Promotion process") == ["hr"]  # a mapped user
    assert of("Leave policy") == ["staff"]  # a mapped domain
    assert of("Board minutes") == [NO_ONE]  # only people with no mapping
    assert of("Office guide") == [] and of("Public FAQ") == []  # anyone with the link, `anyone: public`
    assert of("Returns policy") == ["support"] and of("Escalation matrix") == ["support"]  # the drive's members

    salary = "What is the 2026 salary review budget?"
    assert "4.5 percent" not in (await ask(candor, kb, salary)).text
    assert "4.5 percent" not in (await ask(candor, kb, salary, "staff", "support")).text
    allowed = await ask(candor, kb, salary, "hr")
    assert allowed.route == "answered" and "4.5 percent" in allowed.text, allowed.text

    board = "How much did the board approve for the acquisition of Northwind Traders?"
    for reader in [(), ("staff",), ("hr", "staff", "support", NO_ONE)]:
        answer = await ask(candor, kb, board, *reader)
        assert "12 million" not in answer.text, (reader, answer.text)

    wifi = await ask(candor, kb, "What is the guest wifi network called?")
    assert wifi.route == "answered" and "acme-lobby" in wifi.text, wifi.text
    leave = "How many days of paid annual leave do employees receive?"
    assert "27 days" not in (await ask(candor, kb, leave)).text
    assert "27 days" in (await ask(candor, kb, leave, "staff")).text


async def test_a_link_anyone_can_open_adds_no_one_when_anyone_is_not_mapped(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    """As in a SharePoint source with `anonymous` unset: the link is left out like any unmapped reader,
    so a file only it opens is no one's, and one the drive's members also open keeps their groups."""
    [report] = await candor.sync(sources_file(tmp_path, source(drive, kb, anyone=None)))
    assert report.ok, report
    groups = await access_groups(candor, kb)
    assert groups[gid(drive, "Office guide")] == [NO_ONE]  # its owner, the service account, the link
    assert groups[gid(drive, "Public FAQ")] == ["support"]  # the shared drive's members, not the link
    wifi = await ask(candor, kb, "What is the guest wifi network called?")
    assert "acme-lobby" not in wifi.text, wifi.text
    assert "acme-lobby" not in (await ask(candor, kb, "What is the guest wifi network called?", "staff")).text


async def test_a_sharing_change_is_applied_though_the_version_stays(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(drive, kb))
    await candor.sync(config)
    drive.reset_counts()
    narrowed = drive.share("Dental cover", [permission("group", "hr-team@example.com")])
    opened = drive.share("Expense policy", [permission("anyone")])
    closed = drive.share("Welcome to Acme", [permission("user", "intern@example.com")])
    [again] = await candor.sync(config)
    assert (again.updated, again.fetched) == (3, 3), again  # stored again under their new groups
    assert dict(drive.downloads) == {narrowed.id: 1, opened.id: 1, closed.id: 1}
    groups = await access_groups(candor, kb)
    assert groups[f"gdrive:{narrowed.id}"] == ["hr"]
    assert groups[f"gdrive:{opened.id}"] == []
    assert groups[f"gdrive:{closed.id}"] == [NO_ONE]
    assert "two check-ups" not in (await ask(candor, kb, "How many dental check-ups per year?", "staff")).text


async def test_a_failed_listing_or_a_vanished_folder_or_drive_removes_nothing(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, source(drive, kb))
    await candor.sync(config)
    before = await documents(candor, kb)
    drive.trash("Leave policy")

    drive.listing_status = 503
    [failed] = await candor.sync(config)
    assert failed.listing_error is not None and "503" in failed.listing_error and failed.deleted == 0
    drive.listing_status = 200

    drive.vanish(drive.drive)
    [no_drive] = await candor.sync(config)
    assert no_drive.listing_error is not None and f"no shared drive {drive.drive}" in no_drive.listing_error

    drive.vanish(drive.root)
    drive.drives.clear()
    [no_folder] = await candor.sync(
        sources_file(tmp_path, source(drive, kb).replace(f"    drives: [{drive.drive}]\n", ""))
    )
    assert no_folder.listing_error is not None and f"no folder {drive.root}" in no_folder.listing_error
    assert (no_drive.deleted, no_folder.deleted) == (0, 0)
    assert await documents(candor, kb) == before


async def test_a_search_drive_says_is_incomplete_removes_nothing(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    """Drive may answer a files.list with `incompleteSearch: true` and some files left out: taken as the
    listing, those files would be deleted as gone."""
    config = sources_file(tmp_path, source(drive, kb))
    await candor.sync(config)
    before = await documents(candor, kb)
    drive.incomplete_search = {drive.find("Leave policy").id, drive.find("Returns policy").id}
    [partial] = await candor.sync(config)
    assert partial.listing_error is not None and partial.deleted == 0, partial
    assert "incomplete (incompleteSearch)" in partial.listing_error and "removes nothing" in partial.listing_error
    assert await documents(candor, kb) == before

    drive.incomplete_search.clear()
    [whole] = await candor.sync(config)
    assert whole.ok and whole.complete and (whole.deleted, whole.unchanged) == (0, SYNCED), whole


async def test_a_refused_key_names_its_variable_and_other_sources_still_sync(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = service_account_key(drive.key["token_uri"], drive.key["client_email"])  # a key Google does not know
    monkeypatch.setenv("OLD_GOOGLE_KEY", json.dumps(other))
    config = sources_file(tmp_path, source(drive, kb, "stale", "OLD_GOOGLE_KEY"), source(drive, kb))
    stale, fresh = await candor.sync(config)
    assert stale.listing_error is not None
    assert f"source 'stale-{kb.name}'" in stale.listing_error and "invalid_grant" in stale.listing_error
    assert "$OLD_GOOGLE_KEY" in stale.listing_error
    assert other["private_key_id"] not in stale.listing_error and "PRIVATE KEY" not in stale.listing_error
    assert (stale.added, stale.deleted) == (0, 0) and drive.refused_grants == 1
    assert fresh.ok and fresh.added == SYNCED

    drive.revoked = True  # the key deleted in the console: the next grant is refused
    drive.expire_tokens()
    [revoked] = await candor.sync(sources_file(tmp_path, source(drive, kb)))
    assert revoked.listing_error is not None and "$GOOGLE_SERVICE_ACCOUNT_JSON" in revoked.listing_error
    assert revoked.deleted == 0 and len(await documents(candor, kb)) == SYNCED


async def test_throttling_is_waited_out_and_a_failing_file_is_skipped(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    drive.throttled["/drive/v3/files"] = 2
    drive.rate_limited[f"/drive/v3/drives/{drive.drive}"] = 1
    broken, large = drive.find("Engineering note 3"), drive.find("Engineering note 5")
    drive.failing.add(broken.id)
    drive.too_large.add(large.id)
    config = sources_file(tmp_path, source(drive, kb))
    [report] = await candor.sync(config)
    assert drive.throttled["/drive/v3/files"] == 0 and drive.rate_limited[f"/drive/v3/drives/{drive.drive}"] == 0
    assert sorted(report.skipped) == sorted(
        [
            (f"gdrive:{broken.id}", "Drive answered 500 (backendError)"),
            (
                f"gdrive:{large.id}",
                "Google would not export it as HTML: larger than the 10 MB export limit (exportSizeLimitExceeded)",
            ),
        ]
    )
    assert report.added == SYNCED - 2 and report.complete

    drive.failing.clear()
    drive.too_large.clear()
    drive.expire_tokens_after = 5  # the access token expires during the run: a new one is asked for, once
    [again] = await candor.sync(config)
    assert (again.added, again.fetched) == (2, 2) and again.ok
    assert drive.grants == 3  # the first run's, this run's, and its renewal


async def test_a_file_whose_permissions_cannot_be_read_is_no_one_s_until_they_can(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Kept with its old groups, a stored copy could stay open to readers Drive has since removed: it is
    stored again as no one's (as a Confluence page whose restrictions cannot be read), and gets its
    groups back once Drive gives its permissions again. Both paths: a folder's file (the listing leaves
    out the permissions of a file the service account cannot share) and a shared drive's."""
    config = sources_file(tmp_path, source(drive, kb))
    [first] = await candor.sync(config)
    assert first.ok, first
    leave, macros = drive.find("Leave policy"), drive.find("Macros.md")
    before = await access_groups(candor, kb)
    assert (before[f"gdrive:{leave.id}"], before[f"gdrive:{macros.id}"]) == (["staff"], ["support"])
    question = "How many days of paid annual leave do employees receive?"
    assert "27 days" in (await ask(candor, kb, question, "staff")).text

    drive.permissions_failing |= {leave.id, macros.id}
    with caplog.at_level(logging.WARNING, logger="candor.sync.gdrive"):
        [unreadable] = await candor.sync(config)
    assert unreadable.ok and unreadable.skipped == [] and unreadable.deleted == 0, unreadable
    assert sorted(doc for _, doc in unreadable.changes) == sorted([f"gdrive:{leave.id}", f"gdrive:{macros.id}"])
    during = await access_groups(candor, kb)
    assert (during[f"gdrive:{leave.id}"], during[f"gdrive:{macros.id}"]) == ([NO_ONE], [NO_ONE])
    assert "27 days" not in (await ask(candor, kb, question, "staff")).text
    warned = [r.getMessage() for r in caplog.records if "until its permissions can be read" in r.getMessage()]
    line = f"source 'drive-{kb.name}': 'Leave policy' (file {leave.id}) is readable by no one until its permissions"
    assert len(warned) == 2 and f"{line} can be read" in warned, warned

    drive.permissions_failing.clear()
    [readable] = await candor.sync(config)
    assert readable.ok and readable.updated == 2, readable
    assert await access_groups(candor, kb) == before
    assert "27 days" in (await ask(candor, kb, question, "staff")).text
