"""The reads behind the dashboard's sources, knowledge bases and documents pages.

Each page is a few statements on one pooled connection in autocommit (`PostgresStore.reading`),
written to stay fast with 50,000 documents in a base: a base's documents a page at a time in title
order off the `documents_kb_title` index, runs through `sync_runs_latest`, the answers that cited a
document through `trace_sources_document_id` (migration 0018), a document's chunks through their
`(document_id, position)` key. A search by title or URL is a case-insensitive substring match
(`ILIKE`, its wildcards escaped): a scan of the base's documents, ~50,000 rows at most.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rag.model.sources import (
    AccessShare,
    ChunkText,
    CitingAnswer,
    DocumentPage,
    DocumentSearch,
    DocumentSummary,
    KnowledgeBaseStatus,
    SyncRun,
)
from rag.store.postgres import PostgresStore

CITED_DAYS = 30
MAX_CITING = 100
RUN_COLUMNS = (
    "r.id, r.trigger, r.owner, r.status, r.started_at, r.finished_at, r.added, r.updated, r.unchanged, r.deleted, "
    "r.skipped, r.fetched, r.narrowed, r.visited, r.known, r.complete, r.note, r.error, r.skipped_items, "
    "r.lease_until < now() AS lapsed"
)
_SOURCES = f"""
SELECT c.name, c.kb, s.last_success_at, s.next_run_at, held.n, {RUN_COLUMNS}
FROM unnest(%(names)s::text[], %(kbs)s::text[]) WITH ORDINALITY AS c(name, kb, n)
LEFT JOIN knowledge_bases k ON k.name = c.kb
LEFT JOIN sync_sources s ON s.name = c.name AND s.kb_id = k.id
LEFT JOIN LATERAL (
    SELECT count(*) AS n FROM sync_items i WHERE i.source_id = s.id AND i.document_id IS NOT NULL
) held ON true
LEFT JOIN LATERAL (
    SELECT * FROM sync_runs x WHERE x.source = c.name AND x.kb_id = k.id ORDER BY x.started_at DESC, x.id DESC LIMIT 1
) r ON true
ORDER BY c.n
"""
_SYNCED = "SELECT s.name, s.kind, k.name FROM sync_sources s JOIN knowledge_bases k ON k.id = s.kb_id ORDER BY 3, 1"
_RUNS = f"""
SELECT {RUN_COLUMNS} FROM sync_runs r JOIN knowledge_bases k ON k.id = r.kb_id
WHERE r.source = %(name)s AND k.name = %(kb)s ORDER BY r.started_at DESC, r.id DESC LIMIT %(limit)s
"""
_BASES = """
SELECT k.name, count(d.id), COALESCE(sum(d.chunk_count), 0), max(d.effective_date), min(d.effective_date),
       (SELECT count(*) FROM curated_answers c WHERE c.kb_id = k.id AND (c.expires_at IS NULL OR c.expires_at > now())),
       ARRAY(SELECT s.name FROM sync_sources s WHERE s.kb_id = k.id ORDER BY s.name)
FROM knowledge_bases k LEFT JOIN documents d ON d.kb_id = k.id GROUP BY k.id ORDER BY k.name
"""
_SHARES = """
SELECT k.name, d.access_groups, count(*), COALESCE(sum(d.chunk_count), 0)
FROM documents d JOIN knowledge_bases k ON k.id = d.kb_id GROUP BY k.name, d.access_groups ORDER BY 1, 3 DESC
"""
_DOCUMENT_COLUMNS = (
    "d.id, k.name, d.title, d.source, d.url, d.effective_date, d.access_groups, d.chunk_count, d.updated_at, "
    "synced.name, synced.seen_at"
)
_SYNCED_BY = """
LEFT JOIN LATERAL (
    SELECT s.name, i.seen_at FROM sync_items i JOIN sync_sources s ON s.id = i.source_id
    WHERE i.document_id = d.id ORDER BY i.seen_at DESC LIMIT 1
) synced ON true
"""
_MATCHES = (
    " AND (lower(d.title) LIKE %(like)s OR lower(d.source) LIKE %(like)s"
    " OR (d.url IS DISTINCT FROM d.source AND lower(d.url) LIKE %(like)s))"
)
_FROM_SOURCE = (
    " AND d.id IN (SELECT i.document_id FROM sync_items i JOIN sync_sources s ON s.id = i.source_id "
    "WHERE s.name = %(source)s AND s.kb_id = %(kb)s)"
)
_PAGE_ORDER = "ORDER BY lower(d.title), d.id LIMIT %(limit)s OFFSET %(offset)s"
_LISTED = (
    f"SELECT {_DOCUMENT_COLUMNS} FROM documents d JOIN knowledge_bases k ON k.id = d.kb_id {_SYNCED_BY} "
    "WHERE d.id = ANY(%(ids)s) ORDER BY lower(d.title), d.id"
)
_DOCUMENT = (
    f"SELECT {_DOCUMENT_COLUMNS}, d.format FROM documents d JOIN knowledge_bases k ON k.id = d.kb_id "
    f"{_SYNCED_BY} WHERE d.id = %(id)s"
)
_CHUNKS = "SELECT position, heading, text FROM chunks WHERE document_id = %(id)s ORDER BY position"
_CITING = """
SELECT t.id::text, t.created_at, t.question, t.route FROM traces t
WHERE t.id IN (SELECT s.trace_id FROM trace_sources s WHERE s.document_id = %(id)s)
  AND t.created_at >= now() - make_interval(days => %(days)s)
ORDER BY t.created_at DESC LIMIT %(limit)s
"""


async def synced_sources(store: PostgresStore) -> list[tuple[str, str, str]]:
    """(name, kind, knowledge base) of every source a sync has started, configured still or not."""
    return [(str(n), str(kind), str(kb)) for n, kind, kb in await store.fetch_all(_SYNCED, {})]


async def source_rows(
    store: PostgresStore, sources: Sequence[tuple[str, str]]
) -> list[tuple[datetime | None, datetime | None, int, SyncRun | None]]:
    """For each (name, knowledge base), in order: its last success, next scheduled run, documents
    it holds now, and its latest run (None: never run)."""
    names = [name for name, _ in sources]
    bases = [kb for _, kb in sources]
    rows = await store.fetch_all(_SOURCES, {"names": names, "kbs": bases})
    return [(row[2], row[3], int(row[4] or 0), _run(row[5:]) if row[5] is not None else None) for row in rows]


async def runs_of(store: PostgresStore, name: str, kb: str, *, limit: int = 20) -> list[SyncRun]:
    """The latest `limit` runs of source `name` into `kb`, newest first."""
    return [_run(row) for row in await store.fetch_all(_RUNS, {"name": name, "kb": kb, "limit": limit})]


async def knowledge_bases(store: PostgresStore) -> list[KnowledgeBaseStatus]:
    async with store.reading() as driver:
        bases = await (await driver.execute(_BASES)).fetchall()
        shares = await (await driver.execute(_SHARES)).fetchall()
    by_base: dict[str, list[AccessShare]] = {}
    for name, groups, documents, chunks in shares:
        by_base.setdefault(name, []).append(AccessShare(tuple(groups), int(documents), int(chunks)))
    return [
        KnowledgeBaseStatus(
            name=name,
            documents=int(documents),
            chunks=int(chunks),
            shares=tuple(by_base.get(name, [])),
            newest=newest,
            oldest=oldest,
            curated=int(curated),
            sources=tuple(sources),
        )
        for name, documents, chunks, newest, oldest, curated, sources in bases
    ]


async def search_documents(
    store: PostgresStore,
    kb_id: int,
    kb: str,
    query: str = "",
    *,
    source: str | None = None,
    page: int = 1,
    per_page: int = 50,
) -> DocumentSearch:
    """The documents of base `kb_id` (named `kb`) whose title, path or URL holds `query` (any case),
    from `source` when given, in title order: page `page` of `per_page`, and how many match in all.

    The page's ids first (off the title index when nothing is searched; else one scan of the base
    that counts the matches as it goes), then the 50 rows' details: what each costs stays with 50."""
    where = "d.kb_id = %(kb)s"
    params: dict[str, Any] = {"kb": kb_id, "limit": per_page, "offset": (page - 1) * per_page}
    if query:
        where += _MATCHES
        params["like"] = "%" + _like_escaped(query.lower()) + "%"
    if source:
        where += _FROM_SOURCE
        params["source"] = source
    async with store.reading() as driver:
        if query or source:
            sql = f"SELECT d.id, count(*) OVER () FROM documents d WHERE {where} {_PAGE_ORDER}"
            found = await (await driver.execute(sql, params)).fetchall()
            total = int(found[0][1]) if found else (0 if page == 1 else None)  # no match at all: 0
        else:
            found = await (
                await driver.execute(f"SELECT d.id FROM documents d WHERE {where} {_PAGE_ORDER}", params)
            ).fetchall()
            total = None
        if total is None:  # nothing searched, or a page past the last: counted on its own
            counted = await (await driver.execute(f"SELECT count(*) FROM documents d WHERE {where}", params)).fetchone()
            total = int(counted[0]) if counted else 0
        rows = await (await driver.execute(_LISTED, {"ids": [row[0] for row in found]})).fetchall() if found else []
    return DocumentSearch(
        knowledge_base=kb,
        query=query,
        source=source,
        page=page,
        per_page=per_page,
        total=total,
        documents=tuple(_summary(row) for row in rows),
    )


async def document_page(store: PostgresStore, document_id: int, *, days: int = CITED_DAYS) -> DocumentPage | None:
    """One document with its chunks in order and the answers that cited it in the last `days` days."""
    async with store.reading() as driver:
        row = await (await driver.execute(_DOCUMENT, {"id": document_id})).fetchone()
        if row is None:
            return None
        chunks = await (await driver.execute(_CHUNKS, {"id": document_id})).fetchall()
        citing = await (
            await driver.execute(_CITING, {"id": document_id, "days": days, "limit": MAX_CITING})
        ).fetchall()
    return DocumentPage(
        document=_summary(row[:11]),
        format=str(row[11]),
        chunks=tuple(ChunkText(int(p), str(h), str(t)) for p, h, t in chunks),
        cited_by=tuple(CitingAnswer(str(i), at, str(q), str(r)) for i, at, q, r in citing),
        cited_days=days,
    )


def _like_escaped(query: str) -> str:
    return query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _summary(row: Sequence[Any]) -> DocumentSummary:
    return DocumentSummary(
        id=int(row[0]),
        knowledge_base=str(row[1]),
        title=str(row[2]),
        document=str(row[3]),
        url=row[4],
        effective_date=row[5],
        access_groups=tuple(row[6] or ()),
        chunks=int(row[7]),
        stored_at=row[8],
        synced_by=row[9],
        synced_at=row[10],
    )


def _run(row: Sequence[Any]) -> SyncRun:
    status = str(row[3])
    error = row[17]
    if status == "running" and row[19]:  # its process died: the next claim will say so, the page now
        status, error = "abandoned", error or "its process stopped before the run ended (the claim's lease ran out)"
    skipped = tuple((str(item["document"]), str(item["reason"])) for item in (row[18] or []))
    return SyncRun(
        id=int(row[0]),
        trigger=str(row[1]),
        owner=str(row[2]),
        status=status,  # type: ignore[arg-type]  # the table's CHECK holds these four
        started_at=row[4],
        finished_at=row[5],
        added=int(row[6]),
        updated=int(row[7]),
        unchanged=int(row[8]),
        deleted=int(row[9]),
        skipped=int(row[10]),
        fetched=int(row[11]),
        narrowed=int(row[12]),
        visited=int(row[13]),
        known=int(row[14]),
        complete=bool(row[15]),
        note=row[16],
        error=error,
        skipped_items=skipped,
    )
