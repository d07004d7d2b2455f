"""Spreadsheet-safe CSV cells: formulas shown as text, and read back exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.insights.spreadsheet import defuse, restore


def test_cells_a_spreadsheet_would_run_start_with_a_quote() -> None:
    for cell in ("=1+1", "+44 20 7946 0000", "-2", "@SUM(A1)", "\tx", "\rx"):
        assert defuse(cell) == "'" + cell
    for cell in ("", "How many days?", "'quoted", "a=b", " =1"):
        assert defuse(cell) == cell
    assert defuse("'=1") == "''=1"  # already quoted by its writer: ours goes in front
    assert restore("''=1") == "'=1" and restore("'=1") == "=1" and restore("'quoted") == "'quoted"


@given(st.text())
def test_what_is_defused_reads_back_as_it_was(cell: str) -> None:
    assert restore(defuse(cell)) == cell
