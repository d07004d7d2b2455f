"""Searches on a hot standby (CANDOR_DATABASE_READ_URL), everything else on the primary: a real
primary and a real standby streaming from it, started from the pgserver package's binaries on TCP
ports (tests/standalone_postgres.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import load_settings
from rag.model.types import AccessScope
from rag.runtime import open_candor
from tests.standalone_postgres import Server, primary, standby_of


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    main = primary(tmp_path / "pg")
    copy = standby_of(main)
    try:
        yield main, copy
    finally:
        copy.stop()
        main.stop()


async def caught_up(main: Server, copy: Server) -> None:
    """The standby has replayed everything the primary has written so far."""
    target = main.sql("SELECT pg_current_wal_insert_lsn()")
    for _ in range(200):
        if copy.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") == "t":
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the standby did not catch up")


async def test_searches_read_the_standby_and_the_primary_takes_over_when_it_is_gone(
    servers: tuple[Server, Server], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    main, copy = servers
    assert copy.sql("SELECT pg_is_in_recovery()") == "t"
    settings = load_settings(home=tmp_path / "home", database_url=main.url, database_read_url=copy.url)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of annual leave a year.\n")
    async with open_candor(settings) as core:
        kb = await core.knowledge_base("standby", create=True)
        assert kb is not None
        scope = AccessScope.public(frozenset({kb.name}))
        assert (await core.ingestor().ingest([docs], kb=kb)).added == 1  # written on the primary
        await caught_up(main, copy)
        (leave,) = await core.retriever.run("How many days of annual leave?", scope, k=3)
        assert "25 days" in leave.text

        # the searches are the standby's: with its replay paused, a new document is not found yet
        copy.sql("SELECT pg_wal_replay_pause()")
        (docs / "parking.md").write_text("# Parking\n\nThe car park opens at seven in the morning.\n")
        assert (await core.ingestor().ingest([docs], kb=kb)).added == 1
        paused = await core.retriever.run("When does the car park open?", scope, k=3)
        assert all("car park" not in p.text for p in paused)
        copy.sql("SELECT pg_wal_replay_resume()")
        await caught_up(main, copy)
        found = await core.retriever.run("When does the car park open?", scope, k=3)
        assert "seven in the morning" in found[0].text

        # the chat ledger writes on the primary all along
        claim = await core.events.claim("slack", "T1/C1/1.0", {"text": "q"}, question="q")
        assert claim is not None

        # the standby goes away: the next search runs on the primary, said once in the log
        copy.stop()
        with caplog.at_level(logging.WARNING, logger="candor.store"):
            again = await core.retriever.run("When does the car park open?", scope, k=3)
        assert "seven in the morning" in again[0].text
        assert any("read standby is unavailable" in r.getMessage() for r in caplog.records)


def test_a_standby_without_a_primary_is_a_configuration_error(tmp_path: Path) -> None:
    from rag.errors import ConfigError

    with pytest.raises(ConfigError, match="CANDOR_DATABASE_READ_URL is a standby of CANDOR_DATABASE_URL"):
        load_settings(home=tmp_path, database_url=None, database_read_url="postgresql://x@127.0.0.1:1/candor")
