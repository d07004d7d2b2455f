"""Alembic environment: Candor runs migrations itself (`rag.store.migrate`), passing a connection.

Run by hand with `alembic upgrade head` from the repository root (alembic.ini), which uses
CANDOR_DATABASE_URL through the settings object.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, text

from rag.store.schema import metadata

MIGRATION_LOCK = 7_253_001  # pg_advisory_lock key: one migrator at a time across processes


def run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata)
    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
    try:
        with context.begin_transaction():
            context.run_migrations()
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
        connection.commit()


connection = context.config.attributes.get("connection")
if connection is not None:
    run(connection)
else:  # invoked from the alembic command line
    from rag.config import load_settings

    settings = load_settings()
    if settings.database_url is None:
        raise SystemExit("set CANDOR_DATABASE_URL to run alembic by hand")
    engine = create_engine(settings.database_url.get_secret_value())
    with engine.connect() as conn:
        run(conn)
