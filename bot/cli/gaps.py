"""`candor gaps`: questions Candor could not answer, clustered and re-checked. Thin: parse, call the core, print.

Registered on the main app by `bot/cli/commands.py` (`app.command("gaps")(gaps)`).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from bot.cli.common import err, out, run

if TYPE_CHECKING:
    from rag import Candor


def gaps(
    since: Annotated[str, typer.Option(help="Start of the window: 7d, 12h, 2w ago, or an ISO date (UTC).")] = "30d",
    until: Annotated[
        str | None, typer.Option(help="End of the window, not included; same forms (default: now).")
    ] = None,
    kb: Annotated[
        str | None,
        typer.Option("--kb", help="Only questions that could read this knowledge base; re-checked against it alone."),
    ] = None,
    min_size: Annotated[int, typer.Option("--min-size", min=1, help="Show clusters of at least N questions.")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print the gaps as one JSON object.")] = False,
) -> None:
    """Abstained and low-confidence questions, and unanswered parts, grouped by meaning.

    Each group is re-checked against the documents with relaxed retrieval and labelled "true gap"
    (nothing there) or "possibly answerable" (a wrong abstention to look at), with the best evidence."""
    from bot.render.gaps_text import render_gaps
    from rag import report_window

    try:
        window = report_window(since, until, kb=kb)
    except ValueError as exc:
        err.print(f"error: {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc

    async def work(candor: Candor) -> dict[str, Any] | None:
        if kb is not None and await candor.knowledge_base(kb) is None:
            return None
        return await candor.gaps(window, min_size=min_size)

    result = run(work)
    if result is None:
        err.print(f"error: no knowledge base is called {kb!r}", markup=False, highlight=False)
        raise typer.Exit(1)
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return
    out.print(render_gaps(result), markup=False, highlight=False, end="")
