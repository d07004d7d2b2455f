"""Each knowledge base gets an HNSW index of its own (a partial index of `chunks`), in place of one
graph over every chunk.

With one graph, a search in one knowledge base walks the others' chunks too and filters them out:
at 1,000,000 chunks in 20 knowledge bases (benchmarks/scale.py, 2026-12-02) a search read
~11,000-19,000 pages and its p95 was 94 ms; through an index of the knowledge base's own 50,000
chunks, 33 ms. A chunk is inserted into its own base's index only, so ingest costs the same. A
search of several knowledge bases asks each one's index and keeps the nearest
(rag/store/queries.py). New knowledge bases get their index when they are created.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

OPTIONS = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)"


def upgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for (kb_id,) in op.get_bind().execute(text("SELECT id FROM knowledge_bases ORDER BY id")).all():
        kb = int(kb_id)
        op.execute(f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw_kb{kb} ON chunks {OPTIONS} WHERE kb_id = {kb}")
    op.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")


def downgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    op.execute(f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks {OPTIONS}")
    listed = "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_embedding_hnsw_kb%'"
    for (name,) in op.get_bind().execute(text(listed)).all():
        op.execute(f'DROP INDEX IF EXISTS "{name}"')
