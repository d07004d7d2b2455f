"""Tracking: the gate log in Postgres (traces, gate outcomes, sources, dropped sentences), feedback,
eval runs, and the ledger of chat platform events.

`TraceStore` is the entry point for the gate log; records the database cannot take are spooled to
disk and replayed later (`rag.tracking.spool`). `EventLedger` claims chat events so each is
answered once, by one replica, and taken over when that replica dies (`rag.tracking.events`).
"""

from rag.tracking.claims import Claim, Completion, ThreadTurn
from rag.tracking.events import EventLedger
from rag.tracking.store import TraceStore

__all__ = ["Claim", "Completion", "EventLedger", "ThreadTurn", "TraceStore"]
