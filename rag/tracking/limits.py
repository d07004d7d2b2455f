"""`QuestionLimits`: how many questions one asker, one conversation and one anonymous address may ask a
minute, counted in Postgres so that every replica shares the count (migration 0010).

Each question from a chat surface (Slack, Teams, the chat page; not the CLI or `candor eval`) adds
one to the current minute's count of each bucket it belongs to: its asker, its conversation and, for
an anonymous chat page visitor, its network address (a browser can drop its cookie id). Past a
bucket's limit the question is refused with `RateLimited`: a sentence the adapters show as it is
(when to try again), and a warning in the log naming the platform and the bucket's kind (never
the id). A refused question is counted too, so a flood stays refused until the minute ends.

Buckets are stored as SHA-256 digests and deleted a few minutes after their minute, so the table
says nothing about who asked. When the database cannot be reached the question is let through
(logged): the answer needs the database anyway, and its own error says so better.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import RateLimited
from rag.model.answers import Question

log = logging.getLogger("candor.limits")

LIMITED_PLATFORMS = frozenset({"slack", "teams", "web"})
KEEP_WINDOWS = 5

SECONDS = "CAST(:window AS integer)"
WINDOW_START = f"to_timestamp(floor(extract(epoch FROM now()) / {SECONDS}) * {SECONDS})"
COUNT = text(
    "INSERT INTO rate_counts AS r (bucket, window_start, count) "
    f"SELECT bucket, {WINDOW_START}, 1 FROM unnest(CAST(:buckets AS text[])) AS bucket "
    "ON CONFLICT (bucket, window_start) DO UPDATE SET count = r.count + 1 "
    "RETURNING r.bucket, r.count AS n, "
    f"CEIL(EXTRACT(EPOCH FROM (r.window_start + make_interval(secs => {SECONDS}) - now())))::int AS retry_after"
)
FORGET = text(
    f"DELETE FROM rate_counts WHERE window_start < now() - make_interval(secs => {SECONDS} * CAST(:keep AS integer))"
)


@dataclass(frozen=True, slots=True)
class _Bucket:
    kind: str
    digest: str
    limit: int


class QuestionLimits:
    """Per-minute limits on questions (0: no limit of that kind)."""

    def __init__(self, engine: AsyncEngine, *, per_user: int, per_conversation: int, window_seconds: int = 60) -> None:
        """`window_seconds`: the span the limits count over, a minute unless a test needs longer."""
        if per_user < 0 or per_conversation < 0:
            raise ValueError("a rate limit is a number of questions per minute, 0 for none")
        if window_seconds < 1:
            raise ValueError("the rate limit's window is at least a second")
        self.engine = engine
        self.per_user = per_user
        self.per_conversation = per_conversation
        self.window = window_seconds

    async def admit(self, question: Question) -> None:
        """Count `question`; raise `RateLimited` when one of its buckets is over its limit."""
        buckets = self._buckets(question)
        if not buckets:
            return
        try:
            async with self.engine.begin() as connection:
                counting = {"buckets": [b.digest for b in buckets], "window": self.window}
                rows = (await connection.execute(COUNT, counting)).all()
                if any(row.n == 1 for row in rows):  # a new window for someone: forget old windows
                    await connection.execute(FORGET, {"window": self.window, "keep": KEEP_WINDOWS})
        except (SQLAlchemyError, OSError) as exc:
            log.warning("rate limits not checked (database unavailable): %s", exc)
            return
        counted = {row.bucket: (row.n, max(1, row.retry_after)) for row in rows}
        for bucket in buckets:
            count, retry_after = counted[bucket.digest]
            if count > bucket.limit:
                log.warning(
                    "question refused: over the %s limit (%d a minute)",
                    bucket.kind,
                    bucket.limit,
                    extra={"platform": question.platform, "limit": bucket.kind},
                )
                raise RateLimited(_message(bucket, self.window, retry_after), retry_after)

    def _buckets(self, question: Question) -> list[_Bucket]:
        if question.platform not in LIMITED_PLATFORMS:
            return []
        wanted = [
            ("asker", question.asker, self.per_user),
            ("address", question.client_address, self.per_user),
            ("conversation", question.conversation, self.per_conversation),
        ]
        return [
            _Bucket(kind, _digest(f"{kind}:{question.platform}:{value}"), limit)
            for kind, value, limit in wanted
            if value and limit
        ]


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _message(bucket: _Bucket, window: int, retry_after: int) -> str:
    who = "this conversation has" if bucket.kind == "conversation" else "you have"
    span = "a minute" if window == 60 else f"{window} seconds"
    return (
        f"{who} asked more than {bucket.limit} questions in {span}, the most Candor takes; "
        f"please try again in {retry_after} seconds"
    )
