"""The Teams part of the settings, as `candor serve` builds the adapter from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from bot.teams.app import TeamsAdapter, teams_config
from rag.config import load_settings
from rag.errors import ConfigError
from rag.tracking.events import EventLedger


class NoCore:
    """Never asked anything: the adapter is only built here."""


def test_the_settings_reach_the_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICROSOFT_APP_ID", "00000000-0000-4000-8000-000000000001")
    monkeypatch.setenv("MICROSOFT_APP_PASSWORD", "s3cret")
    monkeypatch.setenv("MICROSOFT_APP_TENANT_ID", "tenant-home")
    monkeypatch.setenv("TEAMS_ASK_HUMAN", "https://help.example.com/hr")
    monkeypatch.setenv("SLACK_ASK_HUMAN", "C0HELP")
    monkeypatch.setenv("CANDOR_ANSWER_CONCURRENCY", "3")
    config = teams_config(load_settings(home=tmp_path))
    assert config.ask_human == "https://help.example.com/hr"  # never Slack's channel id
    assert (config.app_password, config.app_type, config.anonymous) == ("s3cret", "MultiTenant", False)
    assert config.tenants == {"tenant-home"}

    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none")  # never connected
    adapter = TeamsAdapter(config, NoCore(), EventLedger(engine))  # type: ignore[arg-type]
    assert adapter.worker.concurrency == 3
    assert adapter.delivery.app_id == config.app_id


def test_an_authenticated_bot_names_the_organisations_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MICROSOFT_APP_ID", "00000000-0000-4000-8000-000000000001")
    monkeypatch.setenv("MICROSOFT_APP_PASSWORD", "s3cret")
    monkeypatch.delenv("MICROSOFT_APP_TENANT_ID", raising=False)
    monkeypatch.delenv("CANDOR_TEAMS_TENANTS", raising=False)
    with pytest.raises(ConfigError, match="MICROSOFT_APP_TENANT_ID or CANDOR_TEAMS_TENANTS"):
        teams_config(load_settings(home=tmp_path))

    monkeypatch.setenv("CANDOR_TEAMS_TENANTS", "tenant-a, tenant-b")
    assert teams_config(load_settings(home=tmp_path)).tenants == {"tenant-a", "tenant-b"}
    monkeypatch.setenv("MICROSOFT_APP_TENANT_ID", "tenant-home")
    assert teams_config(load_settings(home=tmp_path)).tenants == {"tenant-a", "tenant-b", "tenant-home"}
    monkeypatch.setenv("CANDOR_TEAMS_TENANTS", "*")
    assert teams_config(load_settings(home=tmp_path)).tenants is None  # a public app, said out loud


def test_the_anonymous_emulator_mode_answers_any_tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MICROSOFT_APP_ID", raising=False)
    monkeypatch.setenv("CANDOR_TEAMS", "true")
    config = teams_config(load_settings(home=tmp_path))
    assert config.anonymous and config.tenants is None
