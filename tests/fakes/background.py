"""An event loop on a daemon thread, for fakes whose client is another process or blocks its own loop.

The threaded fakes (`ThreadedFakeSlack`, `ThreadedFakeConnector`, `FakeBotAuth`) each run their
aiohttp server on a `BackgroundLoop`: `start(coroutine)` starts the thread and runs the server's
start-up on it, `run(coroutine)` runs anything else there and waits for the result, `stop(coroutine)`
runs the shut-down and ends the thread. `until` polls a check from the calling thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, coroutine: Coroutine[Any, Any, T]) -> T:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        return self.run(coroutine)

    def stop(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        if self._loop is None or self._thread is None:
            coroutine.close()
            return
        try:
            self.run(coroutine)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
            self._loop, self._thread = None, None

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        if self._loop is None:
            coroutine.close()
            raise RuntimeError(f"{self.name} is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)


def until(check: Callable[[], T | None], within: float) -> T | None:
    """`check()` once it is not None, polling from the calling thread; None after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)
