"""Questions counted per asker, conversation and client address per minute, shared by every replica.

`rate_counts` holds one row per (bucket, minute): `bucket` is a SHA-256 of what is counted
("user:slack:U123", "conversation:teams:...", "address:web:203.0.113.9"), never the id itself,
and rows older than a few minutes are deleted as new minutes start (rag/tracking/limits.py), so
the table keeps no history of who asked.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS rate_counts (
            bucket text NOT NULL,
            window_start timestamptz NOT NULL,
            count integer NOT NULL,
            PRIMARY KEY (bucket, window_start)
        )
        """
    )
    op.execute("CREATE INDEX IF NOT EXISTS rate_counts_window ON rate_counts (window_start)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS rate_counts")
