"""`Syncer`: one configured source into its knowledge base, incrementally, through `Ingestor`.

The run: the connector's listing, then each document once (what a fetched document leads to is
queued), within the connector's `max_documents`. A document fetched in full goes through
`Ingestor.ingest_bytes` (the one ingest path: unchanged bytes are not even parsed); a 304 costs
nothing; what the source says is gone is deleted. After a complete run, every item of this source
the run did not meet is deleted too; a listing that fails deletes nothing, and a run that reaches
its budget deletes only what the source said is gone.

A budget limits downloads, never permissions: in a run that stops at its budget, every stored
document the run did not fetch still gets who may read it from the listing (and a page reached only
through links, from the page that links to it), narrowed in place (`narrowed_access`), and one the
source no longer lists at all is readable by no one until a complete run removes it. Every
connector's listing says who may read each document: Confluence, SharePoint, Google Drive and Notion
per document; a website gives every page the source's `access`.

The state is kept per source name and knowledge base: a source whose `kb` changed starts afresh in
the new base, and its documents in the old one are a retired source's (`retired`).

An item that could not be fetched this time (a 5xx) keeps its document, and the links it held last
time are followed still, so one failing page does not make the pages below it look deleted. Each
item's state is saved after its document is stored: a crash resumes where it stopped, and since
documents are upserts by source, nothing is stored twice.

Each run but a dry run is claimed in Postgres first (`rag.store.sync_runs`: one running run per
source and knowledge base, across every process and replica) and recorded there from start to end
(`rag.ingest.sources.runs`); a source another process is running now is not run again: its report
says so (`SyncReport.busy`), and nothing is fetched nor removed.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rag.errors import IngestError, ItemError, SourceError
from rag.ingest.pipeline import Ingestor
from rag.ingest.sources.base import NO_ONE, Connector, Fetched, Gone, ItemState, NotModified, SourceDocument
from rag.ingest.sources.report import SyncProgress, SyncReport
from rag.ingest.sources.runs import run_claimed
from rag.store.postgres import KnowledgeBase, PostgresStore
from rag.store.rows import CHANGED_IN_PLACE
from rag.store.sync_runs import RunClaim, SyncRuns
from rag.store.sync_state import StoredItem, SyncState

__all__ = ["SyncProgress", "SyncReport", "Syncer", "narrowed_access"]

log = logging.getLogger("candor.sync")


class Syncer:
    def __init__(
        self, store: PostgresStore, ingestor: Ingestor, state: SyncState, runs: SyncRuns | None = None
    ) -> None:
        self.store = store
        self.ingestor = ingestor
        self.state = state
        self.runs = runs or SyncRuns(state.engine)

    async def run(
        self,
        name: str,
        connector: Connector,
        kb: KnowledgeBase,
        *,
        dry_run: bool = False,
        on_document: SyncProgress | None = None,
        claim: RunClaim | None = None,
        trigger: str = "candor sync",
    ) -> SyncReport:
        """One run of source `name` into `kb`: under `claim` when the caller holds it already (the
        dashboard's "Sync now"), else claimed here; a source another process runs now is `busy`."""
        if dry_run:
            return await self._run(name, connector, kb, dry_run=True, on_document=on_document)
        if claim is None:
            claim = await self.runs.claim(name, connector.kind, kb.id, trigger=trigger)
        if claim is None:
            holder = await self.runs.holder(name, kb.id)
            report = SyncReport(name, connector.kind, kb.name)
            report.busy = "another run of this source is in progress" + (
                f" ({holder.trigger}, {holder.owner}, since {holder.started_at:%Y-%m-%d %H:%M:%S %Z})" if holder else ""
            )
            log.warning("sync %s: not run: %s", name, report.busy)
            return report
        return await run_claimed(
            self.runs,
            claim,
            lambda progress: self._run(name, connector, kb, dry_run=False, on_document=progress),
            fresh=lambda: SyncReport(name, connector.kind, kb.name),
            on_document=on_document,
        )

    async def _run(
        self,
        name: str,
        connector: Connector,
        kb: KnowledgeBase,
        *,
        dry_run: bool,
        on_document: SyncProgress | None,
    ) -> SyncReport:
        report = SyncReport(name, connector.kind, kb.name, dry_run=dry_run)
        known = await self.state.find(name, kb.id)
        if not dry_run:
            known = await self.state.start(name, connector.kind, kb.id)
        source_id = None if known is None else known.id
        items = {} if source_id is None else await self.state.items(source_id)
        stored = await self.store.documents(kb)
        try:
            listing = await connector.listing()
        except SourceError as exc:
            report.listing_error = str(exc)
            log.warning("sync %s: the listing failed, nothing removed: %s", name, exc)
            if source_id is not None and not dry_run:
                await self.state.finish(source_id, cursor=None, error=str(exc))
            return report

        report.not_synced = dict(connector.not_synced)
        if len(listing) > connector.max_documents:
            listing = _least_recently_seen_first(listing, items)
        queue: deque[SourceDocument] = deque(listing)
        queued = {doc.id for doc in listing}
        visited: set[str] = set()
        gone: list[str] = []

        def follow(leads: Sequence[SourceDocument]) -> None:
            for lead in leads:
                if lead.id not in queued:
                    queued.add(lead.id)
                    queue.append(lead)

        while queue:
            if len(visited) >= connector.max_documents:
                report.note = f"stopped at its budget of {connector.max_documents} documents"
                break
            doc = queue.popleft()
            visited.add(doc.id)
            if on_document is not None:
                on_document(report, doc, len(visited), min(len(queued), connector.max_documents))
            item = items.get(doc.id)
            previous = _previous(item, doc, stored)
            try:
                outcome = await connector.fetch(doc, previous)
            except ItemError as exc:
                report.skipped.append((doc.id, str(exc)))
                log.warning("sync %s: skipped %s: %s", name, doc.id, exc)
                narrowed = await self._restrict_stale(doc, stored.get(doc.id), report)
                if narrowed is not None:
                    log.warning(
                        "sync %s: %s could not be fetched; its stored copy is now readable by %s only, as the "
                        "source allows",
                        name,
                        doc.id,
                        ", ".join(narrowed),
                    )
                follow(_leads(item, doc))
                continue
            if isinstance(outcome, Gone):
                gone.append(doc.id)
                continue
            if isinstance(outcome, NotModified):
                report.unchanged += 1
                follow(_leads(item, doc))
                if source_id is not None and not dry_run and item is not None:
                    await self.state.save_item(source_id, doc.id, document_id=item.document_id, state=item.state)
                continue
            follow(outcome.leads_to)
            await self._ingest(outcome, kb, stored.get(doc.id), report, source_id)

        report.complete = report.note is None
        remove = set(gone)
        if report.complete:
            remove |= {item_id for item_id in items if item_id not in visited}
        else:
            await self._listed_access(queue, items, stored, report, visited | set(gone))
        await self._delete(sorted(remove), items, stored, report, source_id)
        if source_id is not None and not dry_run:
            cursor = {"synced_at": datetime.now(UTC).isoformat(), "documents": len(visited)}
            await self.state.finish(source_id, cursor=cursor if report.complete else None, error=report.note)
            if report.added or report.updated or report.deleted:
                await self.store.analyze()
        return report

    async def _listed_access(
        self,
        queue: deque[SourceDocument],
        items: Mapping[str, StoredItem],
        stored: Mapping[str, Any],
        report: SyncReport,
        done: set[str],
    ) -> None:
        """A run stopped at its budget: who may read what it did not fetch still follows the source.
        What is left in the queue (listed, or led to) gets the access it is listed with, and the pages
        its stored copies link to get it too, as a fetch would have given them (nothing is
        downloaded); an item this source holds that the listing no longer names (gone, or hidden
        from Candor's account) is readable by no one until a complete run removes it."""
        before = report.narrowed
        reached = set(done)
        while queue:
            doc = queue.popleft()
            if doc.id in reached:
                continue
            reached.add(doc.id)
            await self._restrict_stale(doc, stored.get(doc.id), report)
            queue.extend(lead for lead in _leads(items.get(doc.id), doc) if lead.id not in reached)
        for item_id in sorted(set(items) - reached):
            unlisted = SourceDocument(item_id, item_id, access=(NO_ONE,))
            await self._restrict_stale(unlisted, stored.get(item_id), report)
        if report.narrowed > before:
            log.warning(
                "sync %s: %d documents past the budget were not fetched; their stored copies are now readable "
                "only by whom the source allows",
                report.source,
                report.narrowed - before,
            )

    async def _restrict_stale(self, doc: SourceDocument, stored: Any, report: SyncReport) -> tuple[str, ...] | None:
        """A document this run did not fetch keeps its stored copy; but when the listing says who may
        read it changed, that copy must not stay readable by anyone the source now shuts out. The
        groups it was narrowed to (its next visit downloads it again, `CHANGED_IN_PLACE`, to give it
        the listed access), or None when it was left as it was."""
        if stored is None or report.dry_run:
            return None
        now = tuple(stored.access_groups)
        narrowed = narrowed_access(now, doc.access)
        if sorted(narrowed) == sorted(now):
            return None
        await self.store.set_access(stored.id, narrowed)
        report.narrowed += 1
        return narrowed

    async def _ingest(
        self, fetched: Fetched, kb: KnowledgeBase, previous: Any, report: SyncReport, source_id: int | None
    ) -> None:
        doc = fetched.document
        report.fetched += 1
        try:
            done = await self.ingestor.ingest_bytes(
                doc.id,
                fetched.data,
                fetched.format,
                kb=kb,
                access=doc.access,
                url=doc.url,
                title=doc.title,
                modified=doc.modified.date() if doc.modified else None,
                previous=previous,
                dry_run=report.dry_run,
            )
        except IngestError as exc:
            reason = exc.reason + (f" ({exc.detail})" if exc.detail else "")
            report.skipped.append((doc.id, reason))
            log.warning("sync %s: skipped %s: %s", report.source, doc.id, reason)
            return
        if done.status == "unchanged":
            report.unchanged += 1
        else:
            setattr(report, done.status, getattr(report, done.status) + 1)
            report.changes.append((done.status, doc.id))
        if source_id is not None and not report.dry_run:
            state = {**fetched.state, "access": list(doc.access), "leads_to": [_lead(d) for d in fetched.leads_to]}
            await self.state.save_item(source_id, doc.id, document_id=done.document_id, state=state)

    async def _delete(
        self,
        item_ids: Sequence[str],
        items: Mapping[str, StoredItem],
        stored: Mapping[str, Any],
        report: SyncReport,
        source_id: int | None,
    ) -> None:
        documents: list[int] = []
        for item_id in item_ids:
            item = items.get(item_id)
            document_id = item.document_id if item is not None else None
            if document_id is None and item_id in stored:
                document_id = stored[item_id].id
            if document_id is not None:
                documents.append(document_id)
                report.changes.append(("deleted", item_id))
        if report.dry_run:
            report.deleted = len(documents)
            return
        report.deleted = await self.store.delete_documents(documents)
        if source_id is not None:
            await self.state.forget_items(source_id, list(item_ids))


def _previous(item: StoredItem | None, doc: SourceDocument, stored: Mapping[str, Any]) -> ItemState | None:
    """What to ask the source with: nothing when the document's access changed (it is fetched and
    stored again, so the new groups apply), or when its stored copy is gone (removed by hand) or was
    narrowed in place, so "not modified" never leaves a document missing or too narrow."""
    if item is None or doc.id not in stored or stored[doc.id].options_hash == CHANGED_IN_PLACE:
        return None  # a copy narrowed in place is downloaded again, to be stored with its listed access
    if sorted(item.state.get("access", [])) != sorted(doc.access):
        return None
    return ItemState(item.state, item.document_id)


def narrowed_access(stored: Sequence[str], listed: Sequence[str]) -> tuple[str, ...]:
    """The groups a stored copy may keep when the source now lists other groups but the document
    could not be fetched: only readers both allow (the old content was never shown to the new groups;
    the new groups are all the source allows now). Public now and before: unchanged; newly public:
    the stored groups stay until the content is fetched; nothing in common: no one."""
    if not stored:
        return tuple(sorted(set(listed)))
    if not listed:
        return tuple(sorted(set(stored)))
    both = set(stored) & set(listed) - {NO_ONE}
    return tuple(sorted(both)) if both else (NO_ONE,)


def _least_recently_seen_first(
    listing: Sequence[SourceDocument], items: Mapping[str, StoredItem]
) -> list[SourceDocument]:
    """A listing larger than the run's budget, in the order that visits every document over a few
    runs: new ones first, then those seen longest ago (a change past the budget is not missed for
    ever)."""
    oldest = datetime.min.replace(tzinfo=UTC)

    def key(doc: SourceDocument) -> tuple[bool, datetime]:
        item = items.get(doc.id)
        return (item is not None, oldest if item is None or item.seen_at is None else item.seen_at)

    return sorted(listing, key=key)


def _lead(doc: SourceDocument) -> dict[str, str]:
    return {"id": doc.id, "url": doc.url, "title": doc.title}


def _leads(item: StoredItem | None, parent: SourceDocument) -> list[SourceDocument]:
    """The documents `item` led to last time, with its access as it is now (a page's links share
    its site's groups)."""
    if item is None:
        return []
    return [
        SourceDocument(str(d["id"]), str(d["url"]), str(d.get("title", "")), None, parent.access)
        for d in item.state.get("leads_to", [])
    ]
