"""`candor feedback ...`: the votes people gave, for a spreadsheet or a script. Thin: parse, call, print.

`feedback_app` is registered on the main app by `bot/cli/commands.py`.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import err, run

if TYPE_CHECKING:
    from rag import Candor

feedback_app = typer.Typer(help="Feedback: the 👍/👎 votes on answers, with the answers.", no_args_is_help=True)


@feedback_app.command("export")
def export(
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV with a header row (the only format for now).")] = True,
    since: Annotated[str, typer.Option(help="Votes given since: 30d, 12h, 2w ago, or an ISO date (UTC).")] = "30d",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to FILE (atomically, mode 0600) instead of stdout.")
    ] = None,
) -> None:
    """Every vote of the window with its answer: trace id, created_at, platform, question, answer,
    route, rating, reason, user (pseudonymised: CANDOR_EXPORT_USERS), voted_at."""
    from rag import parse_moment, write_private
    from rag.errors import FileWriteError

    now = datetime.now(UTC)
    try:
        start = parse_moment(since, now)
    except ValueError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(2) from exc

    async def work(candor: Candor) -> tuple[str, int]:
        return await candor.export_feedback(start, now)

    content, count = run(work, check_embedder=False)
    if out is None:
        sys.stdout.write(content)
        return
    try:
        written = write_private(out, content)
    except FileWriteError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    err.print(f"wrote {count} votes to {written}", markup=False, highlight=False)
