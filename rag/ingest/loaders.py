"""Turn the bytes of a Markdown, text, HTML or PDF file into a `ParsedDocument` (a PDF's in rag/ingest/pdf.py).

The caller reads the file; `load_document` picks a parser from the suffix, and every failure
leaves as an `IngestError` subclass naming the path, with the parser's own error chained.
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag
from frontmatter.default_handlers import YAMLHandler
from markdown_it import MarkdownIt
from markdown_it.token import Token

from rag.errors import CorruptFile, EmptyFile, IngestError, UnreadableFile, UnsupportedFile
from rag.ingest.blocks import Block, ParsedDocument
from rag.ingest.layout import LIST_MARKER, SHORT_LINE, add, clean, fields, plain_blocks, row_text
from rag.ingest.pdf import PdfBounds, load_pdf

__all__ = ["SUPPORTED_SUFFIXES", "load_document"]

_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_SNIFF_BYTES = 8192
_MAX_CONTROL_RATIO = 0.02
_HTML_DROP = ("script", "style", "nav", "footer", "header", "noscript", "template", "svg", "head")
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_INLINE = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i"}
    | {"img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong"}
    | {"sub", "sup", "time", "tt", "u", "var", "wbr"}
)


def load_document(path: Path, data: bytes, *, pdf_bounds: PdfBounds | None = None) -> ParsedDocument:
    """Parse `data`, the content of `path`, into blocks; the suffix decides the format. A PDF is read
    in a worker process within `pdf_bounds` (default `PdfBounds()`: rag/ingest/pdf.py)."""
    suffix = path.suffix.lower()
    parser = _PARSERS.get(suffix)
    if parser is None:
        raise UnsupportedFile(path, f"unknown extension {path.suffix!r}")
    try:
        document = load_pdf(path, data, pdf_bounds or PdfBounds()) if suffix == ".pdf" else parser(path, data)
    except IngestError:
        raise
    except Exception as exc:  # a parser bug or a rejected input: either way this file is corrupt
        raise CorruptFile(path, f"{type(exc).__name__}: {exc}"[:200]) from exc
    if not any(block.kind != "heading" for block in document.blocks):
        raise EmptyFile(path)
    return document


class _NoAliases(yaml.SafeLoader):  # type: ignore[misc]
    """YAML without aliases: `*name` repeats a value without its bytes (219 bytes of nested aliases
    read as 5 MB), so front matter that uses them is refused before anything reads a value."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not accepted here", mark)
        return super().compose_node(parent, index)


class _FrontMatter(YAMLHandler):  # type: ignore[misc]
    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_NoAliases)


_FRONT_MATTER = _FrontMatter()


def _load_markdown(path: Path, data: bytes) -> ParsedDocument:
    try:
        front, body = frontmatter.parse(_decode_text(path, data), handler=_FRONT_MATTER)
    except yaml.composer.ComposerError as exc:
        raise CorruptFile(path, f"front matter: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise CorruptFile(path, "malformed YAML front matter") from exc
    metadata = {str(key).lower(): value for key, value in front.items()}
    blocks = _markdown_blocks(body)
    title = metadata.get("title")
    return ParsedDocument(blocks, clean(str(title)) if title else _first_h1(blocks), metadata)


def _markdown_blocks(body: str) -> list[Block]:
    blocks: list[Block] = []
    items: list[list[str]] = []  # text of each open list item, outermost first
    header: list[str] = []
    row: list[str] = []
    in_head = False
    target = ""  # where the next inline token goes: "heading", "cell" or "" (paragraph/item)
    level = 0

    def flush_item(depth: int) -> None:
        add(blocks, "list_item", " ".join(items[depth - 1]), depth)
        items[depth - 1].clear()

    for token in _MARKDOWN.parse(body):
        kind = token.type
        if kind == "heading_open":
            target, level = "heading", int(token.tag[1:])
        elif kind in ("th_open", "td_open"):
            target = "cell"
        elif kind in ("heading_close", "th_close", "td_close"):
            target = ""
        elif kind == "inline":
            text = _inline_text(token.children or [])
            if target == "heading":
                add(blocks, "heading", text, level)
            elif target == "cell":
                row.append(clean(text))
            elif items:
                items[-1].append(text)
            else:
                lines = [_inline_text(_MARKDOWN.parseInline(line)[0].children or []) for line in fields(token.content)]
                for line in lines or [text]:
                    add(blocks, "paragraph", line)
        elif kind in ("bullet_list_open", "ordered_list_open") and items:
            flush_item(len(items))
        elif kind == "list_item_open":
            items.append([])
        elif kind == "list_item_close":
            flush_item(len(items))
            items.pop()
        elif kind in ("thead_open", "thead_close"):
            in_head = kind == "thead_open"
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and in_head:
            header = row
        elif kind == "tr_close":
            add(blocks, "table_row", row_text(header, row))
        elif kind in ("fence", "code_block"):
            add(blocks, "code", token.content)
        elif kind == "html_block":
            add(blocks, "paragraph", BeautifulSoup(token.content, "html.parser").get_text(" "))
    return blocks


def _inline_text(children: Iterable[Token]) -> str:
    """Plain text of an inline run: emphasis and links keep their text, images their alt text."""
    kept = ("text", "code_inline", "image", "softbreak", "hardbreak")
    return "".join(child.content if child.type in kept[:3] else " " for child in children if child.type in kept)


def _load_text(path: Path, data: bytes) -> ParsedDocument:
    text = _decode_text(path, data)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    short = len(first) <= SHORT_LINE and not LIST_MARKER.match(first)
    return ParsedDocument(plain_blocks(text.splitlines(), wrapped=False), first if short else None)


def _load_html(path: Path, data: bytes) -> ParsedDocument:
    _reject_binary(path, data)
    soup = BeautifulSoup(data, "lxml")
    metadata: dict[str, Any] = {}
    for meta in soup.find_all("meta"):
        name, content = meta.get("name") or meta.get("property"), meta.get("content")
        if name and content is not None:
            metadata[str(name).strip().lower()] = str(content).strip()
    title = clean(soup.title.get_text()) if soup.title else ""
    for element in soup.find_all(list(_HTML_DROP)):
        # a page's header goes; an article's or a section's header holds its title and date
        if element.name != "header" or not element.find_parent(["article", "main", "section"]):
            element.decompose()
    for br in soup.find_all("br"):
        br.replace_with("\n")
    walker = _HtmlWalker()
    walker.walk(soup)
    walker.flush()
    return ParsedDocument(walker.blocks, title or _first_h1(walker.blocks), metadata)


def _text(tag: Tag) -> str:
    """The text of `tag`, with a space around each of its block elements (a paragraph, a cell), so
    that `<li><p>Open.</p>Then…</li>` does not read "Open.Then…"."""
    parts: list[str] = []
    for child in tag.children:
        if isinstance(child, Tag):
            inner = _text(child)
            parts.append(inner if child.name in _HTML_INLINE else f" {inner} ")
        elif type(child) is NavigableString:
            parts.append(str(child))
    return "".join(parts)


class _HtmlWalker:
    """Collects blocks from an HTML tree in reading order; loose text becomes paragraphs."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.loose: list[str] = []

    def flush(self) -> None:
        add(self.blocks, "paragraph", "".join(self.loose))
        self.loose.clear()

    def walk(self, node: Tag, depth: int = 0) -> None:
        for child in node.children:
            if isinstance(child, Tag):
                self.element(child, depth)
            elif type(child) is NavigableString:  # not a comment, doctype or declaration
                self.loose.append(str(child))

    def element(self, tag: Tag, depth: int) -> None:
        name = tag.name
        if name in _HTML_INLINE:
            self.loose.append(_text(tag))
            return
        self.flush()
        if name in _HTML_HEADINGS:
            add(self.blocks, "heading", _text(tag), _HTML_HEADINGS[name])
        elif name == "p":
            add(self.blocks, "paragraph", _text(tag))
        elif name == "pre":
            add(self.blocks, "code", tag.get_text())
        elif name == "li":
            self.item(tag, max(depth, 1))
        elif name in ("ul", "ol"):
            self.walk(tag, depth + 1)
        elif name == "table":
            self.table(tag)
        else:
            self.walk(tag, depth)
        self.flush()

    def item(self, li: Tag, depth: int) -> None:
        nested = [sub.extract() for sub in li.find_all(["ul", "ol"], recursive=False)]
        add(self.blocks, "list_item", _text(li), depth)
        for sublist in nested:
            self.walk(sublist, depth + 1)

    def table(self, table: Tag) -> None:
        if table.caption:
            add(self.blocks, "paragraph", _text(table.caption))
        header: list[str] = []
        for tr in table.find_all("tr"):
            cells = tr.find_all(["th", "td"], recursive=False)
            texts = [clean(_text(cell)) for cell in cells]
            if not header and cells and all(cell.name == "th" for cell in cells):
                header = texts
            else:
                add(self.blocks, "table_row", row_text(header, texts))


def _reject_binary(path: Path, data: bytes) -> None:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise UnsupportedFile(path, "binary content")


def _decode_text(path: Path, data: bytes) -> str:
    """UTF-8 (or UTF-16 with a BOM); else cp1252/latin-1 when the result reads like text."""
    _reject_binary(path, data)
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    for encoding in ("utf-16",) if utf16 else ("utf-8-sig", "utf-8-mostly", "cp1252", "latin-1"):
        try:
            text = _mostly_utf8(data) if encoding == "utf-8-mostly" else data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if encoding.startswith("utf") or _control_ratio(text) <= _MAX_CONTROL_RATIO:
            return text
    raise UnreadableFile(path, "not UTF-8 text")


def _mostly_utf8(data: bytes) -> str:
    """UTF-8 with a few stray bytes, each read as U+FFFD, when far more characters decode as UTF-8
    multi-byte sequences than fail (cp1252 or Latin-1 text has almost none): read as cp1252, such a
    file would turn every "é" into "Ã©". Raises UnicodeDecodeError otherwise."""
    text = data.decode("utf-8-sig", errors="replace")
    stray = text.count("\ufffd")
    decoded = sum(1 for char in text if ord(char) > 127) - stray
    if stray and decoded >= 2 * stray:
        return text
    raise UnicodeDecodeError("utf-8", data, 0, len(data), "not mostly UTF-8")


def _control_ratio(text: str) -> float:
    controls = sum(unicodedata.category(char) == "Cc" and not char.isspace() for char in text)
    return controls / max(len(text), 1)


def _first_h1(blocks: list[Block]) -> str | None:
    h1s = (block.text for block in blocks if block.kind == "heading" and block.level == 1)
    return next(h1s, None)


_PARSERS: dict[str, Callable[[Path, bytes], ParsedDocument]] = {
    ".md": _load_markdown,
    ".markdown": _load_markdown,
    ".txt": _load_text,
    ".text": _load_text,
    ".html": _load_html,
    ".htm": _load_html,
    ".pdf": lambda path, data: load_pdf(path, data, PdfBounds()),
}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_PARSERS)
