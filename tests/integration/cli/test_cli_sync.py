"""`candor sync` as its own process against a local fake website: the summary, --dry-run, --source,
an inline secret refused, and `candor ask` answering from a synced page with its URL."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import process_env, run_cli, run_cli_on_terminal
from tests.fakes.website import FakeWebsite


@pytest.fixture
def site() -> Iterator[FakeWebsite]:
    fake = FakeWebsite().start()
    yield fake
    fake.stop()


async def test_candor_sync_end_to_end(candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: help
    kind: website
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    sitemap: {site.url}/sitemap.xml
    requests_per_second: 500
  - name: other
    kind: website
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}-other
    start_urls: [{site.url}/help/returns/]
"""
    )
    dry = run_cli(candor, tmp_path, "sync", "--config", str(config), "--source", "help", "--dry-run")
    assert dry.returncode == 3, dry.stderr  # the 500 page is skipped
    assert f"would be added: {site.url}/help/returns/article-1" in dry.stdout
    assert "dry run, nothing written: 32 added" in dry.stdout
    assert await candor.store.documents(kb) == {}

    done = run_cli(candor, tmp_path, "sync", "--config", str(config), "--source", "help")
    assert done.returncode == 3
    assert f"skipped {site.url}/help/broken: the site answered 500" in done.stderr
    assert f"help (website → {kb.name}): 32 added, 0 updated, 0 unchanged, 0 deleted, 1 skipped" in done.stdout
    assert await candor.knowledge_base(f"{kb.name}-other") is None  # --source: the other was not synced

    again = run_cli(candor, tmp_path, "sync", "--source", "help", CANDOR_SOURCES=str(config))
    assert "0 added, 0 updated, 32 unchanged, 0 deleted, 1 skipped; 0 fetched in full" in again.stdout

    asked = run_cli(
        candor, tmp_path, "ask", "--kb", kb.name, "--json", "Who pays customs duties on orders to Switzerland?"
    )
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["route"] == "answered" and "8 percent" in answer["text"]
    assert f"{site.url}/help/shipping/deep/customs" in {s["url"] for s in answer["sources"]}


async def test_candor_sync_refuses_inline_secrets_and_unset_credentials(candor: Candor, tmp_path: Path) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text("sources:\n  - {name: wiki, kind: website, start_urls: [http://x.test/], token: abc123}\n")
    inline = run_cli(candor, tmp_path, "sync", "--config", str(config))
    assert inline.returncode == 1 and "looks like a secret written inline" in inline.stderr
    assert "abc123" not in inline.stderr

    config.write_text(
        "sources:\n  - name: wiki\n    kind: website\n    start_urls: [http://x.test/]\n"
        "    credentials: {authorization: Bearer abc123}\n"
    )
    written = run_cli(candor, tmp_path, "sync", "--config", str(config))
    assert written.returncode == 1 and "must name an environment variable" in written.stderr
    assert "abc123" not in written.stderr

    config.write_text(
        "sources:\n  - name: wiki\n    kind: website\n    start_urls: [http://x.test/]\n"
        "    access: [staff]\n    credentials: {authorization: WIKI_AUTH}\n"
    )
    unset = run_cli(candor, tmp_path, "sync", "--config", str(config))  # that source cannot start: exit 3
    assert unset.returncode == 3 and "$WIKI_AUTH, which is not set" in unset.stderr, unset.stderr
    missing = run_cli(candor, tmp_path, "sync")
    assert missing.returncode == 1 and "give --config FILE or set CANDOR_SOURCES" in missing.stderr


async def test_candor_sync_every_syncs_again_until_sigterm(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    """One host's schedule: `candor sync --every` syncs, waits, syncs again (fetching nothing that did
    not change), and stops cleanly on SIGTERM."""
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"sources:\n  - name: every-{kb.name}\n    kind: website\n    kb: {kb.name}\n"
        "    allow_private_network: true\n"  # the fake is on 127.0.0.1
        f"    sitemap: {site.url}/sitemap.xml\n    requests_per_second: 500\n"
    )
    url = candor.store.engine.url.render_as_string(hide_password=False)
    env = process_env(CANDOR_HOME=str(tmp_path), CANDOR_DATABASE_URL=url, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(  # noqa: ASYNC220 (the fake site has its own thread; nothing here needs the loop)
        [sys.executable, "-m", "bot.cli", "sync", "--config", str(config), "--every", "1s"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 240
        while not any("32 unchanged" in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, lines
            lines.append(process.stdout.readline())
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    rest = process.stdout.read() if process.stdout else ""
    assert code == 0 and "stopped" in rest, (code, rest, process.stderr.read() if process.stderr else "")
    assert any(": 32 added" in line for line in lines)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00: synced", next(x for x in lines if "synced" in x))
    assert any("0 fetched in full" in line for line in lines if "32 unchanged" in line)
    bad = run_cli(candor, tmp_path, "sync", "--config", str(config), "--every", "soon")
    assert bad.returncode == 2 and "not an interval" in bad.stderr
    both = run_cli(candor, tmp_path, "sync", "--config", str(config), "--every", "1h", "--dry-run")
    assert both.returncode == 2 and "do not go together" in both.stderr


async def test_a_sync_killed_midway_resumes_without_duplicates_or_refetching_what_landed(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"sources:\n  - name: killed-{kb.name}\n    kind: website\n    kb: {kb.name}\n"
        "    allow_private_network: true\n"  # the fake is on 127.0.0.1
        f"    sitemap: {site.url}/sitemap.xml\n    requests_per_second: 4\n"  # ~8 s for the site
    )
    url = candor.store.engine.url.render_as_string(hide_password=False)
    env = process_env(CANDOR_HOME=str(tmp_path), CANDOR_DATABASE_URL=url, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(  # noqa: ASYNC220 (the fake site has its own thread)
        [sys.executable, "-m", "bot.cli", "sync", "--config", str(config)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while len(await candor.store.documents(kb)) < 6:
            assert time.monotonic() < deadline and process.poll() is None, "the sync ended before it was killed"
            await asyncio.sleep(0.05)
    finally:
        process.kill()  # SIGKILL: no cleanup of any kind
        process.wait(timeout=60)
    landed = len(await candor.store.documents(kb))
    assert 6 <= landed < 32, landed
    pages = [path for path in site.pages if not path.startswith("/private/")]
    before = sum(site.full[path] for path in pages)

    again = run_cli(candor, tmp_path, "sync", "--config", str(config))
    assert again.returncode == 3, again.stderr  # the broken page, as always
    summary = re.search(r"(\d+) added, 0 updated, (\d+) unchanged, 0 deleted, 1 skipped", again.stdout)
    assert summary is not None, again.stdout
    added, unchanged = int(summary[1]), int(summary[2])
    assert added + unchanged == 32 and unchanged >= landed, again.stdout  # what landed is not stored again
    # ... nor downloaded again (a 304), but for at most one page stored in the instant before its state
    refetched = sum(site.full[path] for path in pages) - before
    assert added <= refetched <= added + 1, (added, refetched)
    stored = await candor.store.documents(kb)
    assert len(stored) == 32
    duplicated = await candor.store.fetch_all(
        "SELECT document_id, position FROM chunks WHERE kb_id = %(kb)s GROUP BY 1, 2 HAVING count(*) > 1",
        {"kb": kb.id},
    )
    assert duplicated == []


async def test_candor_sync_shows_its_progress_on_a_terminal_only(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: bar-{kb.name}
    kind: website
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    sitemap: {site.url}/sitemap.xml
    requests_per_second: 500
"""
    )
    status, shown = run_cli_on_terminal(candor, tmp_path, "sync", "--config", str(config), "--dry-run")
    assert status == 3, shown  # the 500 page is skipped
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    assert re.search(rf"bar-{kb.name}: \S+ .* 33/33 ", plain), plain  # the source, a page, visited/known
    assert "dry run, nothing written: 32 added" in shown
    piped = run_cli(candor, tmp_path, "sync", "--config", str(config), "--dry-run")
    assert f"bar-{kb.name}: " not in piped.stdout and "\x1b[" not in piped.stdout  # no bar into a pipe


async def test_candor_sync_removes_a_source_no_longer_in_the_file_or_keeps_it_for_no_one(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    def entry(name: str, base: str) -> str:
        return (
            f"\n  - name: {name}\n    kind: website\n    allow_private_network: true\n    kb: {base}\n"
            f"    start_urls: [{site.url}/help/returns/]\n    max_pages: 4\n    requests_per_second: 500\n"
        )

    gone, staying = f"gone-{kb.name}", f"staying-{kb.name}"
    config = tmp_path / "sources.yaml"
    config.write_text("sources:" + entry(gone, kb.name) + entry(staying, f"{kb.name}-b"))
    assert run_cli(candor, tmp_path, "sync", "--config", str(config)).returncode == 0
    held = len(await candor.store.documents(kb))
    assert held == 4

    config.write_text("sources:" + entry(staying, f"{kb.name}-b"))
    kept = run_cli(candor, tmp_path, "sync", "--config", str(config), "--keep")
    line = f"{gone} (website → {kb.name}): no longer in the sources file: its {held} documents"
    assert f"{line} are kept, readable by no one (--keep)" in kept.stdout, kept.stdout
    rows = await candor.store.fetch_all("SELECT access_groups FROM documents WHERE kb_id = %(kb)s", {"kb": kb.id})
    assert [list(groups) for (groups,) in rows] == [["candor:no-one"]] * held

    removed = run_cli(candor, tmp_path, "sync", "--config", str(config))
    assert removed.returncode == 0 and f"{line} were removed" in removed.stdout, removed.stdout
    assert await candor.store.documents(kb) == {}
    again = run_cli(candor, tmp_path, "sync", "--config", str(config))
    assert gone not in again.stdout  # said once
