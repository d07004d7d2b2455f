"""A Notion page as Markdown: pure functions from the API's JSON (block objects, rich text, page
property values, as `Notion-Version: 2025-09-03` gives them) to text, with no network.

The Markdown is what `candor ingest` reads (CommonMark with tables and strikethrough, the loader's
`MarkdownIt` settings), so the page's structure survives as headings, lists, quotes, code and tables
and the chunker splits along it. Every character of the page's text is escaped, so a `*`, a `#` at
a line's start, a `|` in a table cell or a `<tag>` is read as the text it is, never as markup;
formatting Markdown could misread (bold that starts or ends on a space or a punctuation mark, two
formats back to back) is dropped rather than risked, because losing bold costs an answer nothing and
a stray `**` garbles it. Links are kept; Notion-hosted file URLs are not (they expire within the
hour), only the file's name.

A block's children are passed in under the key `children` (the fetch collects them, recursing where
`has_children` is true; child pages and databases are documents of their own and stay links).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

CHILDREN = "children"
"""The key under which the fetch puts a block's child blocks."""
NOTION_SITE = "https://www.notion.so"
_HARD_BREAK = "\\\n"

_ESCAPED = re.compile(r"([\\`*_\[\]<>|~&!#])")
_LINE_START = re.compile(r"^(\s*)(-+|=+|\+|\d+[.)])(?=\s|$)")
_HEADINGS = {"heading_1": "##", "heading_2": "###", "heading_3": "####", "heading_4": "####"}
_TEXT_BLOCKS = ("paragraph", "quote", "callout", "toggle", "bulleted_list_item", "numbered_list_item", "to_do")

Json = Mapping[str, Any]


def escape(text: str) -> str:
    """`text` as Markdown that reads as exactly that text: inline markup characters and the line
    starts Markdown would read as a list, a heading rule or a numbered item are backslash-escaped."""
    lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _ESCAPED.sub(r"\\\1", line)
        lines.append(_LINE_START.sub(lambda m: m.group(1) + _escape_marker(m.group(2)), line))
    return "\n".join(lines)


def _escape_marker(marker: str) -> str:
    if marker[-1] in ".)":
        return marker[:-1] + "\\" + marker[-1]
    return "\\" + marker


def plain(items: Sequence[Json] | None) -> str:
    """The plain text of a rich-text array (titles, property values)."""
    return "".join(str(item.get("plain_text") or _content(item)) for item in items or () if isinstance(item, Mapping))


def _content(item: Json) -> str:
    kind = item.get("type")
    if kind == "text":
        return str((item.get("text") or {}).get("content") or "")
    if kind == "equation":
        return str((item.get("equation") or {}).get("expression") or "")
    return ""


def rich_text(items: Sequence[Json] | None, links: Mapping[str, str] | None = None) -> str:
    """A rich-text array as inline Markdown: bold, italic, strikethrough, code and links kept where
    Markdown reads them unambiguously; everything else escaped text. Lines after the first of a
    multi-line text are hard line breaks. A mention of a page or database `links` does not hold is
    "a page" and links nowhere: its title could say what its readers alone may know."""
    out = ""
    for text, marks, link in _runs(items or (), links):
        if "code" in marks and not out.endswith("`"):
            piece = _code_span(text)
        else:
            piece = escape(text)
            # one delimiter run only: "~~**" would start on punctuation, which Markdown may not read
            wrap = "*" * (("bold" in marks) * 2 + ("italic" in marks)) or ("~~" if "strikethrough" in marks else "")
            if wrap and _wrappable(text) and not out.endswith(("*", "~", "`")):
                piece = wrap + piece + wrap[::-1]
        if link and text.strip() and not out.endswith(("]", "!")):
            piece = f"[{piece}]({_destination(link)})"
        out += piece
    lines = [line.strip() for line in out.split("\n")]
    return _HARD_BREAK.join(line for line in lines if line)


def _runs(items: Sequence[Json], links: Mapping[str, str] | None = None) -> list[tuple[str, frozenset[str], str]]:
    """(text, formats, link) of each run, neighbours with the same formats and link merged."""
    runs: list[tuple[str, frozenset[str], str]] = []
    allowed = None if links is None else {_bare_id(key): url for key, url in links.items()}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        text = str(item.get("plain_text") or _content(item))
        mentioned = _mentioned(item)
        if mentioned is not None and allowed is not None:
            if _bare_id(mentioned) not in allowed:
                item = {"type": "text", "annotations": item.get("annotations"), "plain_text": "a page"}
                text = "a page"
            else:
                item = {**item, "href": allowed[_bare_id(mentioned)]}
        notes = item.get("annotations") or {}
        marks = frozenset(k for k in ("bold", "italic", "strikethrough", "code") if notes.get(k) is True)
        if item.get("type") == "equation":
            marks |= {"code"}
        link = item.get("href") or ((item.get("text") or {}).get("link") or {}).get("url") or ""
        if not text:
            continue
        if runs and runs[-1][1:] == (marks, link):
            runs[-1] = (runs[-1][0] + text, marks, link)
        else:
            runs.append((text, marks, str(link)))
    return runs


def _wrappable(text: str) -> bool:
    """Emphasis Markdown reads as such wherever it stands: it starts and ends on a letter or digit."""
    return len(text) > 0 and text[0].isalnum() and text[-1].isalnum() and "\n" not in text


def _code_span(text: str) -> str:
    text = " ".join(text.split("\n"))
    if not text.strip():
        return escape(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text[0] == " " and text[-1] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _destination(url: str) -> str:
    if url.startswith("/"):
        url = NOTION_SITE + url
    return "<" + url.replace("\\", "%5C").replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A") + ">"


def link(title: str, url: str) -> str:
    return f"[{escape(title) or escape(url)}]({_destination(url)})"


def page_url(page_id: str) -> str:
    """Where a reader opens a page or database Notion gave only the id of (a child page block)."""
    return f"{NOTION_SITE}/{page_id.replace('-', '')}"


# --- blocks -----------------------------------------------------------------------------------


def render_page(
    title: str, properties: Sequence[tuple[str, str]], blocks: Sequence[Json], links: Mapping[str, str] | None = None
) -> str:
    """The page as a Markdown document: its title as the first heading, a database row's properties
    as a `name: value` list, then its blocks. `links` maps the child pages and databases that may be
    named here to their URLs; one it does not hold is left out (its title could say what its readers
    alone may know). None: every one, at its notion.so address."""
    parts = [f"# {escape(' '.join(title.split())) or 'Untitled'}"]
    if properties:
        parts.append("\n".join(f"- {escape(name)}: {escape(value)}" for name, value in properties))
    body = render_blocks(blocks, links)
    if body:
        parts.append(body)
    return "\n\n".join(parts) + "\n"


def render_blocks(blocks: Sequence[Json], links: Mapping[str, str] | None = None) -> str:
    """Blocks as Markdown, separated by blank lines (list items of one list stay together)."""
    out: list[str] = []
    number = 0
    previous = ""
    for block in blocks:
        kind = str(block.get("type") or "")
        number = number + 1 if kind == "numbered_list_item" else 0
        text = _block(block, kind, number, links)
        if not text:
            continue
        tight = kind == previous and kind in ("bulleted_list_item", "numbered_list_item", "to_do")
        out.append(("\n" if tight else "\n\n") + text if out else text)
        previous = kind
    return "".join(out)


def _block(block: Json, kind: str, number: int, links: Mapping[str, str] | None) -> str:
    data = block.get(kind) or {}
    children: Sequence[Json] = block.get(CHILDREN) or ()
    text = rich_text(data.get("rich_text"), links) if kind in _TEXT_BLOCKS or kind in _HEADINGS else ""
    if kind == "paragraph":
        return "\n\n".join(p for p in (text, render_blocks(children, links)) if p)
    if kind in _HEADINGS:
        heading = f"{_HEADINGS[kind]} {text.replace(_HARD_BREAK, ' ')}" if text else ""
        return "\n\n".join(p for p in (heading, render_blocks(children, links)) if p)
    if kind == "bulleted_list_item" or kind == "toggle":
        return _item("- ", text, children, links)
    if kind == "numbered_list_item":
        return _item(f"{number}. ", text, children, links)
    if kind == "to_do":
        return _item("- ", ("[x] " if data.get("checked") else "[ ] ") + text, children, links)
    if kind in ("quote", "callout"):
        icon = (data.get("icon") or {}).get("emoji") if kind == "callout" else None
        inner = "\n\n".join(p for p in (f"{icon} {text}" if icon else text, render_blocks(children, links)) if p)
        return "\n".join(("> " + line).rstrip() for line in inner.split("\n")) if inner else ""
    if kind == "code":
        return _fenced(plain(data.get("rich_text")), str(data.get("language") or ""))
    if kind == "equation":
        return _fenced(str(data.get("expression") or ""), "latex")
    if kind == "table":
        return _table(children, bool(data.get("has_column_header")), bool(data.get("has_row_header")), links)
    if kind == "divider":
        return "---"
    if kind in ("child_page", "child_database"):
        return _link_to(str(block.get("id") or ""), str(data.get("title") or "Untitled"), links)
    if kind == "link_to_page":
        return _link_to(str(data.get(str(data.get("type") or "")) or ""), "Linked page", links)
    if kind in ("bookmark", "embed", "link_preview"):
        url = str(data.get("url") or "")
        caption = plain(data.get("caption"))
        return link(caption or url, url) if url.startswith(("http://", "https://")) else ""
    if kind in ("file", "pdf", "image", "video", "audio"):
        return _file(data, kind)
    if kind in ("column_list", "column", "synced_block", "template"):
        return render_blocks(children, links)
    return ""  # table_of_contents, breadcrumb, unsupported: nothing to read


def _link_to(target: str, title: str, links: Mapping[str, str] | None) -> str:
    if not target or (links is not None and target not in links):
        return ""
    return link(title, links[target] if links is not None else page_url(target))


def _item(marker: str, text: str, children: Sequence[Json], links: Mapping[str, str] | None) -> str:
    """A list item; its children indented under it (as far as the marker is wide), so they nest."""
    indent = " " * len(marker)
    lines = (text or "").split("\n")
    body = marker + lines[0] + "".join("\n" + indent + line if line else "\n" for line in lines[1:])
    nested = render_blocks(children, links)
    if nested:
        body += "\n\n" + "\n".join(indent + line if line else "" for line in nested.split("\n"))
    return body.rstrip() if body.strip() != marker.strip() or nested else ""


def _fenced(code: str, language: str) -> str:
    if not code.strip():
        return ""
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * (longest + 1)
    info = language.split()[0] if language.strip() and language != "plain text" else ""
    return f"{fence}{info.replace('`', '')}\n{code.rstrip()}\n{fence}"


def _table(rows: Sequence[Json], header: bool, row_header: bool, links: Mapping[str, str] | None = None) -> str:
    cells = [[_cell(cell, links) for cell in (row.get("table_row") or {}).get("cells") or []] for row in rows]
    cells = [row for row in cells if row]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    if row_header:
        cells = [[f"**{row[0]}**" if _wrappable(_unescaped(row[0])) else row[0], *row[1:]] for row in cells]
    head, body = (cells[0], cells[1:]) if header else ([""] * width, cells)
    lines = [head, ["---"] * width, *body]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def _cell(items: Sequence[Json], links: Mapping[str, str] | None = None) -> str:
    """A table cell's text on one line; a `|` a code span holds escaped too, or it would end the cell."""
    return re.sub(r"(?<!\\)\|", r"\\|", " ".join(rich_text(items, links).replace(_HARD_BREAK, " ").split()))


def _mentioned(item: Json) -> str | None:
    """The page or database a rich-text mention names, if it is one."""
    if item.get("type") != "mention":
        return None
    mention = item.get("mention") or {}
    kind = mention.get("type")
    if kind not in ("page", "database"):
        return None
    return str((mention.get(kind) or {}).get("id") or "") or None


def _bare_id(notion_id: str) -> str:
    return notion_id.replace("-", "").lower()


def _unescaped(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _file(data: Json, kind: str) -> str:
    name = str(data.get("name") or "")
    caption = plain(data.get("caption"))
    source = data.get("type")
    if source == "external":
        url = str((data.get("external") or {}).get("url") or "")
        if url.startswith(("http://", "https://")):
            return link(caption or name or url, url)
    label = {"pdf": "PDF", "image": "Image", "video": "Video", "audio": "Audio"}.get(kind, "File")
    shown = " — ".join(p for p in (name, caption) if p)
    return f"{label}: {escape(shown)}" if shown else ""


# --- database rows ----------------------------------------------------------------------------


def title_of(properties: Json) -> str:
    """A page's title: the value of its one `title` property."""
    for value in properties.values():
        if isinstance(value, Mapping) and value.get("type") == "title":
            return plain(value.get("title")).strip()
    return ""


def property_lines(properties: Json) -> list[tuple[str, str]]:
    """A database row's properties but its title, as (name, text), in the API's order; empty ones
    left out."""
    found = []
    for name, value in properties.items():
        if not isinstance(value, Mapping) or value.get("type") == "title":
            continue
        text = " ".join(property_text(value).split())
        if text:
            found.append((str(name), text))
    return found


def property_text(value: Json) -> str:
    """One page property value as text (dates as `start → end`, checkboxes Yes/No, people by name)."""
    kind = str(value.get("type") or "")
    data = value.get(kind)
    if kind in ("rich_text", "title"):
        return plain(data)
    if kind in ("select", "status"):
        return str((data or {}).get("name") or "")
    if kind == "multi_select":
        return ", ".join(str(o.get("name") or "") for o in data or () if isinstance(o, Mapping))
    if kind in ("date",):
        return _date(data)
    if kind == "checkbox":
        return "Yes" if data else "No"
    if kind in ("number", "url", "email", "phone_number", "created_time", "last_edited_time"):
        return "" if data is None else str(data)
    if kind in ("people",):
        return ", ".join(str(p.get("name") or "") for p in data or () if isinstance(p, Mapping))
    if kind in ("created_by", "last_edited_by"):
        return str((data or {}).get("name") or "")
    if kind == "files":
        return ", ".join(str(f.get("name") or "") for f in data or () if isinstance(f, Mapping))
    if kind == "formula":
        inner = data or {}
        result = inner.get(str(inner.get("type") or ""))
        return _date(result) if inner.get("type") == "date" else ("" if result is None else str(result))
    if kind == "unique_id":
        number = (data or {}).get("number")
        prefix = (data or {}).get("prefix")
        return "" if number is None else f"{prefix}-{number}" if prefix else str(number)
    if kind == "verification":
        return str((data or {}).get("state") or "")
    return ""  # relation, rollup, button: ids or computed lists, nothing a reader can use


def _date(data: Any) -> str:
    if not isinstance(data, Mapping) or not data.get("start"):
        return ""
    end = data.get("end")
    return f"{data['start']} → {end}" if end else str(data["start"])
