"""Writing the files Candor hands to people (the audit's label sheet; through the facade,
`rag.write_private`, the command line's vote export and report page): whole, or not at all.

`write_private` writes to a temporary file in the target's own folder (`mkstemp`: created mode 0600,
so nobody else can open it while it fills), flushes and fsyncs it, sets its mode, then renames it
over the target (`os.replace`: atomic within one file system). A reader never sees half a file, and
a failure mid-write (disk full, a character the encoding cannot hold, a crash) leaves the target as
it was: the temporary file is removed, or, after a crash, left as a `.<name>.*.tmp` beside it.

The folder must exist: it is not created (a mistyped path should not scatter folders), and its
absence is a `FileWriteError` saying so. Every `OSError` becomes a `FileWriteError` naming the path.

Mode 0600 by default: a label sheet or a vote export holds questions, answers, user ids and cited
passages (restricted ones included). The HTML report page (counts, rates and document names; made
to be shared) passes ``mode=None``: 0666 less the umask, as any new file gets.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rag.errors import FileWriteError

PRIVATE = 0o600


def require_folder(path: Path) -> Path:
    """`path` made absolute; `FileWriteError` when its folder does not exist (check before slow work)."""
    target = path.expanduser().resolve()
    if not target.parent.is_dir():
        raise FileWriteError(f"cannot write {path}: the folder {target.parent} does not exist")
    return target


def write_private(
    path: Path, text: str, *, encoding: str = "utf-8", bom: bool = False, mode: int | None = PRIVATE
) -> Path:
    """Write `text` to `path` atomically (see the module docstring); returns the absolute path.

    `bom`: start with a byte-order mark (spreadsheet programs then read UTF-8 as UTF-8). Line ends
    are written as they are in `text` (the `csv` module's ``\\r\\n`` stays). `mode`: the file's
    permissions, 0600 unless given; None for 0666 less the umask."""
    target = require_folder(path)
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise FileWriteError(f"cannot write {path}: {exc}") from exc
    try:
        with os.fdopen(descriptor, "w", encoding=encoding, newline="") as handle:
            handle.write(("\ufeff" if bom else "") + text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _ordinary_mode() if mode is None else mode)
        os.replace(temporary, target)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise FileWriteError(f"cannot write {path}: {exc}") from exc
        raise
    return target


def _ordinary_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
