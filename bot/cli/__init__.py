"""The `candor` command line: `commands.py` holds the main app, a module per command group registers
on it, `common.py` is what they share.

The entry point (`bot.cli:main`) lives here and answers `candor --version` before the app is built,
so that it loads neither typer nor rich (tests/unit/bot/test_cli_startup.py); `app` is imported
from `bot.cli.commands` when first asked for.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]


def main() -> None:
    """`candor`: `--version` alone is printed here; everything else goes to the typer app."""
    if sys.argv[1:] == ["--version"]:
        from importlib.metadata import version

        sys.stdout.write(f"candor {version('candor')}\n")
        return
    from bot.cli.commands import main as run_app

    run_app()


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        from bot.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
