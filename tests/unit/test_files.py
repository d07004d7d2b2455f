"""The file writer (`rag.insights.files.write_private`, `rag.write_private` to the command line: the
label sheet, the vote export, the report page). Whole or not at all, private unless told otherwise,
on the real file system."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rag
import rag.insights.files
from rag.errors import FileWriteError

Writer = Callable[..., Path]


@pytest.fixture(params=[rag.insights.files.write_private, rag.write_private], ids=["core", "facade"])
def write_private(request: Any) -> Writer:
    writer: Writer = request.param
    return writer


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_file_is_written_whole_and_private_even_over_a_readable_one(tmp_path: Path, write_private: Writer) -> None:
    target = tmp_path / "export.csv"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o644)
    text = "a,b\r\nquestion,é\r\n"
    assert write_private(target, text) == target.resolve()
    assert target.read_bytes() == text.encode("utf-8"), "line ends as given"
    assert mode(target) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["export.csv"], "no temporary file left behind"


def test_a_byte_order_mark_and_another_mode_when_asked(tmp_path: Path, write_private: Writer) -> None:
    target = tmp_path / "labels.csv"
    write_private(target, "kind\n", bom=True)
    assert target.read_bytes() == b"\xef\xbb\xbfkind\n"
    page = tmp_path / "report.html"
    write_private(page, "<p>", mode=None)
    umask = os.umask(0)
    os.umask(umask)
    assert mode(page) == 0o666 & ~umask


def test_a_missing_folder_is_a_clear_error_and_nothing_is_created(tmp_path: Path, write_private: Writer) -> None:
    with pytest.raises(FileWriteError, match=r"the folder .*missing does not exist"):
        write_private(tmp_path / "missing" / "export.csv", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_failure_mid_write_leaves_the_old_file_and_no_partial_one(tmp_path: Path, write_private: Writer) -> None:
    target = tmp_path / "export.csv"
    target.write_text("the previous export", encoding="utf-8")
    text = "a" * 100_000 + "é"  # the first 100,000 characters are written before 'é' fails
    with pytest.raises(UnicodeEncodeError):
        write_private(target, text, encoding="ascii")
    assert target.read_text(encoding="utf-8") == "the previous export"
    assert [p.name for p in tmp_path.iterdir()] == ["export.csv"], "the temporary file is removed"


def test_an_os_error_is_a_file_write_error_naming_the_path(tmp_path: Path, write_private: Writer) -> None:
    taken = tmp_path / "export.csv"
    taken.mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(FileWriteError, match=f"cannot write {taken}: .*directory"):
        write_private(taken, "x")
    assert [p.name for p in tmp_path.iterdir()] == ["export.csv"] and taken.is_dir()
