"""The HNSW index on chunk vectors is built with ef_construction 200 (pgvector's default: 64).

Measured at 100k chunks (benchmarks/search_latency.py's data, 100 SQuAD questions, each against
an exact scan; 2026-11-30): recall@10 at ef_search 40 went from 0.824 to 0.936, and at ef_search
64 (Candor's default since) from 0.890 to 0.962. The graph takes longer to build (87 s instead of
~30 s at 100k chunks) and each insert searches wider, so this upgrade rebuilds the index once.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")  # the build is slow once the graph spills
    op.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
    op.execute(
        "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 16, ef_construction = 200)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
    op.execute("CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)")
