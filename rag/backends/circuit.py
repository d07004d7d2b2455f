"""A circuit breaker for a model endpoint: stop calling one that keeps failing, try again later.

Closed → (`failures` calls in a row that failed) → open: no call goes out for `reset_seconds` →
half open: one trial call; its success closes the circuit, its failure opens it again. A call that
ends without saying whether the endpoint works (cancelled) frees the trial slot (`release`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from rag.errors import ConfigError


class CircuitBreaker:
    """Closed → (``failures`` failed calls in a row) → open → (``reset_seconds``) → one trial call."""

    def __init__(
        self, *, failures: int = 5, reset_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if failures < 1 or reset_seconds <= 0:
            raise ConfigError("a circuit breaker needs failures >= 1 and reset_seconds > 0")
        self.failures = failures
        self.reset_seconds = reset_seconds
        self.clock = clock
        self._failed = 0
        self._opened_at: float | None = None
        self._trial = False

    @property
    def state(self) -> Literal["closed", "open", "half_open"]:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self._opened_at >= self.reset_seconds else "open"

    def allow(self) -> bool:
        """May a call go out now? In the half-open state, one trial call at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._trial:
            self._trial = True
            return True
        return False

    def release(self) -> None:
        """A call ended without telling whether the endpoint works (cancelled): free the trial slot."""
        self._trial = False

    def succeeded(self) -> None:
        self._failed, self._opened_at, self._trial = 0, None, False

    def failed(self) -> None:
        self._trial = False
        self._failed += 1
        if self._opened_at is not None or self._failed >= self.failures:
            self._opened_at = self.clock()  # (re)open: a failed trial waits another period
