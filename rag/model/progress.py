"""Which stage of an answer is running: what a chat adapter may show while the answer is made.

A caller that wants to hear it sets `Question.progress` to a listener; the pipeline calls it with a
`Stage` as each stage starts (rag/pipeline/progress.py). A stage says what is being done and how
much of it ("Checking 4 sentences"), never what the draft says: the critic decides what is
delivered, so no text of an unchecked draft leaves the pipeline before the answer does.

The listener is called synchronously from the answer's own task, so it must be cheap (record the
stage, wake a task of its own): a slow listener slows the answer. One that raises is logged and
told nothing more of that answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

StageName = Literal["understand", "retrieve", "rerank", "synthesise", "critic", "consistency", "retry"]
"""In the order an answer meets them; `retry` starts the second attempt, whose stages follow it."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage as it starts: its name, a short phrase a person reads, and what it counts."""

    name: StageName
    phrase: str
    """"Searching the documents", "Ranking 24 passages", "Checking 4 sentences": a sentence fragment
    that starts with a verb, no full stop."""
    attempt: int = 1
    count: int | None = None
    """The passages ranked, the draft sentences checked, the drafts compared; None for the others."""


ProgressListener = Callable[[Stage], None]
"""Told each stage as it starts (see the module's docstring)."""
