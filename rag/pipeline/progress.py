"""Telling the asker's adapter which stage is running (`Question.progress`, rag/model/progress.py).

The `Answerer` makes one `Reporter` per answer and the steps call it as they start, with counts
only: a stage's phrase is built here from its name and count, never from the draft. A listener
that raises is logged once and not called again for that answer; the answer goes on.
"""

from __future__ import annotations

import logging

from rag.model.progress import ProgressListener, Stage, StageName

log = logging.getLogger("candor.answer")


def stage(name: StageName, *, attempt: int = 1, count: int | None = None) -> Stage:
    """The stage `name` of attempt `attempt`, with its phrase."""
    return Stage(name, _phrase(name, count), attempt, count)


def _phrase(name: StageName, count: int | None) -> str:
    if name == "understand":
        return "Reading the question"
    if name == "retrieve":
        return "Searching the documents"
    if name == "rerank":
        return f"Ranking {_counted(count, 'passage')}"
    if name == "synthesise":
        return "Writing the answer"
    if name == "critic":
        return f"Checking {_counted(count, 'sentence')}"
    if name == "consistency":
        return f"Comparing the answer with {_counted(count, 'other draft')}"
    return "Trying again with more passages"


def _counted(count: int | None, noun: str) -> str:
    if count is None:
        return f"the {noun}s"
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class Reporter:
    """Calls one answer's listener with each stage; does nothing without one."""

    def __init__(self, listener: ProgressListener | None) -> None:
        self._listener = listener

    def __call__(self, name: StageName, *, attempt: int = 1, count: int | None = None) -> None:
        listener = self._listener
        if listener is None:
            return
        try:
            listener(stage(name, attempt=attempt, count=count))
        except Exception:  # the caller's defect: logged, and the answer goes on without progress
            self._listener = None
            log.warning(
                "the progress listener failed at stage %s: it hears nothing more of this answer",
                name,
                exc_info=True,
                extra={"stage": name, "attempt": attempt},
            )


SILENT = Reporter(None)
"""No listener: the default of an attempt run without one (tests, `candor eval`)."""
