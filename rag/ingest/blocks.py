"""The intermediate form every loader produces and the chunker consumes.

A loader turns a file (Markdown, text, HTML, PDF) into a `ParsedDocument`: front-matter style
metadata plus a flat list of `Block`s in reading order. Headings are blocks too; the chunker
rebuilds the heading path from them. Keeping list items and table rows as their own blocks is
what lets the chunker promise never to cut one in half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "paragraph", "list_item", "table_row", "code"]


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a document, in reading order."""

    kind: BlockKind
    text: str
    level: int = 0
    """Heading level (1 = top) for headings; nesting depth for list items; 0 otherwise."""


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A file's content as blocks, plus whatever metadata the file itself declared."""

    blocks: list[Block]
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Front matter (Markdown), <meta> tags (HTML) or document info (PDF), keys lower-cased."""

    @property
    def text(self) -> str:
        """The whole document as plain text, blocks separated by blank lines."""
        return "\n\n".join(block.text for block in self.blocks)


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it is embedded and stored."""

    position: int
    heading_path: tuple[str, ...]
    text: str
    sentences: tuple[str, ...]

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)
