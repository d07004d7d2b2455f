"""The rows of `candor feedback export`: every vote of a window with the answer it is on.

A vote's time is when it was last given (`feedback.updated_at`: a changed vote replaces the earlier
one, and counts when it was changed); the window is `[since, until)` on that time. The answer's
own time, platform, question, text and route come from its trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import StoreError

VOTES = text(
    """
    SELECT CAST(t.id AS text) AS trace_id, t.created_at, COALESCE(t.platform, f.platform) AS platform,
           t.question, t.answer_text, t.route, f.rating, f.comment, f.user_id, f.updated_at AS voted_at
    FROM feedback f JOIN traces t ON t.id = f.trace_id
    WHERE f.updated_at >= :since AND f.updated_at < :until
    ORDER BY f.updated_at, t.id, f.id
    """
)


@dataclass(frozen=True, slots=True)
class VoteRow:
    trace_id: str
    created_at: datetime
    """When the answer was made."""
    platform: str | None
    question: str
    answer_text: str
    route: str
    rating: Literal["up", "down"]
    reason: str | None
    """The comment given with the vote."""
    user: str | None
    """The voter's id as the platform gave it (pseudonymised on export, see `rag.insights.feedback.export`)."""
    voted_at: datetime


async def votes(engine: AsyncEngine, since: datetime, until: datetime) -> list[VoteRow]:
    """Every vote given in `[since, until)`, oldest first, with its answer."""
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(VOTES, {"since": since, "until": until})).all()
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read the feedback: {exc}") from exc
    return [
        VoteRow(
            trace_id=row.trace_id,
            created_at=row.created_at,
            platform=row.platform,
            question=row.question,
            answer_text=row.answer_text,
            route=row.route,
            rating="up" if row.rating > 0 else "down",
            reason=row.comment,
            user=row.user_id,
            voted_at=row.voted_at,
        )
        for row in rows
    ]
