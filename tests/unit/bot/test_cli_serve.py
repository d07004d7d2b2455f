"""`candor serve` refuses, before loading anything, what would be unsafe to serve."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from bot.cli import app


def test_anonymous_teams_is_refused_off_the_loopback_address(tmp_path: Path) -> None:
    env = {"CANDOR_HOME": str(tmp_path / "home"), "CANDOR_TEAMS": "true", "MICROSOFT_APP_ID": ""}
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "9"], env=env)
    assert result.exit_code == 1
    assert "without authentication" in result.output and "--host 127.0.0.1" in result.output
    assert not (tmp_path / "home" / "pgdata").exists()  # refused before the database was started


def test_a_proxy_login_without_the_proxys_addresses_is_refused(tmp_path: Path) -> None:
    env = {"CANDOR_HOME": str(tmp_path / "home"), "CANDOR_WEB_CHAT": "proxy", "CANDOR_WEB_TRUSTED_PROXIES": ""}
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "9"], env=env)
    assert result.exit_code == 1 and "CANDOR_WEB_TRUSTED_PROXIES" in result.output


def test_an_empty_signing_secret_is_refused_by_name(tmp_path: Path) -> None:
    env = {"CANDOR_HOME": str(tmp_path / "home"), "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": ""}
    result = CliRunner().invoke(app, ["serve"], env=env)
    assert result.exit_code == 1 and "SLACK_SIGNING_SECRET" in result.output and "empty" in result.output


def test_prepare_loads_the_embedder_into_the_models_folder(tmp_path: Path, models_dir: Path) -> None:
    """What a container image runs at build time (the run's models folder: exported once already)."""
    env = {"CANDOR_HOME": str(tmp_path / "home"), "CANDOR_MODELS_DIR": str(models_dir), "HF_HUB_OFFLINE": "1"}
    result = CliRunner().invoke(app, ["prepare"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("embedder minilm on onnx-int8") and f", in {models_dir}" in result.output
    assert any(models_dir.rglob("candor-export.json"))
    assert not (tmp_path / "home").exists()  # no database, no home: only the models


def test_the_version_is_printed() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and re.fullmatch(r"candor \d+\.\d+\.\d+\S*\n", result.output)
