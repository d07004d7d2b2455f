"""`candor sync` of a SharePoint / OneDrive source as its own process, against a local fake Microsoft
Graph and sign-in (MSAL in that process trusts the fake's CA through REQUESTS_CA_BUNDLE): the summary,
a re-sync that downloads nothing, `candor ask` citing a synced file's webUrl, a restricted file only
with `--access`, and a refused client secret named by its variables (never their values)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, TENANT, FakeGraph

SYNCED = 35


@pytest.fixture
def graph() -> Iterator[FakeGraph]:
    fake = FakeGraph().start()
    yield fake
    fake.stop()


async def test_candor_sync_a_sharepoint_source(
    candor: Candor, kb: KnowledgeBase, graph: FakeGraph, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: intranet-{kb.name}
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
      site_groups: {{Finance Members: [finance], Finance Visitors: [staff], Payroll Team: [payroll]}}
      groups: {{Finance Leadership: [finance-leads]}}
      users: {{hana@contoso.com: [hr]}}
      organization: [staff]
      anonymous: public
    credentials: {{tenant_id: SP_TENANT_ID, client_id: SP_CLIENT_ID, client_secret: SP_CLIENT_SECRET}}
"""
    )
    env = {
        "SP_TENANT_ID": TENANT,
        "SP_CLIENT_ID": CLIENT_ID,
        "SP_CLIENT_SECRET": CLIENT_SECRET,
        "REQUESTS_CA_BUNDLE": graph.ca_bundle(tmp_path),
    }
    done = run_cli(candor, tmp_path, "sync", "--config", str(config), **env)
    assert done.returncode == 0, done.stderr
    summary = (
        f"intranet-{kb.name} (sharepoint → {kb.name}): {SYNCED} added, 0 updated, 0 unchanged, 0 deleted, 0 skipped"
    )
    assert summary in done.stdout, done.stdout
    assert sum(graph.downloads.values()) == SYNCED - 2 and sum(graph.page_fetches.values()) == 2

    graph.reset_counts()
    again = run_cli(candor, tmp_path, "sync", CANDOR_SOURCES=str(config), **env)
    assert f"0 added, 0 updated, {SYNCED} unchanged, 0 deleted, 0 skipped; 0 fetched in full" in again.stdout
    assert sum(graph.downloads.values()) == 0 and sum(graph.page_fetches.values()) == 0
    assert sum(graph.permission_reads.values()) == SYNCED - 2  # every file's permissions, read again

    asked = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", "On which day is the office closed?")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["route"] == "answered" and "24 December" in answer["text"]
    assert graph.web_url(graph.find("Holiday calendar.md")) in {s["url"] for s in answer["sources"]}

    question = "What dividend did the board approve?"
    secret = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--json", question)
    assert "4 cents" not in secret.stdout  # no --access: public files only
    allowed = run_cli(candor, tmp_path, "ask", "--kb", kb.name, "--access", "finance-leads", "--json", question)
    assert "4 cents" in json.loads(allowed.stdout)["text"]

    refused = run_cli(candor, tmp_path, "sync", "--config", str(config), **{**env, "SP_CLIENT_SECRET": "Qx8~revoked"})
    assert refused.returncode == 3
    assert "could not be listed, nothing removed" in refused.stderr
    assert "$SP_TENANT_ID, $SP_CLIENT_ID, $SP_CLIENT_SECRET" in refused.stderr and "AADSTS7000215" in refused.stderr
    assert "Qx8~revoked" not in refused.stderr + refused.stdout
    assert len(await candor.store.documents(kb)) == SYNCED
