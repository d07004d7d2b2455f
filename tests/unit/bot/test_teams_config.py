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


def test_the_triage_channel_turns_the_hand_off_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MICROSOFT_APP_ID", raising=False)
    monkeypatch.delenv("TEAMS_TRIAGE_CHANNEL", raising=False)
    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none")  # never connected
    config = teams_config(load_settings(home=tmp_path))
    assert config.triage_channel is None
    assert TeamsAdapter(config, NoCore(), EventLedger(engine)).handoffs is None  # type: ignore[arg-type]

    monkeypatch.setenv("TEAMS_TRIAGE_CHANNEL", "19:0a1b2c3d4e5f@thread.tacv2")
    monkeypatch.setenv("CANDOR_EXPERTS", "teams:00000000-0000-4000-8000-0000000e0e01=Ana Diaz")
    config = teams_config(load_settings(home=tmp_path))
    assert config.triage_channel == "19:0a1b2c3d4e5f@thread.tacv2"
    handoffs = TeamsAdapter(config, NoCore(), EventLedger(engine)).handoffs  # type: ignore[arg-type]
    assert handoffs is not None and handoffs.triage_channel == config.triage_channel

    monkeypatch.setenv("TEAMS_TRIAGE_CHANNEL", "19%3a0a1b2c3d4e5f%40thread.tacv2")  # as in a channel link
    assert teams_config(load_settings(home=tmp_path)).triage_channel == "19:0a1b2c3d4e5f@thread.tacv2"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("General", "is not a Teams channel id: it looks like 19:<id>@thread.tacv2"),
        ("C0TRIAGE", "is not a Teams channel id"),
        ("19:0a1b2c@thread.v2", "is not a Teams channel id"),  # a group chat, not a channel
        ("19:0a1b2c@thread.tacv2;messageid=1700000000001", "give the channel's id alone, '19:0a1b2c@thread.tacv2'"),
    ],
)
def test_a_triage_channel_that_is_not_a_channel_id_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv("TEAMS_TRIAGE_CHANNEL", value)
    with pytest.raises(ConfigError, match="TEAMS_TRIAGE_CHANNEL") as refused:
        load_settings(home=tmp_path)
    assert says in str(refused.value)


def test_a_triage_channel_with_no_teams_expert_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MICROSOFT_APP_ID", raising=False)
    monkeypatch.setenv("TEAMS_TRIAGE_CHANNEL", "19:0a1b2c3d4e5f@thread.tacv2")
    monkeypatch.setenv("CANDOR_EXPERTS", "slack:U0EXPERT")  # experts elsewhere answer no Teams hand-off
    with pytest.raises(ConfigError, match="CANDOR_EXPERTS names no Teams expert"):
        teams_config(load_settings(home=tmp_path))
    monkeypatch.delenv("CANDOR_EXPERTS")
    with pytest.raises(ConfigError, match="CANDOR_EXPERTS"):
        teams_config(load_settings(home=tmp_path))
