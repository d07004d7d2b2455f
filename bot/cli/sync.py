"""`candor sync`: the configured sources (websites, Confluence spaces) into their knowledge bases.
Thin: parse, call, print.

Registered on the main app by bot/cli/commands.py. Exit status: 0 every source synced; 3 a source
could not be listed (nothing of it was removed) or some of its documents were skipped (each named
with its reason); 1 an error (a bad sources file, an unset credential variable). After the sources,
one line for each source no longer in the file (removed, renamed, or moved to another knowledge
base): its documents removed, or with --keep kept but readable by no one. A source another process
is syncing now (another replica's `candor sync`, or the dashboard's Sync now) is not run again: one
line says so, and the exit status does not change for it. With --every, each source's next run is
recorded after each round, for the dashboard's sources page.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from bot.cli.common import err, every, out, progress_bar, run

if TYPE_CHECKING:
    from rag import Candor, SourceDocument, SyncReport

EXIT_SKIPPED = 3


def sync(
    config: Annotated[
        Path | None, typer.Option("--config", help="The sources file (YAML; default: CANDOR_SOURCES).")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", help="Sync only the source called NAME.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be added, updated and deleted; write nothing.")
    ] = False,
    every: Annotated[
        str | None,
        typer.Option(help="Sync again at this interval (30m, 1h, 1d) until SIGTERM or Ctrl+C; one host's schedule."),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep",
            help="Keep the documents of sources no longer in the sources file, readable by no one (default: remove).",
        ),
    ] = False,
) -> None:
    """Bring the knowledge bases up to date with the configured sources: only what changed is fetched."""
    from rag import parse_interval
    from rag.model.types import clean_text

    if every is not None:
        try:
            interval = parse_interval(every)
        except ValueError as exc:
            err.print(f"error: --every: {exc}", markup=False, highlight=False)
            raise typer.Exit(2) from exc
        if dry_run:
            err.print("error: --every and --dry-run do not go together", markup=False, highlight=False)
            raise typer.Exit(2)
        run(lambda candor: _sync_every(candor, config, source, interval, keep))
        return

    async def work(candor: Candor) -> list[SyncReport]:
        with progress_bar() as progress:
            task = progress.add_task("syncing", total=None) if progress else None

            def advance(report: SyncReport, document: SourceDocument, done: int, known: int) -> None:
                if progress is not None and task is not None:
                    name = clean_text(document.title or document.id)[:40]
                    progress.update(task, completed=done, total=known, description=escape(f"{report.source}: {name}"))

            reports = await candor.sync(config, only=source, dry_run=dry_run, on_document=advance)
            return reports + await candor.retire_sources(config, keep=keep, dry_run=dry_run)

    reports = run(work)
    for report in reports:
        _print(report, keep=keep)
    if not all(report.ok for report in reports):
        raise typer.Exit(EXIT_SKIPPED)


async def _sync_every(candor: Candor, config: Path | None, source: str | None, interval: float, keep: bool) -> None:
    """`candor sync --every`: a sync and its summaries at each interval (`bot.cli.common.every`; a sync
    stopped by SIGTERM finishes its document: each is stored with its state in one step)."""

    from rag import SourceOverview

    async def once() -> None:
        started = datetime.now(UTC)
        reports = await candor.sync(config, only=source)
        reports += await candor.retire_sources(config, keep=keep)
        # the next round starts `interval` after this one ends (`bot.cli.common.every`)
        await SourceOverview(candor).note_next_runs(reports, datetime.now(UTC) + timedelta(seconds=interval))
        out.print(f"{started.isoformat(timespec='seconds')}: synced", markup=False, highlight=False)
        for report in reports:
            _print(report, keep=keep)

    await every(interval, once)


def _print(report: SyncReport, *, keep: bool = False) -> None:
    head = f"{report.source} ({report.kind} → {report.knowledge_base})"
    if report.retired:
        if keep:
            verb = "would be" if report.dry_run else "are"
            done = f"its {report.narrowed} documents {verb} kept, readable by no one (--keep)"
        else:
            done = f"its {report.deleted} documents {'would be' if report.dry_run else 'were'} removed"
        out.print(f"{head}: no longer in the sources file: {done}", markup=False, highlight=False)
        return
    if report.busy is not None:
        out.print(f"{head}: not run now: {report.busy}", markup=False, highlight=False)
        return
    if report.listing_error is not None:
        err.print(f"{head}: could not be listed, nothing removed: {report.listing_error}", markup=False)
        return
    if report.dry_run:
        for action, document in report.changes:
            out.print(f"would be {action}: {document}", markup=False, highlight=False)
    for document, reason in report.skipped:
        err.print(f"skipped {document}: {reason}", markup=False, highlight=False)
    prefix = "dry run, nothing written: " if report.dry_run else ""
    out.print(
        f"{head}: {prefix}{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.deleted} deleted, {len(report.skipped)} skipped; {report.fetched} fetched in full",
        markup=False,
        highlight=False,
    )
    if report.not_synced:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(report.not_synced.items()))
        out.print(f"{head}: not synced, as Candor does not read them: {kinds}", markup=False, highlight=False)
    if report.narrowed:
        out.print(
            f"{head}: {report.narrowed} documents not fetched in this run are now readable only by whom the "
            "source allows",
            markup=False,
            highlight=False,
        )
    if report.note:
        out.print(f"{head}: {report.note}; only documents the source said were gone were deleted", markup=False)
