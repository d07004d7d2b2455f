"""A person may label a delivered sentence `partly` supported (the review queue's third choice).

A sentence whose cited passage supports some of what it says and not the rest is partly supported;
the report counts it with the unsupported ones in the hallucination rate (a sentence that says more
than its source is what the rate counts) and shows how many there were.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

CHECK = """
    (position IS NOT NULL AND part IS NULL AND label IN ({sentence}))
    OR (position IS NULL AND label IN ('correct_abstention', 'wrong_abstention'))
"""


def upgrade() -> None:
    # 0008 declared the check on the column but it names three: Postgres called it human_labels_check
    op.execute("ALTER TABLE human_labels DROP CONSTRAINT IF EXISTS human_labels_check")
    op.execute("ALTER TABLE human_labels DROP CONSTRAINT IF EXISTS human_labels_label_check")
    labels = "'supported', 'unsupported', 'partly'"
    op.execute(
        f"ALTER TABLE human_labels ADD CONSTRAINT human_labels_label_check CHECK ({CHECK.format(sentence=labels)})"
    )


def downgrade() -> None:
    op.execute("UPDATE human_labels SET label = 'unsupported' WHERE label = 'partly'")
    op.execute("ALTER TABLE human_labels DROP CONSTRAINT IF EXISTS human_labels_label_check")
    op.execute("ALTER TABLE human_labels DROP CONSTRAINT IF EXISTS human_labels_check")
    labels = "'supported', 'unsupported'"
    op.execute(
        f"ALTER TABLE human_labels ADD CONSTRAINT human_labels_label_check CHECK ({CHECK.format(sentence=labels)})"
    )
