"""Hand-offs: a question passed from the chat to a person, and the person's reply.

`open` is called when an asker clicks "Ask a person"; it is idempotent per trace and asker (a
second click, or Slack's retry of the click, finds the first hand-off and says so), and a trace
that was never recorded raises `UnknownTrace`. The triage post's address is noted once posted
(`note_triage`), the expert's reply with its author once given (`reply`), and the curated answer
saved from it (`link_curated`). What the triage post shows (question, answer, route, sources) is
read from the trace, so it is what the asker saw.

The hand-off keeps the asker's id and where they wait until its trace is purged or forgotten
(`rag.tracking.retention` clears its texts with the trace's).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import NotFound, StoreError, UnknownTrace
from rag.model.loop import HANDOFF_REASONS, CitedDocument, CitedSource, Handoff, HandoffReason
from rag.model.types import clean_text

log = logging.getLogger("candor.handoffs")

MAX_REPLY_CHARS = 8_000

INSERT = text(
    "INSERT INTO handoffs (id, trace_id, platform, asker, reason, reply_to) "
    "SELECT CAST(:id AS uuid), t.id, :platform, :asker, :reason, CAST(:reply_to AS jsonb) FROM traces t "
    "WHERE t.id = CAST(:trace AS uuid) AND t.purged_at IS NULL "
    "ON CONFLICT (trace_id, asker) DO NOTHING RETURNING id::text"
)
CITED = (
    "SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('title', d.title, 'groups', to_jsonb(d.access_groups))), "
    "'[]'::jsonb) FROM documents d JOIN knowledge_bases kb ON kb.id = d.kb_id "
    "WHERE d.source IN (SELECT s ->> 'document' FROM jsonb_array_elements("
    "CASE jsonb_typeof(t.answer -> 'sources') WHEN 'array' THEN t.answer -> 'sources' ELSE '[]'::jsonb END) s) "
    "AND (jsonb_typeof(t.scope -> 'knowledge_bases') IS DISTINCT FROM 'array' "
    "OR kb.name IN (SELECT jsonb_array_elements_text(t.scope -> 'knowledge_bases')))"
)
"""The documents the trace's answer cited, with their access groups now (a document is found by its
source in the bases the question was searched in)."""
SELECT = (
    "SELECT h.id::text AS id, h.trace_id::text AS trace_id, h.platform, h.asker, h.reason, h.reply_to, h.triage, "
    "h.status, h.reply_text, h.replied_by, h.replied_by_name, h.replied_at, h.curated_id, h.created_at, "
    "t.question, t.answer_text, t.route, t.answer -> 'sources' AS sources, t.scope -> 'knowledge_bases' AS kbs, "
    "coalesce(jsonb_array_length(t.scope -> 'groups'), 0) > 0 AS restricted, t.scope -> 'groups' AS groups, "
    f"({CITED}) AS cited "
    "FROM handoffs h JOIN traces t ON t.id = h.trace_id"
)
BY_ID = text(SELECT + " WHERE h.id = CAST(:id AS uuid)")
BY_TRACE_AND_ASKER = text(SELECT + " WHERE h.trace_id = CAST(:trace AS uuid) AND h.asker = :asker")
BY_TRACES = text(SELECT + " WHERE h.trace_id = ANY(CAST(:traces AS uuid[])) ORDER BY h.created_at")
NOTE_TRIAGE = text("UPDATE handoffs SET triage = CAST(:triage AS jsonb) WHERE id = CAST(:id AS uuid)")
CLAIM_TRIAGE = text(
    "UPDATE handoffs SET triage = jsonb_build_object('posting', now()) WHERE id = CAST(:id AS uuid) "
    "AND (triage IS NULL OR (triage ? 'posting' AND CAST(triage ->> 'posting' AS timestamptz) "
    "< now() - make_interval(secs => :stale))) RETURNING id"
)
UNCLAIM_TRIAGE = text("UPDATE handoffs SET triage = NULL WHERE id = CAST(:id AS uuid) AND triage ? 'posting'")
REPLY = text(
    "UPDATE handoffs SET status = 'replied', reply_text = :reply, replied_by = :by, replied_by_name = :name, "
    "replied_at = now() WHERE id = CAST(:id AS uuid) AND status = 'open' RETURNING id"
)
POSTING_STALE_SECONDS = 60
"""A triage post claimed this long ago and never noted was lost with its process: the next click posts."""
LINK_CURATED = text("UPDATE handoffs SET curated_id = :curated WHERE id = CAST(:id AS uuid)")


class Handoffs:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def open(
        self, trace_id: str, *, platform: str, asker: str, reason: HandoffReason, reply_to: Mapping[str, Any]
    ) -> tuple[Handoff, bool]:
        """The hand-off of this trace by this asker, made now (True) or found (False)."""
        if reason not in HANDOFF_REASONS:
            raise ValueError(f"unknown hand-off reason {reason!r}")
        _uuid(trace_id, UnknownTrace(f"no trace {trace_id!r}"))
        params = {
            "id": str(uuid.uuid4()),
            "trace": trace_id,
            "platform": platform,
            "asker": asker,
            "reason": reason,
            "reply_to": json.dumps(dict(reply_to)),
        }
        async with self._begin("hand a question to a person") as conn:
            made = (await conn.execute(INSERT, params)).scalar_one_or_none()
            row = (await conn.execute(BY_TRACE_AND_ASKER, {"trace": trace_id, "asker": asker})).mappings().first()
        if row is None:
            raise UnknownTrace(f"no trace {trace_id!r}")
        handoff = _handoff(row)
        if made is not None:
            log.info("question handed to a person", extra={"trace_id": trace_id, "handoff": handoff.id})
        return handoff, made is not None

    async def get(self, handoff_id: str) -> Handoff:
        _uuid(handoff_id, NotFound(f"no hand-off {handoff_id!r}"))
        async with self._begin("read a hand-off") as conn:
            row = (await conn.execute(BY_ID, {"id": handoff_id})).mappings().first()
        if row is None:
            raise NotFound(f"no hand-off {handoff_id!r}")
        return _handoff(row)

    async def for_traces(self, trace_ids: Sequence[str]) -> list[Handoff]:
        """The hand-offs of these traces, oldest first (the gaps report links them)."""
        if not trace_ids:
            return []
        async with self._begin("read hand-offs") as conn:
            rows = (await conn.execute(BY_TRACES, {"traces": list(trace_ids)})).mappings().all()
        return [_handoff(row) for row in rows]

    async def claim_triage(self, handoff_id: str) -> bool:
        """True for the one caller that is to post the triage message now (none posted, or a post
        claimed over a minute ago never noted); a double click or a retried delivery gets False."""
        async with self._begin("claim a hand-off's triage post") as conn:
            won = (await conn.execute(CLAIM_TRIAGE, {"id": handoff_id, "stale": POSTING_STALE_SECONDS})).first()
        return won is not None

    async def unclaim_triage(self, handoff_id: str) -> None:
        """The post failed: the next click tries again."""
        async with self._begin("release a hand-off's triage post") as conn:
            await conn.execute(UNCLAIM_TRIAGE, {"id": handoff_id})

    async def note_triage(self, handoff_id: str, triage: Mapping[str, Any]) -> None:
        async with self._begin("note where a hand-off was posted") as conn:
            await conn.execute(NOTE_TRIAGE, {"id": handoff_id, "triage": json.dumps(dict(triage))})

    async def reply(self, handoff_id: str, reply: str, *, by: str, by_name: str) -> tuple[Handoff, bool]:
        """Store the expert's reply, once: (the hand-off, True) for the reply stored now; (the hand-off
        as first answered, False) when it was answered before (a form sent twice, two experts)."""
        cleaned = clean_text(reply).strip()
        if not cleaned:
            raise ValueError("an empty reply")
        if len(cleaned) > MAX_REPLY_CHARS:
            raise ValueError(f"a reply is at most {MAX_REPLY_CHARS} characters")
        await self.get(handoff_id)
        async with self._begin("store a reply to a hand-off") as conn:
            stored = await conn.execute(REPLY, {"id": handoff_id, "reply": cleaned, "by": by, "name": by_name or by})
            now = stored.first() is not None
        return await self.get(handoff_id), now

    async def link_curated(self, handoff_id: str, curated_id: int) -> None:
        async with self._begin("link a hand-off to its curated answer") as conn:
            await conn.execute(LINK_CURATED, {"id": handoff_id, "curated": curated_id})

    @asynccontextmanager
    async def _begin(self, what: str) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            if isinstance(exc, IntegrityError):
                raise UnknownTrace(f"could not {what}: the trace is not on record") from exc
            raise StoreError(f"could not {what}: {exc}") from exc


def _uuid(value: str, error: Exception) -> None:
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise error from None


def _handoff(row: Any) -> Handoff:
    sources = tuple(
        CitedSource(int(s.get("n") or i), str(s.get("title") or s.get("document") or ""), s.get("url"))
        for i, s in enumerate(row["sources"] or (), 1)
        if isinstance(s, dict)
    )
    kbs = row["kbs"]
    return Handoff(
        id=row["id"],
        trace_id=row["trace_id"],
        platform=row["platform"],
        asker=row["asker"],
        reason=row["reason"],
        reply_to=dict(row["reply_to"] or {}),
        question=row["question"],
        answer_text=row["answer_text"],
        route=row["route"],
        sources=sources,
        triage=dict(row["triage"]) if row["triage"] else None,
        status=row["status"],
        reply_text=row["reply_text"],
        replied_by=row["replied_by"],
        replied_by_name=row["replied_by_name"],
        replied_at=row["replied_at"],
        curated_id=row["curated_id"],
        created_at=row["created_at"],
        knowledge_bases=tuple(kbs) if isinstance(kbs, list) else None,
        restricted=bool(row["restricted"]),
        groups=tuple(str(g) for g in row["groups"]) if isinstance(row["groups"], list) else (),
        cited=tuple(
            sorted(
                CitedDocument(str(doc.get("title") or ""), tuple(sorted(str(g) for g in doc.get("groups") or ())))
                for doc in row["cited"] or ()
                if isinstance(doc, dict)
            )
        ),
    )
