"""scripts/hooks/commit-msg (installed by `make test`) refuses a subject over 72 characters and lets
everything else through: the body, comment lines, and git's own merge and fixup subjects."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HOOK = REPO / "scripts" / "hooks" / "commit-msg"


def run_hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / "COMMIT_EDITMSG"
    file.write_text(message, encoding="utf-8")
    return subprocess.run([sys.executable, str(HOOK), str(file)], capture_output=True, text=True, check=False)


def test_git_can_run_it() -> None:
    assert os.access(HOOK, os.X_OK)
    assert HOOK.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")


@pytest.mark.parametrize(
    "message",
    [
        "x" * 72 + "\n",
        "Split rag/config.py by concern\n\n" + "The detail goes here, as long as it needs to be. " * 5 + "\n",
        "# Please enter the commit message for your changes.\n" + "#" * 200 + "\n\nShort subject\n",
        "€" * 72 + "\n",  # characters, not bytes
        "Merge branch 'a-very-long-branch-name-that-goes-on' of https://example.com/some/long/repository.git\n",
        "fixup! " + "x" * 100 + "\n",
        "squash! " + "x" * 100 + "\n",
        "",
    ],
    ids=["72", "long-body", "comments", "utf8", "merge", "fixup", "squash", "empty"],
)
def test_lets_through(tmp_path: Path, message: str) -> None:
    result = run_hook(tmp_path, message)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    "message",
    ["x" * 73 + "\n", "\n\n" + "A subject with everything in it, " * 4 + "\n\nbody\n", "# comment\n" + "y" * 200],
    ids=["73", "after-blank-lines", "after-a-comment"],
)
def test_refuses_a_long_subject_in_one_line(tmp_path: Path, message: str) -> None:
    result = run_hook(tmp_path, message)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "72" in lines[0]
    assert "body" in lines[0]
