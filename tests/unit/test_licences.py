"""Candor is Apache-2.0, so nothing it runs on may be GPL-only, and docs/licences.md lists what it runs
on as the installed metadata says today (scripts/licences.py writes it)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("licences", REPO / "scripts" / "licences.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


licences = _generator()
RERUN = "run `.venv/bin/python scripts/licences.py` and commit docs/licences.md"


@pytest.mark.parametrize(
    "licence",
    ["GPL-3.0-only", "GPL-2.0-or-later", "AGPL-3.0", "GNU General Public License v3 (GPLv3)", "GPLv2"],
)
def test_gpl_only_is_recognised(licence: str) -> None:
    assert licences.is_gpl_only(licence)


@pytest.mark.parametrize(
    "licence",
    [
        "LGPL-3.0-only",
        "GNU Lesser General Public License v3 (LGPLv3)",
        "GPL-2.0-or-later OR MIT",
        "MIT OR GNU General Public License v2 (GPLv2)",
        "Apache-2.0",
        "BSD-3-Clause AND MIT",
    ],
)
def test_lgpl_and_alternatives_are_not_gpl_only(licence: str) -> None:
    assert not licences.is_gpl_only(licence)


def test_the_walk_reaches_dependencies_of_dependencies_and_extras() -> None:
    names = {dependency.name for dependency in licences.dependencies()}
    assert {"sentence-transformers", "transformers", "optimum-onnx", "pydantic-core"} <= names


def test_every_runtime_dependency_is_installed() -> None:
    missing = [d.name for d in licences.dependencies() if d.version == licences.NOT_INSTALLED]
    assert missing == [], f"required but not installed (run `make install`): {missing}"


def test_no_runtime_dependency_is_gpl_only() -> None:
    gpl_only = [
        f"{d.name} {d.version}: {d.licence}" for d in licences.dependencies() if licences.is_gpl_only(d.licence)
    ]
    assert gpl_only == [], f"GPL-only runtime dependencies cannot ship with Apache-2.0 Candor: {gpl_only}"


def test_the_page_is_what_the_generator_writes() -> None:
    page = REPO / "docs" / "licences.md"
    assert page.exists(), f"docs/licences.md is missing: {RERUN}"
    assert page.read_text(encoding="utf-8") == licences.render(), f"docs/licences.md is stale: {RERUN}"
