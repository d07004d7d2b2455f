"""What the event ledger (`rag.tracking.events`) hands out: a `Claim` on a question, the
`Completion` of one, and the `ThreadTurn`s of a thread; and how ledger rows become them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

LEDGER_KEYS = frozenset({"revision", "revised_at", "pending"})
"""The ledger's own keys in a stored payload (see `rag.tracking.events`): not handed to adapters."""


@dataclass(frozen=True, slots=True)
class Claim:
    """This replica's right to answer one question until `lease_until` (the database's clock)."""

    platform: str
    key: str
    owner: str
    attempt: int
    payload: dict[str, Any]
    lease_until: datetime
    taken_over: bool
    """True when this owner took the question from one whose lease ran out."""
    given_up: bool = False
    """True when the question was given up (`max_attempts` owners stopped before answering it): it
    is failed in the ledger, and this owner is the one (of all replicas) to tell the asker."""
    question: str | None = None
    team: str | None = None
    conversation: str | None = None
    thread: str | None = None
    asker: str | None = None
    revision: str | None = None
    """An edited question (`EventLedger.revise`): the edit's revision; its answer replaces the one
    `reply` says was given. None: the question as first asked."""
    reply: Mapping[str, Any] = field(default_factory=dict)
    """Where the answer to the question went so far (what `complete` recorded), e.g. {"ts": [...]}."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A completed claim. `revision`: an edit of the question that arrived while it was answered,
    still held by the same owner (same attempt, lease renewed), to be answered now, replacing the
    answer just recorded; None when the question is done."""

    revision: Claim | None = None


@dataclass(frozen=True, slots=True)
class ThreadTurn:
    """One question asked in a thread, with the answer text when it was recorded."""

    key: str
    asker: str | None
    question: str | None
    answer: str | None
    status: str
    created_at: datetime
    reply: Mapping[str, Any] = field(default_factory=dict)
    """Where the answer went, as `complete` recorded it (Slack: {"ts": [...]}, the answer's messages)."""


def claim_from_row(row: Mapping[str, Any], *, taken_over: bool, given_up: bool = False) -> Claim:
    """The Claim a ledger row (`event_queries.CLAIM_COLUMNS`) stands for, its payload without the ledger's own keys."""
    stored = row["payload"] or {}
    return Claim(
        platform=row["platform"],
        key=row["key"],
        owner=row["owner"],
        attempt=row["attempt"],
        payload={k: v for k, v in stored.items() if k not in LEDGER_KEYS},
        lease_until=row["lease_until"],
        taken_over=taken_over,
        given_up=given_up,
        question=row["question"],
        team=row["team"],
        conversation=row["conversation"],
        thread=row["thread"],
        asker=row["asker"],
        revision=stored.get("revision"),
        reply=dict(row["reply"] or {}),
    )


def held(claim: Claim) -> dict[str, Any]:
    """The parameters that name the hold of `claim` (`event_queries.HELD`): its question, owner and attempt."""
    return {"platform": claim.platform, "key": claim.key, "owner": claim.owner, "attempt": claim.attempt}


def turn_from_row(row: Mapping[str, Any]) -> ThreadTurn:
    """The ThreadTurn a row of `event_queries.THREAD_TURNS` stands for."""
    return ThreadTurn(
        key=row["key"],
        asker=row["asker"],
        question=row["question"],
        answer=row["answer"],
        status=row["status"],
        created_at=row["created_at"],
        reply=row["reply"] or {},
    )
