"""Candor's core, and the only door `bot/` uses (with `rag.model`, `rag.errors` and `rag.config`).

`await rag.answer(question)` is the whole gated pipeline: it opens a process-wide runtime from the
environment's settings on first use, and `rag.close()` closes it. Adapters and commands that hold
a runtime (`async with rag.open_candor(settings) as candor`) call its methods: `answer`,
`record_feedback`, `search`, `ingest`, `evaluate`, `report`, `gaps`, `audit_conflicts`,
`audit_answers`, `export_labels`, `import_labels`, `export_feedback`, `health`. The names below
are imported on first use, so `import rag.model` (say) does not load the whole core.

What the facade hands out is listed in docs/design.md ("Public interface"); tests/unit/test_facade.py
holds `_EXPORTS`, `__all__`, that list and `bot/`'s imports in agreement.
"""

from __future__ import annotations

import asyncio
import importlib
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.ingest.pipeline import IngestReport
    from rag.ingest.sources.base import SourceDocument
    from rag.ingest.sources.overview import SourceOverview
    from rag.ingest.sources.sync import SyncProgress, SyncReport
    from rag.insights.audit.answers import DEFAULT_SAMPLE, AuditRequest, AuditResult
    from rag.insights.audit.labels import Imported
    from rag.insights.conflicts.findings import AuditedDocument, ConflictAudit, ConflictPair, Difference
    from rag.insights.files import write_private
    from rag.insights.report.build import (
        By,
        Window,
        parse_interval,
        parse_moment,
        relaxed_false_alarms,
        report_window,
    )
    from rag.model.answers import Answer, Question
    from rag.pipeline.understand import MAX_HISTORY_TURNS, MAX_QUESTION_CHARS
    from rag.runtime import Candor, EvalRun, open_candor, prepare_embedder
    from rag.tracking.claims import Claim, Completion, ThreadTurn
    from rag.tracking.retention import Purged

_EXPORTS = {
    "Candor": "rag.runtime",
    "EvalRun": "rag.runtime",
    "open_candor": "rag.runtime",
    "prepare_embedder": "rag.runtime",
    "IngestReport": "rag.ingest.pipeline",
    "SyncReport": "rag.ingest.sources.sync",
    "SyncProgress": "rag.ingest.sources.sync",
    "SourceDocument": "rag.ingest.sources.base",
    "SourceOverview": "rag.ingest.sources.overview",
    "DEFAULT_SAMPLE": "rag.insights.audit.answers",
    "AuditRequest": "rag.insights.audit.answers",
    "AuditResult": "rag.insights.audit.answers",
    "Imported": "rag.insights.audit.labels",
    "AuditedDocument": "rag.insights.conflicts.findings",
    "ConflictAudit": "rag.insights.conflicts.findings",
    "ConflictPair": "rag.insights.conflicts.findings",
    "Difference": "rag.insights.conflicts.findings",
    "write_private": "rag.insights.files",
    "By": "rag.insights.report.build",
    "Window": "rag.insights.report.build",
    "parse_interval": "rag.insights.report.build",
    "parse_moment": "rag.insights.report.build",
    "relaxed_false_alarms": "rag.insights.report.build",
    "report_window": "rag.insights.report.build",
    "MAX_HISTORY_TURNS": "rag.pipeline.understand",
    "MAX_QUESTION_CHARS": "rag.pipeline.understand",
    "Claim": "rag.tracking.claims",
    "Completion": "rag.tracking.claims",
    "ThreadTurn": "rag.tracking.claims",
    "Purged": "rag.tracking.retention",
}
"""What the facade hands out, and where it lives."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once
    return value


_stack: AsyncExitStack | None = None
_runtime: Candor | None = None
_lock: asyncio.Lock | None = None


async def default_runtime() -> Candor:
    """The process-wide runtime, opened from `load_settings()` on first use."""
    global _stack, _runtime, _lock
    from rag.config import load_settings
    from rag.runtime import open_candor

    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        if _runtime is None:
            stack = AsyncExitStack()
            _runtime = await stack.enter_async_context(open_candor(load_settings()))
            _stack = stack
    return _runtime


async def answer(question: Question) -> Answer:
    """Answer one question through the gated pipeline (docs/design.md, "The flow")."""
    return await (await default_runtime()).answer(question)


async def close() -> None:
    global _stack, _runtime
    if _stack is not None:
        await _stack.aclose()
    _stack, _runtime = None, None


__all__ = [
    "DEFAULT_SAMPLE",
    "MAX_HISTORY_TURNS",
    "MAX_QUESTION_CHARS",
    "AuditRequest",
    "AuditResult",
    "AuditedDocument",
    "By",
    "Candor",
    "Claim",
    "Completion",
    "ConflictAudit",
    "ConflictPair",
    "Difference",
    "EvalRun",
    "Imported",
    "IngestReport",
    "Purged",
    "SourceDocument",
    "SourceOverview",
    "SyncProgress",
    "SyncReport",
    "ThreadTurn",
    "Window",
    "answer",
    "close",
    "default_runtime",
    "open_candor",
    "parse_interval",
    "parse_moment",
    "prepare_embedder",
    "relaxed_false_alarms",
    "report_window",
    "write_private",
]
