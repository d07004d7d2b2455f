"""What every source's client shares: how it names itself to the services it reads, how it reads
their timestamps, and how it escapes text put into the HTML a page is stored as."""

from __future__ import annotations

from datetime import datetime

USER_AGENT = "CandorBot/1.0 (+https://github.com/candor; knowledge base sync)"
"""Sent with every request, so a site's or a tenant's owner can see who is reading."""


def moment(value: object) -> datetime | None:
    """An ISO 8601 timestamp as the APIs give them ("2026-01-10T09:00:00.000Z"); None when absent
    or unreadable (a document then gets the sync's own date)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def escape_html(text: str) -> str:
    """Text (a title) made safe to place in HTML: `&`, `<` and `>` escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
