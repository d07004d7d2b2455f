"""Blocks from the layout of plain lines, and what every loader uses to add a block.

A plain-text file or a PDF page is lines without markup: `plain_blocks` reads its structure off
the layout. A heading is underlined or in capitals (numbered or not: "4. MODEL TABLE"); a list
item has a marker; a numbered clause ("3.1 Routers receive ...") and a dot-leader definition ("End
of sale ....... The last day") are each their own paragraph; a fixed-width table under a rule of
dashes is read row by row with its header ("Model: RT-9; End of sale: 2023-06-30"); a paragraph of
"Key: value" lines is one field per line (`fields`, which the Markdown loader shares).
"""

from __future__ import annotations

import re

from rag.ingest.blocks import Block, BlockKind

SHORT_LINE = 80
LIST_MARKER = re.compile(r"^(\s*)(?:[-*+•▪◦–]|\d{1,3}[.)]|\([a-z0-9]{1,3}\))\s+(\S.*)$")
_UNDERLINE = re.compile(r"^(={3,}|-{3,})$")
_RULE = re.compile(r"^([-*_=])(\s*\1){2,}$")
_CLAUSE_NUMBER = re.compile(r"^\d{1,3}(?:\.\d{1,3})+\s+\S")
_LEADER = re.compile(r"^(\S[^.]*?)\s*\.{3,}\s*(\S.*)$")
"""A definition with dot leaders: "End of sale ......... The last day the model is sold"."""
_COLUMN_RULE = re.compile(r"^\s*[-=]{3,}(?:\s+[-=]{3,})+\s*$")
"""The dashes under a plain-text table's header, one run per column ("-----  ------  ----")."""
_PAGE_NUMBER = re.compile(r"^(page\s+)?\d{1,4}(\s*(of|/)\s*\d{1,4})?$", re.IGNORECASE)
_INVISIBLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\u00ad\u200b\ufeff]")


_FIELD = re.compile(r"^[A-Z0-9*_][^:,]{0,39}:[*_]*\s+\S.*$")
"""A label (capitalised, no comma, at most 40 characters), a colon and a value."""


def fields(paragraph: str) -> list[str]:
    """A paragraph of "Key: value" lines, one field per line ("EU base URL: https://...", "Beta
    version: v2.2-beta"), as its fields: each states its own fact, not one run-on sentence. A line
    that starts in lower case after a field carries on that field's value (a long value wrapped).
    Empty for prose (the lines of a paragraph of prose are wrapped, not fields)."""
    lines = [line.strip() for line in paragraph.splitlines() if line.strip()]
    out: list[str] = []
    for line in lines:
        if _FIELD.match(line):
            out.append(line)
        elif out and line[:1].islower():
            out[-1] = f"{out[-1]} {line}"  # a long value wrapped onto the next line
        else:
            return []
    if len(out) < 2 or any(field.endswith((",", ";")) for field in out):
        return []
    return out


def plain_blocks(lines: list[str], *, wrapped: bool) -> list[Block]:
    """Blocks from plain lines; `wrapped` (PDF) guesses paragraph ends when no blank lines exist."""
    if wrapped:
        lines = [line for line in lines if not _PAGE_NUMBER.match(line.strip())]
    width = max((len(line.strip()) for line in lines), default=0)
    guess_breaks = wrapped and all(line.strip() for line in lines)
    blocks: list[Block] = []
    pending: list[str] = []
    shape: tuple[BlockKind, int] = ("paragraph", 0)

    def start(kind: BlockKind = "paragraph", level: int = 0, *first: str) -> None:
        nonlocal shape
        lines = fields("\n".join(pending)) if shape[0] == "paragraph" else []
        for text in lines or [join_lines(pending)]:
            add(blocks, shape[0], text, shape[1])
        pending[:] = first
        shape = (kind, level)

    table_end = 0
    for index, raw in enumerate(lines):
        if index < table_end:
            continue
        line = raw.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        marker = LIST_MARKER.match(raw)
        if line and index + 1 < len(lines) and _COLUMN_RULE.match(lines[index + 1]):
            start()
            rows, table_end = _fixed_width_table(lines, index)
            blocks.extend(rows)
        elif not line or _RULE.match(line):
            start()
        elif _UNDERLINE.match(following) and not marker and len(line) <= SHORT_LINE:
            start("heading", 1 if following[0] == "=" else 2, line)
        elif _CLAUSE_NUMBER.match(raw):
            start("paragraph", 0, line)  # "3.1 Routers receive ...": a numbered clause of its own
        elif leader := _LEADER.match(raw):
            start("paragraph", 0, f"{leader.group(1)}: {leader.group(2)}")  # "Term ...... what it means"
        elif marker and _looks_like_heading(marker.group(2)) and not raw[:1].isspace():
            start("heading", 2, line)  # "4. MODEL TABLE": a numbered section's heading
            start()
        elif marker:
            start("list_item", 1 + len(marker.group(1).expandtabs(4)) // 2, marker.group(2))
        elif _looks_like_heading(line):
            start("heading", 2, line)
            start()
        else:
            if shape[0] == "list_item" and not (wrapped or raw[:1].isspace()):
                start()
            pending.append(line)
        if guess_breaks and line.endswith((".", "!", "?", ":")) and len(line) < 0.8 * width:
            start()
    start()
    return blocks


def _fixed_width_table(lines: list[str], at: int) -> tuple[list[Block], int]:
    """The table whose header is `lines[at]` and whose column rule is the line after it, as rows
    that read on their own ("Model: RT-9; End of sale: 2023-06-30"), and the index after its last
    row (the first blank line). Cells are cut where the rule's dash runs start."""
    starts = [m.start() for m in re.finditer(r"[-=]+", lines[at + 1])]

    def cells(line: str) -> list[str]:
        bounds = [*starts[1:], len(line)]
        return [clean(line[begin:end]) for begin, end in zip([0, *starts[1:]], bounds, strict=True)]

    header = cells(lines[at])
    rows: list[Block] = []
    end = at + 2
    while end < len(lines) and lines[end].strip() and not _COLUMN_RULE.match(lines[end]):
        add(rows, "table_row", row_text(header, cells(lines[end])))
        end += 1
    return rows, end


def _looks_like_heading(line: str) -> bool:
    letters = sum(char.isalpha() for char in line)
    return letters >= 2 and line.upper() == line and len(line) <= 60 and not line.endswith(".")


def join_lines(lines: list[str]) -> str:
    text = ""
    for line in lines:
        if text.endswith("-") and text[-2:-1].isalpha() and line[:1].islower():
            text += line  # a word broken at the line end keeps its hyphen
        else:
            text = f"{text} {line}" if text else line
    return text


def row_text(header: list[str], cells: list[str]) -> str:
    """A table row that reads on its own: "Header1: cell1; Header2: cell2"."""
    pairs = []
    for index, cell in enumerate(cells):
        name = header[index] if index < len(header) else ""
        if cell:
            pairs.append(f"{name}: {cell}" if name else cell)
    return "; ".join(pairs)


def clean(text: str) -> str:
    return " ".join(_INVISIBLE.sub("", text).split())


def add(blocks: list[Block], kind: BlockKind, text: str, level: int = 0) -> None:
    """Append a block with normalised whitespace (code keeps its lines); empty text is dropped."""
    if kind == "code":
        lines = [line.rstrip() for line in _INVISIBLE.sub("", text).strip("\n").splitlines()]
        text = "\n".join(lines).strip("\n")
    else:
        text = clean(text)
    if text.strip():
        blocks.append(Block(kind, text, level))
