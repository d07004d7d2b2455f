"""Say which stage withheld a dropped sentence: the critic (unsupported) or the focus check (faithful
but not about what the question asks). Only the critic's count toward the gate's dropped-sentence rate.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE dropped_sentences ADD COLUMN IF NOT EXISTS stage text NOT NULL DEFAULT 'critic'")


def downgrade() -> None:
    op.execute("ALTER TABLE dropped_sentences DROP COLUMN IF EXISTS stage")
