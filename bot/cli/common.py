"""What every `candor` command shares: the consoles, the common options, and running a piece of
work against the core with errors turned into one line on stderr and an exit status.

Each command module (bot/cli/commands.py and the `bot/cli/*.py` groups) imports from here, never from
bot/cli/commands.py, which imports them all to register their commands.

Importing this module loads typer and rich only: the core (`rag`), the settings and logging are
imported when a command runs, so `candor --help` and `candor --version` start at once
(tests/unit/bot/test_cli_startup.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.progress import Progress

    from rag import Candor
    from rag.config import Settings

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

T = TypeVar("T")

KbOption = Annotated[str | None, typer.Option("--kb", help="Knowledge base name (default: CANDOR_KB or 'default').")]
AccessOption = Annotated[
    list[str] | None,
    typer.Option("--access", help="Access group; repeat for several. Without it only public documents are read."),
]


def run(work: Callable[[Candor], Awaitable[T]], *, check_embedder: bool = True) -> T:
    """`work` on an open core; a `CandorError` is printed as one line and exits 1."""
    import asyncio

    from rag import open_candor
    from rag.errors import CandorError

    settings = cli_settings()

    async def main() -> T:
        async with open_candor(settings, check_embedder=check_embedder) as candor:
            return await work(candor)

    try:
        return asyncio.run(main())
    except CandorError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from exc
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


async def require_knowledge_base(candor: Candor, name: str | None) -> None:
    """A `--kb` that names no knowledge base is an error, not an empty search."""
    from rag.errors import RetrievalError

    if name is not None and await candor.knowledge_base(name) is None:
        raise RetrievalError(f"no knowledge base is called {name!r}")


def cli_settings() -> Settings:
    """The settings, or exit 1 with the configuration error; logging set up at their level."""
    from bot.cli.logs import configure_logging
    from rag.config import load_settings
    from rag.errors import ConfigError

    try:
        settings = load_settings()
    except ConfigError as exc:
        err.print(f"error: {exc}", highlight=False)
        raise typer.Exit(1) from exc
    configure_logging(settings.log_level, settings.log_format)
    return settings


async def every(interval: float, once: Callable[[], Awaitable[None]]) -> None:
    """`--every`: `once()`, a wait, `once()` again, until SIGTERM or SIGINT ends the wait (a run in
    progress finishes); then "stopped". A run that fails with a `CandorError` (the database away, a
    bad file) is one line, and the next run tries again."""
    import asyncio
    import signal

    from rag.errors import CandorError

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    while not stop.is_set():
        try:
            await once()
        except CandorError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))} (trying again in {interval:g} s)", highlight=False)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
    out.print("stopped", markup=False, highlight=False)


class _NoProgress:
    """What `progress_bar` gives when stdout is not a terminal (a pipe, a log): no bar."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def progress_bar() -> Progress | _NoProgress:
    """A transient bar on stdout for `candor ingest` and `candor sync`, only on a terminal."""
    if not out.is_terminal:
        return _NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        transient=True,
    )
