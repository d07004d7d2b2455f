"""The facade `rag` (rag/__init__.py) is explicit: it loads its names lazily through `__getattr__`,
which import-linter cannot see, so this test holds the contract instead.

- every `_EXPORTS` entry resolves, to the object its module defines, and the type checker's view
  (the `TYPE_CHECKING` imports) names the same objects from the same modules;
- `__all__` is `_EXPORTS` plus the functions the facade defines itself, and is what docs/design.md's
  "Public interface" lists;
- `bot/` imports from the core only the facade's names, the plain data (`rag.model`), the exception
  tree (`rag.errors`), the settings (`rag.config`) and the expert roster (`rag.experts`), counting
  `TYPE_CHECKING` imports too.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import rag

REPO = Path(__file__).resolve().parents[2]
DEFINED_HERE = {"answer", "close", "default_runtime"}
"""The facade's own functions (the process-wide runtime), not loaded from elsewhere."""
BOT_MAY_IMPORT = ("rag.model", "rag.errors", "rag.config", "rag.experts")


def _type_checking_imports() -> dict[str, str]:
    """name → module, from the `if TYPE_CHECKING:` block of rag/__init__.py."""
    tree = ast.parse((REPO / "rag" / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
    }


def _design_list() -> set[str]:
    """The names docs/design.md's "Public interface" says the facade hands out."""
    text = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    section = text.split("\n## Public interface", 1)[1].split("\n## ", 1)[0]
    listed = section.split("It hands out these names and no others", 1)[1].split("\n\n", 1)[1].split("\n\n", 1)[0]
    return {name for line in listed.splitlines() for name in re.findall(r"`(\w+)`", line.split(":", 1)[-1])}


@pytest.mark.parametrize(("name", "module"), sorted(rag._EXPORTS.items()))
def test_every_export_resolves_to_its_modules_object(name: str, module: str) -> None:
    assert getattr(rag, name) is getattr(importlib.import_module(module), name)


def test_the_type_checkers_view_is_the_same_list() -> None:
    """Besides `Question` and `Answer`, the plain data `answer()` is annotated with."""
    seen = _type_checking_imports()
    assert {name: module for name, module in seen.items() if not module.startswith("rag.model")} == rag._EXPORTS


def test_all_is_the_exports_and_the_facades_own_functions() -> None:
    assert set(rag.__all__) == set(rag._EXPORTS) | DEFINED_HERE
    assert len(rag.__all__) == len(set(rag.__all__))
    assert all(callable(getattr(rag, name)) for name in DEFINED_HERE)


def test_the_design_lists_what_the_facade_hands_out() -> None:
    assert _design_list() == set(rag.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'ingest_folder'"):
        rag.ingest_folder  # noqa: B018


def _core_imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) for every import of `rag...` in one file, wherever it sits."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "rag" or node.module.startswith("rag."):
                found.append((node.module, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names if alias.name.split(".")[0] == "rag"]
    return found


def test_bot_imports_only_the_facade_and_the_doors_beside_it() -> None:
    outside: list[str] = []
    for path in sorted((REPO / "bot").rglob("*.py")):
        for module, names in _core_imports(path):
            where = path.relative_to(REPO)
            if module == "rag":
                outside += [f"{where}: rag.{name}" for name in names if name not in rag.__all__]
            elif not any(module == door or module.startswith(door + ".") for door in BOT_MAY_IMPORT):
                outside.append(f"{where}: {module}")
    assert outside == []
