"""The tree stays small and clean: no tracked file over 5 MB and nothing under tmp/ (1,433 scratch
files, an embedded pgdata and an ONNX export among them, were once committed by accident)."""

from __future__ import annotations

import subprocess

from tests.conftest import REPO

LIMIT = 5 * 1024 * 1024


def tracked() -> list[str]:
    """The tracked files; the suite runs from a clone (make test, CI), so git must answer."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True).stdout
    assert listed, "git lists no tracked file: run the suite from a clone"
    return [path for path in listed.split("\0") if path]


def test_no_tracked_file_is_over_5_mb() -> None:
    large = []
    for path in tracked():
        file = REPO / path
        if file.is_file() and not file.is_symlink() and file.stat().st_size > LIMIT:
            large.append(f"{path} ({file.stat().st_size / 1024 / 1024:.1f} MB)")
    assert large == [], f"tracked files over 5 MB (keep them out of git: a release asset or a package): {large}"


def test_nothing_under_tmp_is_tracked() -> None:
    scratch = [path for path in tracked() if path.startswith("tmp/")]
    assert scratch == [], f"{len(scratch)} tracked files under tmp/ (scratch, ignored): `git rm -r --cached tmp`"
