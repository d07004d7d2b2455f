"""`candor sync` of a Notion source as its own process, against a local fake Notion API: the summary,
a re-sync that reads no page's blocks, a page edited and one trashed between runs, `candor ask`
citing a synced page's URL (and not giving the restricted subtree without its group), and a refused
token named by its variable (never its value)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli
from tests.fakes.notion import TOKEN, FakeNotion


@pytest.fixture
def notion() -> Iterator[FakeNotion]:
    fake = FakeNotion().start()
    yield fake
    fake.stop()


async def test_candor_sync_a_notion_source(
    candor: Candor, kb: KnowledgeBase, notion: FakeNotion, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: notion-{kb.name}
    kind: notion
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    access: []
    base_url: {notion.url}
    requests_per_second: 500
    page_access: {{"{notion.find("People").id}": [hr]}}
    credentials: {{token: NOTION_TOKEN}}
"""
    )
    env = {"NOTION_TOKEN": TOKEN}
    done = run_cli(candor, tmp_path, "sync", "--config", str(config), **env)
    assert done.returncode == 0, done.stderr
    assert (
        f"notion-{kb.name} (notion → {kb.name}): 36 added, 0 updated, 0 unchanged, 0 deleted, 0 skipped" in done.stdout
    )
    assert TOKEN not in done.stdout + done.stderr

    notion.reset_counts()
    again = run_cli(candor, tmp_path, "sync", CANDOR_SOURCES=str(config), **env)
    assert "0 added, 0 updated, 36 unchanged, 0 deleted, 0 skipped; 0 fetched in full" in again.stdout, again.stdout
    assert sum(notion.block_requests.values()) == 0 and sum(notion.downloads.values()) == 0

    edited = notion.edit("Returns", "Returns are accepted for 60 days.")
    notion.trash("Support")  # the page only: its child pages stay shared in this fake
    third = run_cli(candor, tmp_path, "sync", "--config", str(config), **env)
    assert "0 added, 1 updated, 34 unchanged, 1 deleted, 0 skipped; 1 fetched in full" in third.stdout, third.stdout
    assert dict(notion.block_requests) == {edited.id: 1}

    asked = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", "For how many days are returns accepted?")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["route"] == "answered" and "60 days" in answer["text"], answer["text"]
    assert notion.page_url(edited) in {s["url"] for s in answer["sources"]}

    salary = "Where does the senior engineer salary band start?"
    public = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", salary)
    assert "71000" not in public.stdout  # no --access: public pages only
    hr = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--access", "hr", "--json", salary)
    assert "71000" in json.loads(hr.stdout)["text"]

    refused = run_cli(candor, tmp_path, "sync", "--config", str(config), NOTION_TOKEN="ntn_revoked_secret")
    assert refused.returncode == 3
    assert "could not be listed, nothing removed" in refused.stderr
    assert "$NOTION_TOKEN" in refused.stderr and "HTTP 401" in refused.stderr
    assert "ntn_revoked_secret" not in refused.stderr + refused.stdout
    assert len(await candor.store.documents(kb)) == 35
