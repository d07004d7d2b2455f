"""Candor's core: `await rag.answer(question)` is the whole gated pipeline.

Adapters and scripts that already hold a runtime call `Candor.answer` on it (see `rag.runtime`);
`rag.answer` opens a process-wide runtime from the environment's settings on first use, and
`rag.close()` closes it.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.model.answers import Answer, Question
    from rag.runtime import Candor

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
    """Answer one question through the gated pipeline (DESIGN.md, "The flow")."""
    return await (await default_runtime()).answer(question)


async def close() -> None:
    global _stack, _runtime
    if _stack is not None:
        await _stack.aclose()
    _stack, _runtime = None, None


__all__ = ["answer", "close", "default_runtime"]
