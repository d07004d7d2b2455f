"""Sync runs recorded in Postgres and the claim that keeps one source to one run at a time
(`rag.store.sync_runs`, `rag.ingest.sources.runs`, migration 0018): real Postgres, the real
`Syncer` against the fake website (tests/fakes/website.py), two `SyncRuns` owners standing for two
replicas (they share nothing but the database)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from rag.ingest.sources.config import load_sources
from rag.ingest.sources.registry import connector_for
from rag.ingest.sources.runs import LOST
from rag.ingest.sources.sync import Syncer
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.store.sync_runs import ABANDONED, SyncRuns
from rag.store.sync_state import SyncState
from tests.fakes.website import FakeWebsite
from tests.integration.ingest.test_sync_website import SYNCED, sources_file

HELD = "/help/returns/article-2"


@pytest.fixture
def site() -> Iterator[FakeWebsite]:
    fake = FakeWebsite().start()
    yield fake
    fake.held.clear()
    fake.stop()


async def runs_of(candor: Candor, kb: KnowledgeBase) -> list[dict[str, Any]]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT * FROM sync_runs WHERE kb_id = :kb ORDER BY id"),
            {"kb": kb.id},
        )
        return [dict(row) for row in rows.mappings()]


async def until(check: Any, within: float = 30.0) -> Any:
    """`await check()` once it is truthy; fails after `within` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while not (found := await check()):
        assert asyncio.get_running_loop().time() < deadline, "still false"
        await asyncio.sleep(0.05)
    return found


async def test_each_run_is_recorded_with_its_counts_and_outcome(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    [first] = await candor.sync(config)
    site.sitemap_status = 503
    [second] = await candor.sync(config)
    [dry] = await candor.sync(config, dry_run=True)
    assert dry.dry_run

    ok, failed = await runs_of(candor, kb)  # a dry run is not recorded
    assert (ok["status"], ok["trigger"], ok["complete"]) == ("succeeded", "candor sync", True)
    assert (ok["added"], ok["updated"], ok["deleted"], ok["skipped"], ok["fetched"]) == (SYNCED, 0, 0, 1, SYNCED)
    assert ok["skipped_items"] == [{"document": f"{site.url}/help/broken", "reason": "the site answered 500"}]
    assert ok["visited"] == ok["known"] == SYNCED + 1 and ok["finished_at"] >= ok["started_at"]
    assert first.counts()["added"] == ok["added"]
    assert failed["status"] == "failed" and second.listing_error and "503" in failed["error"]
    assert failed["error"] == second.listing_error and failed["added"] == 0


async def test_one_source_never_runs_twice_at_once_and_a_dead_replicas_run_is_taken_over(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    config = sources_file(tmp_path, site, kb)
    [source] = load_sources(config)
    first_replica = SyncRuns(candor.store.engine, owner="replica-a")
    second_replica = SyncRuns(candor.store.engine, owner="replica-b")

    claim = await first_replica.claim(source.name, source.kind, kb.id, trigger="dashboard")
    assert claim is not None
    assert await second_replica.claim(source.name, source.kind, kb.id, trigger="dashboard") is None
    holder = await second_replica.holder(source.name, kb.id)
    assert holder is not None and (holder.owner, holder.trigger) == ("replica-a", "dashboard")

    # `candor sync` on another host meanwhile: not run, nothing fetched, nothing recorded
    site.reset_counts()
    [busy] = await candor.sync(config)
    assert busy.busy is not None and "replica-a" in busy.busy and busy.ok
    assert sum(site.requested.values()) == 0
    assert len(await runs_of(candor, kb)) == 1

    # replica A dies: its lease runs out (moved into the past here), and B's claim takes the source
    async with candor.store.engine.begin() as conn:
        await conn.execute(
            text("UPDATE sync_runs SET lease_until = now() - interval '1 second' WHERE id = :id"), {"id": claim.id}
        )
    taken = await second_replica.claim(source.name, source.kind, kb.id, trigger="candor sync")
    assert taken is not None and taken.id != claim.id
    dead, alive = await runs_of(candor, kb)
    assert (dead["status"], dead["error"]) == ("abandoned", ABANDONED) and dead["finished_at"] is not None
    assert alive["status"] == "running" and alive["owner"] == "replica-b"
    assert await first_replica.renew(claim, {"added": 3}) is False  # A, back to life, must stop
    assert await first_replica.finish(claim, "succeeded", {"added": 3}) is False
    assert (await runs_of(candor, kb))[0]["status"] == "abandoned"


async def test_a_run_whose_claim_is_lost_stops_at_once(
    candor: Candor, kb: KnowledgeBase, site: FakeWebsite, tmp_path: Path
) -> None:
    """The heartbeat of a run finds its row abandoned by another replica (its lease had run out while
    it could not renew): the run stops mid-sync and writes nothing more, so two never go on together."""
    config = sources_file(tmp_path, site, kb)
    [source] = load_sources(config)
    runs = SyncRuns(candor.store.engine, owner="replica-a")
    syncer = Syncer(candor.store, candor.ingestor(), SyncState(candor.store.engine), runs)
    connector = connector_for(source, {})
    site.held.add(HELD)
    try:
        running = asyncio.create_task(syncer.run(source.name, connector, kb))

        async def holding_the_page() -> bool:
            return site.requested[HELD] > 0

        await until(holding_the_page)
        [row] = await runs_of(candor, kb)
        async with candor.store.engine.begin() as conn:
            await conn.execute(
                text("UPDATE sync_runs SET lease_until = now() - interval '1 second' WHERE id = :id"), {"id": row["id"]}
            )
        other = SyncRuns(candor.store.engine, owner="replica-b")
        assert await other.claim(source.name, source.kind, kb.id, trigger="candor sync") is not None
        report = await asyncio.wait_for(running, 30)
    finally:
        site.held.clear()
        await connector.aclose()
    assert report.listing_error == LOST and not report.complete and report.deleted == 0
    lost, taken = await runs_of(candor, kb)
    assert lost["status"] == "abandoned" and taken["status"] == "running" and taken["owner"] == "replica-b"
