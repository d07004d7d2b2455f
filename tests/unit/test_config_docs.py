"""docs/configuration.md is generated from `Settings` (scripts/config_docs.py), so it cannot drift:
every setting has a docstring, and the page is what the script writes today."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings

from rag.config import Settings
from tests.conftest import REPO


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_docs", REPO / "scripts" / "config_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


config_docs = _generator()
RERUN = "run `.venv/bin/python scripts/config_docs.py` and commit docs/configuration.md"


def test_every_setting_is_documented() -> None:
    missing = config_docs.undocumented(Settings)
    assert missing == [], f"settings without a docstring under their field in rag/config/: {missing}"


def test_the_page_is_what_the_generator_writes() -> None:
    page = REPO / "docs" / "configuration.md"
    assert page.exists(), f"docs/configuration.md is missing: {RERUN}"
    assert page.read_text(encoding="utf-8") == config_docs.render(Settings), f"docs/configuration.md is stale: {RERUN}"


def test_every_variable_is_on_the_page() -> None:
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name, info in Settings.model_fields.items():
        for variable in config_docs.variables(name, info):
            assert f"`{variable}`" in page, variable


def _alias(name: str) -> AliasChoices:
    return AliasChoices(name)


class Toy(BaseSettings):
    """Settings of the generator's own tests."""

    # --- storage ------------------------------------------------------------
    folder: Path = Field(Path("/srv/toy"), validation_alias=_alias("TOY_FOLDER"))
    """TOY_FOLDER: where the toy keeps its
    things, over two lines."""
    size: int = Field(8, ge=1, le=64, validation_alias=_alias("TOY_SIZE"))
    """TOY_SIZE: how big | how small."""

    # --- talking ------------------------------------------------------------
    mode: Literal["loud", "quiet"] = Field("quiet", validation_alias=_alias("TOY_MODE"))
    token: SecretStr | None = Field(None, min_length=16, validation_alias=_alias("TOY_TOKEN"))
    """TOY_TOKEN: the key."""
    names: list[str] = Field(default_factory=list, validation_alias=_alias("TOY_NAMES"))
    """A list of names."""


def test_a_setting_without_a_docstring_is_named() -> None:
    assert config_docs.undocumented(Toy) == ["TOY_MODE"]


def test_the_page_has_a_section_per_comment_and_a_row_per_setting() -> None:
    page = config_docs.render(Toy)
    storage, talking = page.split("## Storage", 1)[1].split("## Talking", 1)
    assert "| `TOY_FOLDER` | `/srv/toy` | path | where the toy keeps its things, over two lines. |" in storage
    assert "| `TOY_SIZE` | `8` | whole number, 1 to 64 | how big \\| how small. |" in storage
    assert "| `TOY_MODE` | `quiet` | `loud`, `quiet` | **undocumented**" in talking
    assert "| `TOY_TOKEN` | unset | secret, 16+ characters | the key. |" in talking
    assert "| `TOY_NAMES` | `[]` | JSON | A list of names. |" in talking


class Tidy(BaseSettings):
    """Settings all documented."""

    size: int = Field(8, validation_alias=_alias("TIDY_SIZE"))
    """TIDY_SIZE: how big."""


def test_check_fails_on_a_stale_page_and_passes_on_a_fresh_one(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    assert config_docs.main(["--check", "--out", str(page)], Tidy) == 1  # no page yet
    assert config_docs.main(["--out", str(page)], Tidy) == 0
    assert config_docs.main(["--check", "--out", str(page)], Tidy) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("how big", "how large"), encoding="utf-8")
    assert config_docs.main(["--check", "--out", str(page)], Tidy) == 1


def test_writing_the_page_fails_while_a_setting_is_undocumented(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    assert config_docs.main(["--out", str(page)], Toy) == 1
    assert "**undocumented**" in page.read_text(encoding="utf-8")  # written all the same, marked
    assert config_docs.main(["--check", "--out", str(page)], Toy) == 1
