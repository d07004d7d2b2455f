"""Sync runs (issue 41: operators see their sources): one row per run of a source, and the claim
that keeps two replicas from running one source at once.

`sync_runs`: who ran it (`trigger`: `candor sync` or the dashboard's "Sync now"; `owner`: host and
process), when it started and finished, how it ended (`status`: running, succeeded, failed,
abandoned), its counts (added, updated, unchanged, deleted, skipped, fetched, narrowed), its
progress while it runs (`visited` of `known` documents), the first skipped documents with their
reasons, the note of a run stopped at its budget and its error in full. A run is claimed by
inserting its row as `running`: the partial unique index lets one running row exist per source and
knowledge base, so a second replica's insert finds the conflict and does not run. The running row
holds a lease (`lease_until`, the database's clock) its process renews while it works; a row whose
lease ran out (its process died) is marked `abandoned` by the next claim, which then runs.

`sync_sources.next_run_at`: when the next scheduled sync of the source is due, where a schedule is
known (`candor sync --every` writes it after each round).

Two read indexes for the dashboard's pages: `trace_sources (document_id)` (the answers that cited
a document) and `documents (kb_id, lower(title), id)` (a base's documents in title order, a page
at a time, at 50,000 documents).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-22
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE sync_runs (
            id bigserial PRIMARY KEY,
            source text NOT NULL,
            kind text NOT NULL,
            kb_id integer NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
            trigger text NOT NULL,
            owner text NOT NULL,
            status text NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned')),
            started_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz,
            lease_until timestamptz NOT NULL,
            added integer NOT NULL DEFAULT 0,
            updated integer NOT NULL DEFAULT 0,
            unchanged integer NOT NULL DEFAULT 0,
            deleted integer NOT NULL DEFAULT 0,
            skipped integer NOT NULL DEFAULT 0,
            fetched integer NOT NULL DEFAULT 0,
            narrowed integer NOT NULL DEFAULT 0,
            visited integer NOT NULL DEFAULT 0,
            known integer NOT NULL DEFAULT 0,
            complete boolean NOT NULL DEFAULT false,
            skipped_items jsonb NOT NULL DEFAULT '[]',
            note text,
            error text
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX sync_runs_one_running ON sync_runs (source, kb_id) WHERE status = 'running'")
    op.execute("CREATE INDEX sync_runs_latest ON sync_runs (source, kb_id, started_at DESC, id DESC)")
    op.execute("ALTER TABLE sync_sources ADD COLUMN IF NOT EXISTS next_run_at timestamptz")
    op.execute("CREATE INDEX IF NOT EXISTS trace_sources_document_id ON trace_sources (document_id)")
    op.execute("CREATE INDEX IF NOT EXISTS documents_kb_title ON documents (kb_id, lower(title), id)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS documents_kb_title")
    op.execute("DROP INDEX IF EXISTS trace_sources_document_id")
    op.execute("ALTER TABLE sync_sources DROP COLUMN IF EXISTS next_run_at")
    op.execute("DROP TABLE IF EXISTS sync_runs")
