"""`candor teams package`: the Teams app package from the command line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from typer.testing import CliRunner

from bot.cli import app

APP_ID = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"


def test_the_package_is_written_with_the_bot_id_and_domains(tmp_path: Path) -> None:
    target = tmp_path / "out" / "candor.zip"
    result = CliRunner().invoke(
        app,
        ["teams", "package", "--out", str(target), "--domain", "https://candor.example.org/api/messages"],
        env={"MICROSOFT_APP_ID": APP_ID, "CANDOR_HOME": str(tmp_path / "home")},
    )
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(target) as package:
        assert sorted(package.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(package.read("manifest.json"))
    assert manifest["bots"][0]["botId"] == APP_ID
    assert manifest["validDomains"] == ["candor.example.org"]


def test_without_an_app_id_or_with_a_bad_one_it_says_what_is_wrong(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"CANDOR_HOME": str(tmp_path / "home"), "MICROSOFT_APP_ID": ""}
    missing = runner.invoke(app, ["teams", "package", "--out", str(tmp_path / "a.zip")], env=env)
    assert missing.exit_code == 1 and "MICROSOFT_APP_ID" in missing.output
    bad = runner.invoke(app, ["teams", "package", "--app-id", "not-a-guid", "--out", str(tmp_path / "b.zip")], env=env)
    assert bad.exit_code == 1 and "app_id" in bad.output
    assert not (tmp_path / "a.zip").exists() and not (tmp_path / "b.zip").exists()
