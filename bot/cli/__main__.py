"""`python -m bot.cli`: the `candor` command."""

from bot.cli.commands import main

main()
