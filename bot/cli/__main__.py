"""`python -m bot.cli`: the `candor` command."""

from bot.cli import main

main()
