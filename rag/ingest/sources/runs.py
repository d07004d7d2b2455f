"""One claimed run of a source, recorded in `sync_runs` from start to end (`rag.store.sync_runs`).

`run_claimed` runs the sync's work while a heartbeat task writes its progress (the report's counts,
documents visited of known) and renews the claim's lease every `PROGRESS_SECONDS`; at the end it
writes the outcome: `succeeded` (listed: its documents visited, some perhaps skipped, each with its
reason), or `failed` with the error in full (the listing failed, or the run raised). A run
cancelled from outside (the server stopping) is written as failed, saying so, and the cancellation
goes on.

A heartbeat that finds the claim lost (its lease ran out while the database could not be reached,
and another replica abandoned the run and took the source) cancels the work at once: the run ends
with `listing_error` saying why, and writes nothing more about itself, so two runs of one source
never go on together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rag.errors import StoreError
from rag.ingest.sources.base import SourceDocument
from rag.ingest.sources.report import SyncProgress, SyncReport
from rag.store.sync_runs import RunClaim, SyncRuns

log = logging.getLogger("candor.sync")

PROGRESS_SECONDS = 1.0
"""How often a running sync writes its progress and renews its claim."""
LOST = "stopped: this run's claim was lost (its lease ran out and another replica took the source)"
STOPPED = "stopped before the end: the process was shutting down"


@dataclass(slots=True)
class _Progress:
    report: SyncReport | None = None
    visited: int = 0
    known: int = 0
    lost: bool = False

    def counts(self) -> dict[str, int]:
        counts = self.report.counts() if self.report is not None else {}
        return {**counts, "visited": self.visited, "known": self.known}


async def run_claimed(
    runs: SyncRuns,
    claim: RunClaim,
    work: Callable[[SyncProgress], Awaitable[SyncReport]],
    *,
    fresh: Callable[[], SyncReport],
    on_document: SyncProgress | None = None,
    every: float = PROGRESS_SECONDS,
) -> SyncReport:
    """`work(progress)` (the sync, told to call `progress` before each document) under `claim`,
    its progress and outcome written to `sync_runs`. `fresh` makes an empty report, for a run
    stopped before its first document."""
    progress = _Progress()
    main = asyncio.current_task()
    assert main is not None, "run_claimed runs in a task"

    def seen(report: SyncReport, document: SourceDocument, visited: int, known: int) -> None:
        progress.report, progress.visited, progress.known = report, visited, known
        if on_document is not None:
            on_document(report, document, visited, known)

    beat = asyncio.create_task(_heartbeat(runs, claim, progress, main, every), name=f"sync {claim.source} heartbeat")
    try:
        report = await work(seen)
    except asyncio.CancelledError:
        if progress.lost and main.uncancel() == 0:  # our own heartbeat stopped it: the run ends here
            report = progress.report or fresh()
            report.listing_error = LOST
            log.error("sync %s: %s", claim.source, LOST)
            return report
        await _finish_quietly(runs, claim, progress, STOPPED)
        raise
    except BaseException as exc:
        await _finish_quietly(runs, claim, progress, f"{type(exc).__name__}: {exc}")
        raise
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
    visited = max(progress.visited, report.added + report.updated + report.unchanged + len(report.skipped))
    counts = {**report.counts(), "visited": visited, "known": max(progress.known, visited)}
    failed = report.listing_error is not None
    await runs.finish(
        claim,
        "failed" if failed else "succeeded",
        counts,
        complete=report.complete,
        note=report.note,
        error=report.listing_error,
        skipped=report.skipped,
    )
    return report


async def _heartbeat(
    runs: SyncRuns, claim: RunClaim, progress: _Progress, main: asyncio.Task[object], every: float
) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            held = await runs.renew(claim, progress.counts())
        except StoreError as exc:  # the lease is long: a few missed renewals do no harm
            log.warning("sync %s: could not renew the run's claim (will retry): %s", claim.source, exc)
            continue
        if not held:
            progress.lost = True
            main.cancel()
            return


async def _finish_quietly(runs: SyncRuns, claim: RunClaim, progress: _Progress, error: str) -> None:
    """The run written as failed with `error`, as far as the database allows (the caller re-raises)."""
    try:
        await runs.finish(
            claim,
            "failed",
            progress.counts(),
            error=error,
            skipped=progress.report.skipped if progress.report else (),
        )
    except StoreError as exc:
        log.error("sync %s: could not record the end of the run: %s", claim.source, exc)
