"""Sync state kept per source name and knowledge base (issue 37: permissions that do not arrive).

`sync_sources` was unique by `name`: a source renamed, removed, or pointed at another knowledge base
kept its row, and its documents stayed in the store with their last access for ever (a move removed
the old copies only after a complete run in the new base, which a source past its budget never has).
Now the row is unique by `(name, kb_id)`: a source renamed or moved is a new row, and the old row is
owned by no configured source, so the next `candor sync` removes its documents (or, with `--keep`,
leaves them readable by no one) and says how many. Existing rows keep their knowledge base: a source
whose move was waiting for a complete run is retired from its old base on the next sync.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-20
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE sync_sources DROP CONSTRAINT IF EXISTS sync_sources_name_key")
    op.execute("ALTER TABLE sync_sources ADD CONSTRAINT sync_sources_name_kb_id_key UNIQUE (name, kb_id)")


def downgrade() -> None:
    # one row per name again: of a name's rows, the one started last stays (the others' items go with them)
    op.execute(
        """
        DELETE FROM sync_sources s USING sync_sources newer
        WHERE s.name = newer.name
          AND (COALESCE(newer.last_started_at, '-infinity'), newer.id)
            > (COALESCE(s.last_started_at, '-infinity'), s.id)
        """
    )
    op.execute("ALTER TABLE sync_sources DROP CONSTRAINT IF EXISTS sync_sources_name_kb_id_key")
    op.execute("ALTER TABLE sync_sources ADD CONSTRAINT sync_sources_name_key UNIQUE (name)")
