"""`candor audit answers`: sampled re-verification of delivered answers, and human labels. Thin: parse,
call the core (`rag.insights.audit.answers`, `rag.insights.audit.labels`), print.

Exit status: 0 done; 1 an error, an audit whose verifier went away mid-run or whose abstention
re-checks failed (what it judged is stored, the run marked incomplete) or a label file with invalid
rows (nothing stored); 2 bad arguments.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from bot.cli.audit import audit_app
from bot.cli.common import err, out, run

if TYPE_CHECKING:
    from rag import AuditRequest, Candor, Imported

SAMPLE = 50
"""`--sample`'s default: `rag.DEFAULT_SAMPLE`, spelled out so that the option is built without the core
(tests/unit/bot/test_cli_startup.py checks they agree)."""


@audit_app.command("answers")
def answers(
    sample: Annotated[int, typer.Option(min=1, max=100_000, help="Delivered answers (and abstentions) to sample.")] = (
        SAMPLE
    ),
    since: Annotated[str, typer.Option(help="Start of the window: 7d, 12h, 2w ago, or an ISO date (UTC).")] = "30d",
    until: Annotated[str | None, typer.Option(help="End of the window, not included (default: now).")] = None,
    kb: Annotated[
        str | None, typer.Option("--kb", help="Only answers scoped to this knowledge base or citing its documents.")
    ] = None,
    seed: Annotated[str | None, typer.Option(help="Sample seed: the same seed picks the same answers.")] = None,
    again: Annotated[bool, typer.Option(help="Sample answers already audited (or labelled) too.")] = False,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write a CSV of a sample for people to label, instead.")
    ] = None,
    labels: Annotated[Path | None, typer.Option("--import", help="Store the labels of a filled-in CSV.")] = None,
    skip_invalid: Annotated[
        bool, typer.Option(help="With --import: store the valid rows and list the others.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the audit's summary as JSON.")] = False,
) -> None:
    """Re-verify the sentences of a sample of delivered answers with the audit verifier
    (CANDOR_AUDIT_VERIFIER) and re-check a sample of abstentions; or export / import human labels."""
    from rag import AuditRequest, report_window

    if export is not None and labels is not None:
        err.print("error: --export and --import go separately", highlight=False)
        raise typer.Exit(2)
    if labels is not None:
        imported = run(lambda candor: _import(candor, labels, skip_invalid), check_embedder=False)
        for problem in imported.invalid:
            err.print(f"skipped {problem}", markup=False, highlight=False)
        out.print(imported_text(imported, labels), markup=False, highlight=False)
        return
    try:
        window = report_window(since, until, kb=kb)
    except ValueError as exc:
        err.print(f"error: {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    request = AuditRequest(window.since, window.until, sample, kb, again=again, **({"seed": seed} if seed else {}))

    if export is not None:
        written = run(lambda candor: _export(candor, request, export))
        out.print(
            f"wrote {written} rows to {export} (seed {request.seed}): fill in label (and labeller), then "
            f"candor audit answers --import {export}",
            markup=False,
            highlight=False,
        )
        return

    result = run(lambda candor: candor.audit_answers(request))
    if as_json:
        sys.stdout.write(json.dumps(result.summary(), ensure_ascii=False, indent=2) + "\n")
    else:
        out.print(summary_text(result.summary()), markup=False, highlight=False, end="")
    if not result.complete:
        err.print(
            f"error: the audit stopped before the end: {result.error}. The {len(result.judged)} sentences judged "
            f"are stored in run {result.run_id}, marked incomplete; run the same command again to finish.",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)


async def _export(candor: Candor, request: AuditRequest, path: Path) -> int:
    return await candor.export_labels(request, path)


async def _import(candor: Candor, path: Path, skip_invalid: bool) -> Imported:
    """A file with invalid rows raises `LabelFileError` (each named by line): printed, exit 1."""
    return await candor.import_labels(path, skip_invalid=skip_invalid)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def summary_text(summary: Mapping[str, Any]) -> str:
    """The audit's summary as a person reads it (a pure function of `AuditResult.summary()`)."""
    from bot.render.report_text import relaxed_estimate
    from rag import relaxed_false_alarms

    unsupported, independent = summary["unsupported"], summary["independent"]
    if not independent["of"]:
        how = "no sentence judged"
    elif independent["sentences"] == independent["of"]:
        how = "independent of the gate"
    elif not independent["sentences"]:
        how = "NOT independent: the gate's own verifier (no hallucination rate from this run)"
    else:
        how = f"independent of the gate on {independent['sentences']}/{independent['of']} sentences"
    interval = unsupported["interval"]
    ci = f", 95% CI {100 * interval['low']:.1f}–{_percent(interval['high'])}" if interval else ""
    abstentions = summary["abstentions"]
    lines = [
        f"Audit run {summary['run_id']} (seed {summary['seed']}){'' if summary['complete'] else ', INCOMPLETE'}",
        f"verifier: {summary['verifier']}, {how}",
        f"answers checked: {summary['answers']}; sentences: {summary['sentences']}",
        f"unsupported: {unsupported['n']}/{unsupported['of']} ({_percent(unsupported['rate'])}{ci})",
        f"not judged: {summary['not_judged']}",
        f"abstentions re-checked: {abstentions['of']}; possibly answerable: {abstentions['n']}/{abstentions['of']}"
        f" ({_percent(abstentions['rate'])}; {relaxed_estimate({'false_alarms': relaxed_false_alarms()})})",
    ]
    if summary.get("not_rechecked"):
        lines.append(f"abstentions not re-checked (their re-check failed): {summary['not_rechecked']}")
    return "\n".join(lines) + "\n"


def imported_text(imported: Imported, path: Path) -> str:
    parts = [f"stored {imported.stored} labels from {path}"]
    if imported.replaced:
        parts.append(f"{imported.replaced} replacing an earlier label")
    parts.append(f"{imported.empty} rows without a label skipped")
    if imported.invalid:
        parts.append(f"{len(imported.invalid)} invalid rows skipped")
    return "; ".join(parts)
