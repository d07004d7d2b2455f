"""Each knowledge base gets a full-text (GIN) index of its own, in place of one over every chunk.

After 0012 gave each knowledge base its own vector index, the full-text side was the slow half of
a search at scale: with 1,000,000 chunks in 20 knowledge bases (benchmarks/scale.py, 2026-12-02)
its p95 was 82 ms against 11 ms for the vector side, because the rarest words of a question match
chunks in every base and all of them were fetched before the base filter threw 19 in 20 away. The
search names each of its bases as an equality (`kb_id = 1 OR kb_id = 2`), which the planner serves
with a bitmap OR of their indexes. A chunk is inserted into its own base's index only.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for (kb_id,) in op.get_bind().execute(text("SELECT id FROM knowledge_bases ORDER BY id")).all():
        kb = int(kb_id)
        op.execute(f"CREATE INDEX IF NOT EXISTS chunks_tsv_gin_kb{kb} ON chunks USING gin (tsv) WHERE kb_id = {kb}")
    op.execute("DROP INDEX IF EXISTS chunks_tsv_gin")


def downgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    op.execute("CREATE INDEX IF NOT EXISTS chunks_tsv_gin ON chunks USING gin (tsv)")
    listed = "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_tsv_gin_kb%'"
    for (name,) in op.get_bind().execute(text(listed)).all():
        op.execute(f'DROP INDEX IF EXISTS "{name}"')
