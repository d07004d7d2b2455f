"""SQLAlchemy Core descriptions of Candor's tables (the migrations in `migrations/` create them).

The embedding columns are declared without a dimension here: the dimension follows the
configured embedder and lives in the database (`candor_meta.embedder`), set by the first
migration and changed only by `candor ingest --reembed`.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    Table,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR

metadata = MetaData()

candor_meta = Table(
    "candor_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", JSONB, nullable=False),
)

knowledge_bases = Table(
    "knowledge_bases",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("max_authority", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

documents = Table(
    "documents",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("kb_id", Integer, ForeignKey("knowledge_bases.id", ondelete="CASCADE"), nullable=False),
    Column("source", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("url", Text),
    Column("format", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("options_hash", Text, nullable=False),
    Column("effective_date", Date),
    Column("date_source", Text),
    Column("date_flag", Text),
    Column("declared_date", Date),
    Column("authority", Integer, nullable=False, server_default="0"),
    Column("declared_authority", Integer),
    Column("access_groups", ARRAY(Text), nullable=False, server_default="{}"),
    Column("metadata", JSONB, nullable=False, server_default="{}"),
    Column("chunk_count", Integer, nullable=False, server_default="0"),
    Column("ingested_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

chunks = Table(
    "chunks",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("document_id", BigInteger, ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
    Column("kb_id", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    Column("heading_path", ARRAY(Text), nullable=False, server_default="{}"),
    Column("heading", Text, nullable=False, server_default=""),
    Column("text", Text, nullable=False),
    Column("text_hash", Text, nullable=False),
    Column("access_groups", ARRAY(Text), nullable=False, server_default="{}"),
    Column("tsv", TSVECTOR),
    Column("embedding", Vector(), nullable=False),
)

sentences = Table(
    "sentences",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("chunk_id", BigInteger, ForeignKey("chunks.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("text_hash", Text, nullable=False),
    Column("embedding", Vector()),
)
