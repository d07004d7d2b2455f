"""`candor sync` of a Google Drive source as its own process, against a local fake Drive and token
endpoint: the summary, a re-sync that downloads nothing, a deletion between runs, `candor ask`
citing a synced file's link, a restricted file only with its group, and a refused key named by its
variable (never its value)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli
from tests.fakes.gdrive import FakeDrive, service_account_key


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    fake = FakeDrive().start()
    yield fake
    fake.stop()


async def test_candor_sync_a_google_drive_source(
    candor: Candor, kb: KnowledgeBase, drive: FakeDrive, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: drive-{kb.name}
    kind: gdrive
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    api_url: {drive.url}
    folders: [{drive.root}]
    drives: [{drive.drive}]
    permissions:
      groups: {{hr-team@example.com: [hr], support-team@example.com: [support]}}
      domains: {{example.com: [staff]}}
      anyone: public
    credentials: {{service_account: GOOGLE_SERVICE_ACCOUNT_JSON}}
"""
    )
    env = {"GOOGLE_SERVICE_ACCOUNT_JSON": drive.key_json()}
    done = run_cli(candor, tmp_path, "sync", "--config", str(config), **env)
    assert done.returncode == 0, done.stderr
    summary = f"drive-{kb.name} (gdrive → {kb.name}): 29 added, 0 updated, 0 unchanged, 0 deleted, 0 skipped"
    assert summary in done.stdout
    left_out = f"drive-{kb.name} (gdrive → {kb.name}): not synced, as Candor does not read them: "
    assert left_out + "3 Google Sheets, 1 Google Slides, 2 images" in done.stdout  # one line, not one per file
    assert done.stdout.count("Google Sheets") == 1

    drive.reset_counts()
    trashed = drive.trash("Refund timing.txt")
    again = run_cli(candor, tmp_path, "sync", CANDOR_SOURCES=str(config), **env)
    assert "0 added, 0 updated, 28 unchanged, 1 deleted, 0 skipped; 0 fetched in full" in again.stdout, again.stdout
    assert sum(drive.downloads.values()) == 0
    assert f"gdrive:{trashed.id}" not in await candor.store.documents(kb)

    question = "Within how many days may customers return unworn items?"
    asked = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--access", "support", "--json", question)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["route"] == "answered" and "45 days" in answer["text"]
    assert drive.find("Returns policy").link in {s["url"] for s in answer["sources"]}

    salary = "What is the 2026 salary review budget?"
    public = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", salary)
    assert "4.5 percent" not in public.stdout  # no --access: public files only
    allowed = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--access", "hr", "--json", salary)
    assert "4.5 percent" in json.loads(allowed.stdout)["text"]

    stranger = json.dumps(service_account_key(drive.key["token_uri"], drive.key["client_email"]))
    refused = run_cli(candor, tmp_path, "sync", "--config", str(config), GOOGLE_SERVICE_ACCOUNT_JSON=stranger)
    assert refused.returncode == 3
    assert "could not be listed, nothing removed" in refused.stderr
    assert "$GOOGLE_SERVICE_ACCOUNT_JSON" in refused.stderr and "invalid_grant" in refused.stderr
    assert "PRIVATE KEY" not in refused.stderr + refused.stdout
    assert json.loads(stranger)["private_key_id"] not in refused.stderr + refused.stdout
    assert len(await candor.store.documents(kb)) == 28
