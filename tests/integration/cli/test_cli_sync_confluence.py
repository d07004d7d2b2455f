"""`candor sync` of a Confluence source as its own process, against a local fake Confluence Cloud:
the summary, a re-sync that downloads nothing, `candor ask` citing a synced page's URL, and refused
credentials named by their variables (never their values)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


async def test_candor_sync_a_confluence_source(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: wiki-{kb.name}
    kind: confluence
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    base_url: {wiki.url}
    spaces: [ENG, HR]
    space_access: {{HR: [staff]}}
    permissions:
      groups: {{sre: [sre-team], hr-managers: [hr]}}
    credentials: {{email: CONFLUENCE_EMAIL, token: CONFLUENCE_TOKEN}}
"""
    )
    env = {"CONFLUENCE_EMAIL": EMAIL, "CONFLUENCE_TOKEN": TOKEN}
    done = run_cli(candor, tmp_path, "sync", "--config", str(config), **env)
    assert done.returncode == 0, done.stderr
    summary = f"wiki-{kb.name} (confluence → {kb.name}): 36 added, 0 updated, 0 unchanged, 0 deleted, 0 skipped"
    assert summary in done.stdout

    wiki.reset_counts()
    again = run_cli(candor, tmp_path, "sync", CANDOR_SOURCES=str(config), **env)
    assert "0 added, 0 updated, 36 unchanged, 0 deleted, 0 skipped; 0 fetched in full" in again.stdout
    assert sum(wiki.body_fetches.values()) == 0 and sum(wiki.downloads.values()) == 0

    asked = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", "When are production deploys frozen?")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["route"] == "answered" and "Friday after 14:00" in answer["text"]
    assert wiki.page_url(wiki.find("Deployments 1").id) in {s["url"] for s in answer["sources"]}

    secret = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", "What is the incident bridge PIN?")
    assert "4417" not in secret.stdout  # no --access: public pages only
    allowed = run_cli(
        candor, tmp_path, "ask", "--kb", kb.name, "--access", "sre-team", "--json", "What is the incident bridge PIN?"
    )
    assert "4417" in json.loads(allowed.stdout)["text"]

    refused = run_cli(
        candor, tmp_path, "sync", "--config", str(config), CONFLUENCE_EMAIL=EMAIL, CONFLUENCE_TOKEN="ATATT-revoked"
    )
    assert refused.returncode == 3
    assert "could not be listed, nothing removed" in refused.stderr
    assert "$CONFLUENCE_EMAIL and $CONFLUENCE_TOKEN" in refused.stderr and "HTTP 401" in refused.stderr
    assert "ATATT-revoked" not in refused.stderr + refused.stdout
    assert len(await candor.store.documents(kb)) == 36
