"""Finding the files an ingest run reads, without ever leaving the paths it was given."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rag.errors import IngestError, OutsideRoot, UnreadableFile, UnsupportedFile
from rag.ingest.loaders import SUPPORTED_SUFFIXES


@dataclass(frozen=True, slots=True)
class Found:
    """A file to ingest (`error` is None) or one to report as skipped."""

    path: Path
    error: IngestError | None = None


def absolute(path: Path | str) -> Path:
    """The absolute, normalised form sources are stored under (`..` resolved, symlinks kept)."""
    return Path(os.path.abspath(path))


def discover(paths: list[Path]) -> Iterator[Found]:
    """Every supported file under `paths`, in a stable order.

    A file named directly must be supported (else it is reported); inside folders, files of
    other types are passed over quietly, as are hidden files and folders. Symbolic links are
    followed only when their target stays inside the folder being walked.
    """
    seen: set[Path] = set()
    """Resolved paths already yielded: a file reached twice (a link to it, a folder given twice) is read once."""
    for given in paths:
        path = absolute(given)
        if not path.exists() and not path.is_symlink():
            yield Found(path, UnreadableFile(path, "no such file or folder"))
        elif path.is_dir():
            yield from _walk(path, seen)
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            yield Found(path, UnsupportedFile(path, f"unknown type {path.suffix or '(no extension)'}"))
        elif path.resolve() not in seen:
            seen.add(path.resolve())
            yield _checked(path)


def _checked(path: Path) -> Found:
    """`path` to read, or skipped: a name that is not UTF-8 cannot be stored as the source, and
    reading a named pipe or a device would never end."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return Found(path, UnreadableFile(path, "the file name is not valid UTF-8"))
    try:
        mode = path.stat().st_mode
    except OSError as exc:  # gone since the walk, or a broken link: not known to be anything else
        return Found(path, UnreadableFile(path, exc.strerror or str(exc)))
    if not stat.S_ISREG(mode):
        return Found(path, UnsupportedFile(path, "a pipe, socket or device"))
    return Found(path)


def _walk(root: Path, seen: set[Path]) -> Iterator[Found]:
    real_root = root.resolve()
    files: list[Path] = []
    links: list[Path] = []
    unreadable: list[OSError] = []
    outside: list[tuple[Path, Path]] = []
    for folder, dirs, names in os.walk(root, onerror=unreadable.append, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        # a linked folder is not walked (its files inside the root are reached anyway): say so
        # when it leads out, as for a linked file
        for link in (Path(folder) / name for name in dirs):
            if link.is_symlink() and not link.resolve().is_relative_to(real_root):
                outside.append((link, link.resolve()))
        for name in sorted(names):
            path = Path(folder) / name
            if not name.startswith(".") and path.suffix.lower() in SUPPORTED_SUFFIXES:
                (links if path.is_symlink() else files).append(path)
    for link, target in outside:
        yield Found(link, OutsideRoot(link, f"link to {target}"))
    for error in unreadable:  # a folder that cannot be listed: its files are not known to be gone
        unlisted = Path(error.filename or root)
        yield Found(unlisted, UnreadableFile(unlisted, f"folder cannot be read ({error.strerror or error})"))
    for path in files:  # real files first, so a link to one of them is the duplicate, not the file
        if path.resolve() not in seen:
            seen.add(path.resolve())
            yield _checked(path)
    for path in links:
        try:
            target = path.resolve(strict=True)
        except RuntimeError:  # Python 3.11 reports a loop this way, later versions as an OSError
            yield Found(path, UnreadableFile(path, "symbolic link loop"))
            continue
        except OSError as exc:
            loop = exc.errno == errno.ELOOP
            yield Found(path, UnreadableFile(path, "symbolic link loop" if loop else "broken symbolic link"))
            continue
        if not target.is_relative_to(real_root):
            yield Found(path, OutsideRoot(path, f"link to {target}"))
        elif target not in seen:
            seen.add(target)
            yield _checked(path)
