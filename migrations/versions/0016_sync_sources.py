"""Synced sources (issue 23, connectors): each configured source's cursor and last successful sync,
and what a source needs to remember per item for incremental runs.

`sync_sources`: one row per configured source (`candor sync`, by its `name` in the sources file):
its kind, the knowledge base it fills, its `cursor` (whatever the source's incremental listing
needs, JSON), when a sync last started, last succeeded (a complete listing: deletions applied) and
the last error. The row is made on the first sync.

`sync_items`: one row per item a source has shown (a web page: its URL), with the document it
was stored as and its `state` (JSON, per kind: a web page's `ETag`, `Last-Modified` and the links
it held, so a 304 still leads the crawl on), and when a sync last saw it. Kept here, not in
`documents.metadata`: an item can be known without being a document (a page that never converted),
and a document's metadata is rewritten by every ingest from the document's own front matter.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE sync_sources (
            id serial PRIMARY KEY,
            name text NOT NULL UNIQUE,
            kind text NOT NULL,
            kb_id integer NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
            cursor jsonb NOT NULL DEFAULT '{}',
            last_started_at timestamptz,
            last_success_at timestamptz,
            last_error text,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE sync_items (
            source_id integer NOT NULL REFERENCES sync_sources(id) ON DELETE CASCADE,
            item_id text NOT NULL,
            document_id bigint REFERENCES documents(id) ON DELETE SET NULL,
            state jsonb NOT NULL DEFAULT '{}',
            seen_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (source_id, item_id)
        )
        """
    )
    op.execute("CREATE INDEX sync_items_document_id ON sync_items (document_id)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS sync_items")
    op.execute("DROP TABLE IF EXISTS sync_sources")
