"""Tracking: the gate log in Postgres (traces, gate outcomes, sources, dropped sentences), feedback, eval runs.

`TraceStore` is the one entry point; records the database cannot take are spooled to disk and
replayed later (`rag.tracking.spool`).
"""

from rag.tracking.store import TraceStore

__all__ = ["TraceStore"]
