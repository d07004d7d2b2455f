"""`candor --help` and `candor --version` start at once: building the command line loads typer and
rich, not the core, and `--version` is answered before the app is built (bot/cli/__init__.py).
Each command imports what it runs when it runs (bot/cli/commands.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from typing import get_args

from typer.testing import CliRunner

import rag
from bot.cli import app
from bot.cli.audit_answers import SAMPLE
from bot.cli.commands import ReportBy

HEAVY = ("rag", "sqlalchemy", "alembic", "pydantic_settings", "numpy", "onnxruntime", "torch", "aiohttp", "psycopg")
"""Top-level packages a command may need and `--help` must not load (`rag` itself is the core's facade).
Not pydantic: typer itself parses a command's options with it."""

LOADED = """
import json, sys
sys.argv = ["candor", *sys.argv[1:]]
from bot.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_after(*args: str) -> set[str]:
    """The modules a fresh interpreter holds after `candor ARGS` (the test process has loaded them all)."""
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


def test_help_loads_no_part_of_the_core() -> None:
    modules = _modules_after("--help")
    assert "bot.cli.commands" in modules  # the app was built and its help printed
    assert _heavy(modules) == []


def test_a_group_help_loads_no_part_of_the_core() -> None:
    assert _heavy(_modules_after("audit", "--help")) == []


def test_the_version_builds_no_command_line() -> None:
    """`candor --version` (target ≤ 0.3 s, docs/benchmarks.md) loads neither typer, rich, asyncio nor
    the commands, and prints what `importlib.metadata` says."""
    modules = _modules_after("--version")
    assert _heavy(modules) == []
    assert sorted(m for m in modules if m.split(".")[0] in ("typer", "click", "rich", "asyncio")) == []
    assert "bot.cli.commands" not in modules
    done = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; import sys; sys.argv[1:] = ['--version']; main()"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == f"candor {version('candor')}\n"


def test_the_version_with_other_arguments_goes_to_the_app() -> None:
    """Only `--version` alone is answered early; with a command after it, typer's eager option still
    answers it (and the command is not run)."""
    result = CliRunner().invoke(app, ["--version", "ask", "anything"])
    assert result.exit_code == 0
    assert result.output == f"candor {version('candor')}\n"


def test_a_command_still_loads_what_it_runs() -> None:
    """The other side: the imports moved into the commands are made when one runs (here it stops at
    the settings: an invalid value, before any database is opened)."""
    code = LOADED.replace(
        "from bot.cli import main", "import os; os.environ['CANDOR_CHUNK_TOKENS'] = 'x'\n" + "from bot.cli import main"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "purge", "--older-than", "90d"], capture_output=True, text=True, timeout=60
    )
    assert "CANDOR_CHUNK_TOKENS" in done.stderr
    assert "rag.config" in set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_every_command_is_listed_in_the_help() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in (
        "ingest",
        "search",
        "ask",
        "eval",
        "report",
        "serve",
        "prepare",
        "migrate",
        "gaps",
        "purge",
        "sync",
        "teams",
        "audit",
        "feedback",
        "answers",
    ):
        assert f" {name} " in result.output, name


def test_the_defaults_spelled_out_for_the_command_line_are_the_cores() -> None:
    assert SAMPLE == rag.DEFAULT_SAMPLE
    assert get_args(ReportBy) == get_args(rag.By)
