"""How long a source asked us to wait: a 429's `Retry-After` (seconds or an HTTP date), and HTTP dates."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def http_date(value: str | None) -> datetime | None:
    """An HTTP date (`Last-Modified`, `Retry-After`), or None when absent or unreadable."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None


def retry_after(value: str | None, cap: float) -> float:
    """Seconds to wait for a 429: its Retry-After (seconds or an HTTP date), 1 s without one, at most `cap`."""
    if value is None:
        return min(1.0, cap)
    try:
        seconds = float(value)
    except ValueError:
        moment = http_date(value)
        seconds = (moment - datetime.now(UTC)).total_seconds() if moment else 1.0
    return max(0.0, min(seconds, cap))
