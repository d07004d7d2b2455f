"""Find a platform event by where its answer went: Teams' feedback names the answer's message id.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS platform_events_reply ON platform_events USING gin (reply jsonb_path_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS platform_events_reply")
