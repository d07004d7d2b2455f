"""The spool: records the database could not take, one JSON file each, until they are replayed.

Files are written atomically (a hidden temporary file, fsynced, then renamed), so a reader sees a
whole record or none. A file that cannot be read back is moved to `rejected/`, never deleted.
They hold questions and asker ids: the folder is made 0700 and every file 0600, readable by the
process' user only. The spool has a size cap (`max_bytes`): past it a write fails with `SpoolFull`,
which the caller logs as a lost record (a database down for days must not fill the disk the
database itself may need). Blocking file I/O: call these methods from a thread.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

KIND_ORDER = ("trace", "feedback")
"""Traces replay before feedback, which may name a trace that was spooled too."""


class SpoolFull(OSError):
    """The spool holds `max_bytes` already: the record cannot be kept."""


class Spool:
    def __init__(self, directory: Path, *, max_bytes: int | None = None) -> None:
        """`max_bytes`: the most the spooled files may take together; None: no cap."""
        self.directory = directory
        self.rejected = directory / "rejected"
        self.max_bytes = max_bytes

    def write(self, name: str, record: dict[str, Any]) -> Path:
        data = json.dumps(record, ensure_ascii=False).encode("utf-8")
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.max_bytes is not None and self.size() + len(data) > self.max_bytes:
            cap = f"{self.max_bytes // 1048576} MB" if self.max_bytes >= 1048576 else f"{self.max_bytes} bytes"
            raise SpoolFull(f"the spool is full ({cap}, CANDOR_SPOOL_MAX_MB)")
        final = self.directory / name
        temporary = self.directory / f".{name}.{uuid.uuid4().hex}.tmp"
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, final)
        finally:
            temporary.unlink(missing_ok=True)
        return final

    def size(self) -> int:
        """Bytes the spooled records take (not counting `rejected/`)."""
        return self.stats()[1]

    def stats(self) -> tuple[int, int]:
        """Files and bytes in the spool (not counting `rejected/`)."""
        files = total = 0
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    try:
                        if entry.is_file():
                            files += 1
                            total += entry.stat().st_size
                    except FileNotFoundError:
                        continue
        except FileNotFoundError:
            return 0, 0
        return files, total

    def holds(self, name: str) -> bool:
        return (self.directory / name).is_file()

    def pending(self) -> list[Path]:
        """Spooled files, traces first, each kind oldest first."""
        if not self.directory.is_dir():
            return []
        found: list[tuple[int, float, str, Path]] = []
        for path in self.directory.glob("*.json"):
            kind = path.name.split("-", 1)[0]
            if kind not in KIND_ORDER:
                continue
            try:
                found.append((KIND_ORDER.index(kind), path.stat().st_mtime, path.name, path))
            except FileNotFoundError:  # replayed meanwhile by another process
                continue
        return [path for *_, path in sorted(found)]

    def read(self, path: Path) -> str | None:
        """The file's text; None when another process replayed and removed it meanwhile."""
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def reject(self, path: Path) -> Path:
        self.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self.rejected / path.name
        if target.exists():
            target = self.rejected / f"{path.stem}-{uuid.uuid4().hex[:8]}{path.suffix}"
        os.replace(path, target)
        return target
