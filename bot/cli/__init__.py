"""The `candor` command line: `commands.py` holds the main app and the entry point (`bot.cli:main`),
a module per command group registers on it, `common.py` is what they share."""

from bot.cli.commands import app, main

__all__ = ["app", "main"]
