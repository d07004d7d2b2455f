"""Index sentences by chunk: the reranker and critic read a shortlist's sentences per question.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Also what makes deleting a document's chunks (ON DELETE CASCADE) cheap on a large table.
    op.execute("CREATE INDEX IF NOT EXISTS sentences_chunk_position ON sentences (chunk_id, position)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS sentences_chunk_position")
