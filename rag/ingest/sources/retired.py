"""Sources no longer in the sources file: their documents leave the store (or stay, readable by no one).

A sync's state is kept per source name and knowledge base (`rag.store.sync_state`). A source removed
from the sources file, renamed, or pointed at another knowledge base (`kb`, or CANDOR_KB for a source
that names none) leaves a state that no configured source owns, and documents that would otherwise
stay in the store for ever with the access they last had. `retire` removes them, or with `keep`
restricts them to no one (`NO_ONE`: stored, found by nobody, until the source comes back and its sync
stores them again or a sync without `keep` removes them). A document another source's state also
holds stays: a source renamed within the same knowledge base met the same pages on its first run,
and they are the new name's now.

The sources file describes every synced source: a source synced from another file is retired too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rag.ingest.sources.base import NO_ONE
from rag.ingest.sources.sync import SyncReport
from rag.store.postgres import PostgresStore
from rag.store.sync_state import SyncState

log = logging.getLogger("candor.sync")


async def retire(
    store: PostgresStore,
    state: SyncState,
    configured: Iterable[tuple[str, str]],
    *,
    keep: bool = False,
    dry_run: bool = False,
) -> list[SyncReport]:
    """One report (`retired`) per synced source that is not among `configured`, as (name, knowledge
    base): its documents `deleted` and its state forgotten, or with `keep` its documents `narrowed`
    to no one and its state kept; in a dry run, what would be, and nothing written."""
    wanted = set(configured)
    leaving = [source for source in await state.sources() if (source.name, source.kb_name) not in wanted]
    reports = []
    for source in leaving:
        report = SyncReport(source.name, source.kind, source.kb_name, dry_run=dry_run, retired=True, complete=True)
        documents = await state.sole_documents(source.id, besides=[other.id for other in leaving])
        if keep:
            report.narrowed = len(documents)
            if not dry_run:
                for document_id in documents:
                    await store.set_access(document_id, (NO_ONE,))
        elif dry_run:
            report.deleted = len(documents)
        else:
            report.deleted = await store.delete_documents(documents)
            await state.forget(source.id)
        log.warning(
            "sync %s: no longer in the sources file for knowledge base %s: %d documents %s%s",
            source.name,
            source.kb_name,
            len(documents),
            "readable by no one" if keep else "removed",
            " (dry run: nothing written)" if dry_run else "",
        )
        reports.append(report)
    return reports
