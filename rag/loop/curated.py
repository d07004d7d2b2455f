"""Curated answers: an expert's answer to a question, kept and searched like a document.

A curated answer is written once (from a hand-off's "Reply to asker", or `candor answers add`) and
then lives two lives: its record in `curated_answers` (question, answer, author, dates, expiry,
access groups, the hand-off and trace it came from) and a document of format `curated` in its
knowledge base, source ``curated:<id>``, made by the ordinary ingest path (`Ingestor.ingest_text`),
so that retrieval, the gates, conflicts and citations treat it like any other document:

- its title and heading are the question, its text the answer;
- its effective date is the day it was last written, so a newer document that disagrees wins the
  conflict and an older one loses it (docs/design.md: newer date, then authority);
- its authority is `CANDOR_CURATED_AUTHORITY` for its base (default 0, as an ordinary document),
  capped by the base's ceiling: a person's reply never silently outranks the policy;
- citations show it as "answered by <name> on <date>" (the author is read only from documents of
  format `curated`, which no file can claim).

Expiring one deletes its document (the record stays, marked expired); a future expiry is applied
by `expire_due`, which `candor serve` runs every minute. Removing one deletes both.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import yaml
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import ConfigError, NotFound, StoreError
from rag.experts import curated_authority
from rag.ingest.pipeline import Ingestor
from rag.model.loop import CuratedAnswer, CuratedDraft
from rag.model.types import clean_text
from rag.store.postgres import KnowledgeBase, PostgresStore

log = logging.getLogger("candor.curated")

KIND = "curated"
"""The document format (and source kind) of a curated answer."""
MAX_QUESTION_CHARS = 1_000
MAX_ANSWER_CHARS = 8_000

COLUMNS = (
    "c.id, kb.name AS knowledge_base, c.question, c.answer, c.author, c.author_name, c.access_groups, "
    "c.handoff_id::text AS handoff_id, c.trace_id::text AS trace_id, c.created_at, c.updated_at, c.expires_at, "
    "c.document_id"
)
SELECT = f"SELECT {COLUMNS} FROM curated_answers c JOIN knowledge_bases kb ON kb.id = c.kb_id"
INSERT = text(
    "INSERT INTO curated_answers (kb_id, question, answer, author, author_name, access_groups, handoff_id, "
    "trace_id, expires_at) VALUES (:kb, :question, :answer, :author, :author_name, CAST(:groups AS text[]), "
    "CAST(:handoff AS uuid), CAST(:trace AS uuid), :expires) ON CONFLICT (handoff_id) DO NOTHING RETURNING id"
)
OF_HANDOFF = text("SELECT id FROM curated_answers WHERE handoff_id = CAST(:handoff AS uuid)")
BY_SOURCE = text("DELETE FROM documents WHERE source = :source AND format = 'curated'")
UPDATE = text(
    "UPDATE curated_answers SET question = :question, answer = :answer, access_groups = CAST(:groups AS text[]), "
    "expires_at = :expires, updated_at = now() WHERE id = :id"
)
SET_DOCUMENT = text("UPDATE curated_answers SET document_id = :document WHERE id = :id")
DUE = text(
    "SELECT id FROM curated_answers WHERE (expires_at <= now() AND document_id IS NOT NULL) "
    "OR ((expires_at IS NULL OR expires_at > now()) AND document_id IS NULL "
    "AND updated_at < now() - interval '1 minute') ORDER BY id"
)
"""Expired but still indexed, or live but not indexed (its indexing failed: the sweep tries again; not
one being written this minute)."""
DELETE = text("DELETE FROM curated_answers WHERE id = :id")


_UNSET: Any = object()


class CuratedAnswers:
    """Add, edit, expire, remove and list curated answers; each change re-indexes its document."""

    def __init__(
        self,
        store: PostgresStore,
        ingestor: Callable[[], Ingestor],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        authority: str = "0",
    ) -> None:
        self.store = store
        self.authority = authority
        """CANDOR_CURATED_AUTHORITY: a curated answer's authority per knowledge base."""
        self.engine: AsyncEngine = store.engine
        self.ingestor = ingestor
        self.clock = clock

    async def add(self, draft: CuratedDraft, kb: KnowledgeBase) -> CuratedAnswer:
        question, answer = _question(draft.question), _answer(draft.answer)
        groups = _groups(draft.access_groups)
        author_name = clean_text(draft.author_name).strip() or clean_text(draft.author).strip()
        if not author_name:
            raise ConfigError("a curated answer needs its author's name")
        params = {
            "kb": kb.id,
            "question": question,
            "answer": answer,
            "author": clean_text(draft.author).strip() or author_name,
            "author_name": author_name,
            "groups": list(groups),
            "handoff": draft.handoff_id,
            "trace": draft.trace_id,
            "expires": draft.expires_at,
        }
        async with self._begin("store a curated answer") as conn:
            made = (await conn.execute(INSERT, params)).scalar_one_or_none()
            if made is None:  # this hand-off's reply was kept already (a form sent twice): that one
                existing = (await conn.execute(OF_HANDOFF, {"handoff": draft.handoff_id})).scalar_one()
        if made is None:
            return await self.get(int(existing))
        return await self._index(await self.get(int(made)))

    async def edit(
        self,
        curated_id: int,
        *,
        question: str | None = None,
        answer: str | None = None,
        access_groups: Sequence[str] | None = None,
        expires_at: datetime | None = _UNSET,
    ) -> CuratedAnswer:
        """Change what is given (expiry: None clears it); the document is re-indexed, dated today."""
        current = await self.get(curated_id)
        params = {
            "id": curated_id,
            "question": _question(question) if question is not None else current.question,
            "answer": _answer(answer) if answer is not None else current.answer,
            "groups": list(_groups(access_groups) if access_groups is not None else current.access_groups),
            "expires": current.expires_at if expires_at is _UNSET else expires_at,
        }
        async with self._begin("edit a curated answer") as conn:
            await conn.execute(UPDATE, params)
        return await self._index(await self.get(curated_id))

    async def expire(self, curated_id: int) -> CuratedAnswer:
        """Stop answering with it now; its record stays (`candor answers list --all`)."""
        current = await self.get(curated_id)
        if current.expires_at is None or current.expires_at > self.clock():
            async with self._begin("expire a curated answer") as conn:
                await conn.execute(
                    text("UPDATE curated_answers SET expires_at = :now, updated_at = now() WHERE id = :id"),
                    {"id": curated_id, "now": self.clock()},
                )
        return await self._index(await self.get(curated_id))

    async def remove(self, curated_id: int) -> CuratedAnswer:
        """Delete it and its document."""
        current = await self.get(curated_id)
        async with self._begin("remove a curated answer") as conn:
            await conn.execute(BY_SOURCE, {"source": current.source})  # by source: also one never linked
            await conn.execute(DELETE, {"id": curated_id})
        return current

    async def expire_due(self) -> int:
        """Take the document of every curated answer whose expiry has passed out of the index, and
        index every live one that is not (its indexing failed when it was written)."""
        async with self._begin("find expired curated answers") as conn:
            due = [int(row[0]) for row in (await conn.execute(DUE)).all()]
        for curated_id in due:
            await self._index(await self.get(curated_id))
        if due:
            log.info("expired %d curated answers", len(due))
        return len(due)

    async def get(self, curated_id: int) -> CuratedAnswer:
        async with self._begin("read a curated answer") as conn:
            row = (await conn.execute(text(SELECT + " WHERE c.id = :id"), {"id": curated_id})).mappings().first()
        if row is None:
            raise NotFound(f"no curated answer {curated_id}")
        return _curated(row)

    async def find(self, *, include_expired: bool = False, for_trace: str | None = None) -> list[CuratedAnswer]:
        where, params = [], {}
        if not include_expired:
            where.append("(c.expires_at IS NULL OR c.expires_at > now())")
        if for_trace is not None:
            where.append("c.trace_id = CAST(:trace AS uuid)")
            params["trace"] = for_trace
        statement = SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY c.id"
        async with self._begin("list curated answers") as conn:
            rows = (await conn.execute(text(statement), params)).mappings().all()
        return [_curated(row) for row in rows]

    async def _index(self, curated: CuratedAnswer) -> CuratedAnswer:
        """Make its document say what the record says: written (or replaced) while it is live,
        deleted once it has expired."""
        if curated.expired(self.clock()):
            async with self._begin("take an expired curated answer out of the index") as conn:
                await conn.execute(BY_SOURCE, {"source": curated.source})
            if curated.document_id is not None:
                await self._set_document(curated.id, None)
            return await self.get(curated.id)
        kb = await self.store.knowledge_base(curated.knowledge_base)
        if kb is None:  # the base was deleted under it: the row went with it (ON DELETE CASCADE)
            raise NotFound(f"no knowledge base {curated.knowledge_base!r}")
        document_id = await self.ingestor().ingest_text(
            curated.source,
            _markdown(curated, kb, self.clock(), authority=curated_authority(self.authority, kb.name)),
            kb=kb,
            access=curated.access_groups,
            kind=KIND,
        )
        await self._set_document(curated.id, document_id)
        return await self.get(curated.id)

    async def _set_document(self, curated_id: int, document_id: int | None) -> None:
        async with self._begin("link a curated answer to its document") as conn:
            await conn.execute(SET_DOCUMENT, {"id": curated_id, "document": document_id})

    def _begin(self, what: str) -> AbstractAsyncContextManager[AsyncConnection]:
        return _transaction(self.engine, what)


@asynccontextmanager
async def _transaction(engine: AsyncEngine, what: str) -> AsyncIterator[AsyncConnection]:
    """One transaction; a database failure becomes `StoreError` naming `what`."""
    try:
        async with engine.begin() as conn:
            yield conn
    except SQLAlchemyError as exc:
        raise StoreError(f"could not {what}: {exc}") from exc


def _markdown(curated: CuratedAnswer, kb: KnowledgeBase, now: datetime, *, authority: int) -> str:
    """The document: front matter (title, date, authority, author), the question as its heading
    (context for retrieval, never evidence) and the answer as its text."""
    front = {
        "title": curated.question,
        "date": curated.updated_at.date().isoformat() if curated.updated_at <= now else now.date().isoformat(),
        "authority": min(authority, kb.max_authority),
        "answered_by": curated.author_name,
        "curated_id": curated.id,
    }
    heading = " ".join(curated.question.split())
    return f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True)}---\n# {heading}\n\n{curated.answer}\n"


def _question(value: str) -> str:
    cleaned = " ".join(clean_text(value).split())
    if not cleaned:
        raise ConfigError("a curated answer needs the question it answers")
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise ConfigError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return cleaned


def _answer(value: str) -> str:
    cleaned = clean_text(value).strip()
    if not cleaned:
        raise ConfigError("a curated answer needs its answer")
    if len(cleaned) > MAX_ANSWER_CHARS:
        raise ConfigError(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    return cleaned


def _groups(groups: Sequence[str]) -> tuple[str, ...]:
    cleaned = [clean_text(group).strip() for group in groups]
    if not all(cleaned):
        raise ConfigError("an access group name is blank")
    return tuple(sorted(set(cleaned)))


def _curated(row: Any) -> CuratedAnswer:
    return CuratedAnswer(
        id=int(row["id"]),
        knowledge_base=str(row["knowledge_base"]),
        question=str(row["question"]),
        answer=str(row["answer"]),
        author=str(row["author"]),
        author_name=str(row["author_name"]),
        access_groups=tuple(row["access_groups"] or ()),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=row["expires_at"],
        handoff_id=row["handoff_id"],
        trace_id=row["trace_id"],
        document_id=None if row["document_id"] is None else int(row["document_id"]),
    )
