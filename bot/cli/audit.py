"""`candor audit ...`: standing checks over what Candor answers from. Thin: parse, call the core, print.

`audit_app` is registered on the main app by `bot/cli/commands.py`; more audits add their commands to it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import KbOption, err, out, run

if TYPE_CHECKING:
    from rag import Candor, ConflictAudit

audit_app = typer.Typer(
    help="Standing audits: documents that disagree with each other, and the answers given from them.",
    no_args_is_help=True,
)


@audit_app.command("conflicts")
def conflicts(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the audit as one JSON object.")] = False,
) -> None:
    """Document pairs that give different values for the same thing (an outdated page next to the current one).

    For each pair: the thing, both values (prices, limits, durations, dates) with the sentence each
    comes from, both documents with their effective dates and authority, which is newer and which an
    answer prefers."""
    from bot.render.audit_text import render_conflict_audit

    async def work(candor: Candor) -> tuple[str, ConflictAudit | None]:
        name = kb or candor.settings.default_kb
        knowledge_base = await candor.knowledge_base(name)
        if knowledge_base is None:
            return name, None
        return name, await candor.audit_conflicts(knowledge_base)

    name, audit = run(work)
    if audit is None:
        err.print(f"error: no knowledge base is called {name!r}", markup=False, highlight=False)
        raise typer.Exit(1)
    if as_json:
        sys.stdout.write(json.dumps(audit.as_json(), ensure_ascii=False, indent=2) + "\n")
        return
    out.print(render_conflict_audit(audit), markup=False, highlight=False, end="")
