"""`scripts/screenshot.py` and the README's picture it makes: the picture is there, small and shown
at the top of the README with the command that regenerates it; the script hands its commands a
fresh home and nothing else of Candor's configuration."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

PICTURE = REPO / "docs" / "img" / "answer.png"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshot", REPO / "scripts" / "screenshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_picture_is_a_small_png_about_1000_px_wide() -> None:
    data = PICTURE.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    assert 800 <= width <= 1200 and 200 <= height <= 1600, (width, height)
    assert len(data) < 200 * 1024


def test_the_readme_opens_with_the_picture_and_how_to_regenerate_it() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    intro = readme.split("\n## ", 1)[0]
    assert "](docs/img/answer.png)" in intro
    assert "scripts/screenshot.py" in intro
    assert _script().OUT == PICTURE


def test_the_commands_get_a_fresh_home_offline_and_no_other_candor_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CANDOR_DATABASE_URL", "postgresql://elsewhere/candor")
    monkeypatch.setenv("CANDOR_HOME", "/var/lib/candor")
    monkeypatch.setenv("PATH", "/usr/bin")
    env = _script().candor_env(tmp_path / "home")
    assert {name: value for name, value in env.items() if name.startswith("CANDOR_")} == {
        "CANDOR_HOME": str(tmp_path / "home")
    }
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["PATH"] == "/usr/bin"
