"""The Teams part of the settings, as `candor serve` builds the adapter from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from bot.teams.app import TeamsAdapter, teams_config
from rag.config import load_settings
from rag.tracking.events import EventLedger


class NoCore:
    """Never asked anything: the adapter is only built here."""


def test_the_settings_reach_the_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICROSOFT_APP_ID", "00000000-0000-4000-8000-000000000001")
    monkeypatch.setenv("MICROSOFT_APP_PASSWORD", "s3cret")
    monkeypatch.setenv("TEAMS_ASK_HUMAN", "https://help.example.com/hr")
    monkeypatch.setenv("SLACK_ASK_HUMAN", "C0HELP")
    monkeypatch.setenv("CANDOR_ANSWER_CONCURRENCY", "3")
    config = teams_config(load_settings(home=tmp_path))
    assert config.ask_human == "https://help.example.com/hr"  # never Slack's channel id
    assert (config.app_password, config.app_type, config.anonymous) == ("s3cret", "MultiTenant", False)

    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none")  # never connected
    adapter = TeamsAdapter(config, NoCore(), EventLedger(engine))  # type: ignore[arg-type]
    assert adapter.worker.concurrency == 3
    assert adapter.delivery.app_id == config.app_id
