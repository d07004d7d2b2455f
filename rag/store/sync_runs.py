"""The runs of synced sources (table `sync_runs`, migration 0018), and the claim on a source.

A run is claimed by inserting its row as `running`. The partial unique index
`sync_runs_one_running` allows one running row per source and knowledge base, so of two replicas
that claim one source at once, the second insert meets the first's row and inserts nothing: the
claim is refused, and nothing runs twice. As the event ledger does (`rag.tracking.event_queries`),
a claim holds a lease on the database's clock (`lease_until`) that its process renews while it
works (`renew`, with the run's progress); a running row whose lease ran out belongs to a process
that died: the next claim marks it `abandoned`, in the same transaction, and takes the source.
A renewal that finds its row no longer running (it was abandoned meanwhile) returns False, and the
run stops. A run held by a process of this host (and this process namespace) that no longer exists
(a `candor sync` killed, then started again) is abandoned at once, without waiting for its lease.

Every statement is its own short transaction; times are the database's.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import StoreError

LEASE_SECONDS = 30.0
"""How long a claim holds without a renewal: a run renews it every second or so (its progress), so
a database away for half a minute ends the claim (the run then stops), and a replica that died
holds its sources for half a minute at most."""
COUNTS = ("added", "updated", "unchanged", "deleted", "skipped", "fetched", "narrowed", "visited", "known")
"""The counters a run writes as it goes and when it ends."""
ABANDONED = "its process stopped before the run ended (the claim's lease ran out): nothing more is known of it"
GONE = "its process (on this host) was stopped before the run ended: nothing more is known of it"
MAX_SKIPPED_KEPT = 50
"""Skipped documents (with their reasons) kept per run: the count is whole, the list the first ones."""

Status = Literal["succeeded", "failed"]


@dataclass(frozen=True, slots=True)
class RunClaim:
    """This process's hold on one run of one source into one knowledge base."""

    id: int
    source: str
    kb_id: int
    owner: str


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a source's running run: for the message of a claim refused."""

    run_id: int
    owner: str
    trigger: str
    started_at: datetime


def this_process() -> str:
    """The owner written on this process's runs: its host name, process id and (where there is one)
    process namespace, so a run's process can be known gone when it ran on this host."""
    namespace = _namespace()
    return f"{socket.gethostname()} pid {os.getpid()}" + (f" ns {namespace}" if namespace else "")


def _namespace() -> str | None:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


_OWNER = re.compile(r"^(?P<host>.+) pid (?P<pid>[0-9]{1,10})(?: ns (?P<ns>[0-9]+))?$")


def gone(owner: str) -> bool:
    """`owner` names a process of this host and process namespace that no longer exists."""
    found = _OWNER.fullmatch(owner)
    if found is None or found["host"] != socket.gethostname() or found["ns"] != _namespace():
        return False  # another host's, or another container's: only its lease can tell
    pid = int(found["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's): alive
        return False
    return False


_LEASE = "now() + make_interval(secs => :lease)"
_ABANDON = text(
    "UPDATE sync_runs SET status = 'abandoned', finished_at = now(), error = COALESCE(error, :why) "
    "WHERE source = :source AND kb_id = :kb AND status = 'running' AND lease_until < now()"
)
_RUNNING = text("SELECT id, owner FROM sync_runs WHERE source = :source AND kb_id = :kb AND status = 'running'")
_ABANDON_ONE = text(
    "UPDATE sync_runs SET status = 'abandoned', finished_at = now(), error = :why WHERE id = :id AND status = 'running'"
)
_CLAIM = text(
    "INSERT INTO sync_runs (source, kind, kb_id, trigger, owner, lease_until) "
    f"VALUES (:source, :kind, :kb, :trigger, :owner, {_LEASE}) "
    "ON CONFLICT (source, kb_id) WHERE status = 'running' DO NOTHING RETURNING id"
)
_HOLDER = text(
    "SELECT id, owner, trigger, started_at FROM sync_runs "
    "WHERE source = :source AND kb_id = :kb AND status = 'running' AND lease_until >= now()"
)
_SET_COUNTS = ", ".join(f"{name} = :{name}" for name in COUNTS)
_RENEW = text(
    f"UPDATE sync_runs SET lease_until = {_LEASE}, {_SET_COUNTS} WHERE id = :id AND status = 'running' RETURNING id"
)
_FINISH = text(
    f"UPDATE sync_runs SET status = :status, finished_at = now(), {_SET_COUNTS}, complete = :complete, "
    "note = :note, error = :error, skipped_items = CAST(:skipped_items AS jsonb) "
    "WHERE id = :id AND status = 'running' RETURNING id"
)
_NEXT_RUN = text("UPDATE sync_sources SET next_run_at = :at WHERE name = :source AND kb_id = :kb")


class SyncRuns:
    def __init__(self, engine: AsyncEngine, *, owner: str | None = None, lease_seconds: float = LEASE_SECONDS) -> None:
        if lease_seconds <= 0:
            raise ValueError("a claim's lease must be positive")
        self.engine = engine
        self.owner = owner or this_process()
        self.lease_seconds = lease_seconds

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, psycopg.Error) as exc:
            raise StoreError(f"database error: {exc}") from exc

    async def claim(self, source: str, kind: str, kb_id: int, *, trigger: str) -> RunClaim | None:
        """A new running run of `source` into `kb_id`, held by this process; None when another
        holds it now (a run of a dead process is marked abandoned first, and does not count)."""
        names = {"source": source, "kb": kb_id}
        async with self._transaction() as conn:
            held = (await conn.execute(_RUNNING, names)).first()
            if held is not None and gone(str(held[1])):
                await conn.execute(_ABANDON_ONE, {"id": held[0], "why": GONE})
            await conn.execute(_ABANDON, {**names, "why": ABANDONED})
            row = (
                await conn.execute(
                    _CLAIM,
                    {**names, "kind": kind, "trigger": trigger, "owner": self.owner, "lease": self.lease_seconds},
                )
            ).first()
        return None if row is None else RunClaim(int(row[0]), source, kb_id, self.owner)

    async def holder(self, source: str, kb_id: int) -> Holder | None:
        """Who runs `source` into `kb_id` now, if anyone does (a lapsed lease is no one)."""
        async with self._transaction() as conn:
            row = (await conn.execute(_HOLDER, {"source": source, "kb": kb_id})).first()
        return None if row is None else Holder(int(row[0]), str(row[1]), str(row[2]), row[3])

    async def renew(self, claim: RunClaim, counts: Mapping[str, int]) -> bool:
        """The lease extended and the progress so far written; False when the run is no longer
        held (abandoned by another replica after the lease ran out): stop working on it."""
        async with self._transaction() as conn:
            row = (await conn.execute(_RENEW, {"id": claim.id, "lease": self.lease_seconds, **_counts(counts)})).first()
        return row is not None

    async def finish(
        self,
        claim: RunClaim,
        status: Status,
        counts: Mapping[str, int],
        *,
        complete: bool = False,
        note: str | None = None,
        error: str | None = None,
        skipped: Sequence[tuple[str, str]] = (),
    ) -> bool:
        """The run's end, with its outcome; False when it was no longer held (abandoned meanwhile)."""
        kept = [{"document": document, "reason": reason} for document, reason in skipped[:MAX_SKIPPED_KEPT]]
        params: dict[str, Any] = {
            "id": claim.id,
            "status": status,
            "complete": complete,
            "note": note,
            "error": error,
            "skipped_items": json.dumps(kept),
            **_counts(counts),
        }
        async with self._transaction() as conn:
            row = (await conn.execute(_FINISH, params)).first()
        return row is not None

    async def schedule(self, source: str, kb_id: int, at: datetime | None) -> None:
        """When the next scheduled sync of the source is due (None: not known)."""
        async with self._transaction() as conn:
            await conn.execute(_NEXT_RUN, {"source": source, "kb": kb_id, "at": at})


def _counts(counts: Mapping[str, int]) -> dict[str, int]:
    return {name: int(counts.get(name, 0)) for name in COUNTS}
