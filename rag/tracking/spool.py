"""The spool: records the database could not take, one JSON file each, until they are replayed.

Files are written atomically (a hidden temporary file, fsynced, then renamed), so a reader sees a
whole record or none. A file that cannot be read back is moved to `rejected/`, never deleted.
Blocking file I/O: call these methods from a thread.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

KIND_ORDER = ("trace", "feedback")
"""Traces replay before feedback, which may name a trace that was spooled too."""


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.rejected = directory / "rejected"

    def write(self, name: str, record: dict[str, Any]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / name
        temporary = self.directory / f".{name}.{uuid.uuid4().hex}.tmp"
        try:
            with temporary.open("w", encoding="utf-8") as handle:
                json.dump(record, handle, ensure_ascii=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, final)
        finally:
            temporary.unlink(missing_ok=True)
        return final

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
        self.rejected.mkdir(parents=True, exist_ok=True)
        target = self.rejected / path.name
        if target.exists():
            target = self.rejected / f"{path.stem}-{uuid.uuid4().hex[:8]}{path.suffix}"
        os.replace(path, target)
        return target
