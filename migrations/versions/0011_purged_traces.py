"""Traces remember when their question text and asker id were removed (`candor purge`, rag/tracking/retention.py).

`purged_at` is set once a trace's personal parts are gone; a purge skips such traces, and reports
still count them (route, gates, sources, votes stay).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE traces ADD COLUMN IF NOT EXISTS purged_at timestamptz")


def downgrade() -> None:
    op.execute("ALTER TABLE traces DROP COLUMN IF EXISTS purged_at")
