"""Bring the schema up to date with Alembic (blocking: run it in a thread)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError

from rag.errors import MigrationError

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def upgrade_to_head(url: str, *, embedder: str, embedding_dimension: int) -> None:
    """Apply every migration not yet applied. Safe to call from several processes at once."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["embedder"] = embedder
    config.attributes["embedding_dimension"] = embedding_dimension
    engine = create_engine(url, poolclass=None)
    try:
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except SQLAlchemyError as exc:
        raise MigrationError(f"could not migrate the database: {exc}") from exc
    finally:
        engine.dispose()
