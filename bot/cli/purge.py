"""`candor purge`: question text and asker ids removed from old records. Thin: parse, call the core, print.

Registered on the main app by `bot/cli/commands.py` (`app.command("purge")(purge)`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from bot.cli.common import err, out, run

if TYPE_CHECKING:
    from rag import Candor, Purged


def purge(
    older_than: Annotated[
        str, typer.Option("--older-than", help="Records made before this: 90d, 12w, or an ISO date (UTC).")
    ],
) -> None:
    """Remove question text, asker ids and vote comments from traces, feedback and the chat ledger
    older than the cut-off. Routes, gates, sources, ratings and costs stay, so reports still count them."""
    from rag import parse_moment

    try:
        cutoff = parse_moment(older_than, datetime.now(UTC))
    except ValueError as exc:
        err.print(f"error: {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc

    async def work(candor: Candor) -> Purged:
        return await candor.purge(cutoff)

    purged = run(work, check_embedder=False)
    out.print(
        f"purged records made before {cutoff.isoformat(timespec='seconds')}: {purged.traces} traces, "
        f"{purged.votes} votes, {purged.events} chat events, {purged.audit_rows} audit rows",
        markup=False,
        highlight=False,
    )
