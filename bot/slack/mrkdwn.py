"""Slack mrkdwn text: escaping, Markdown conversion, and cutting text to Slack's limits.

Slack reads ``&``, ``<`` and ``>`` as control characters (``<!channel>``, ``<@U123>``,
``<https://x|label>``), so everything that comes from a document or a question goes through
`escape` before it reaches a block. The only ``<`` a renderer emits are the links built by `link`,
and only for plain ``http(s)://`` URLs.

Slack counts text length in characters; `size` counts UTF-16 code units (an emoji outside the Basic
Multilingual Plane counts twice), which is never less, so a text `size` allows is always accepted.
`split_text` and `pack` cut text at whitespace and never inside a link or an ``&amp;``-style entity.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_LINK = 2000
"""A link longer than this is shown as plain text, so a cut (at 2,000 or 3,000) never splits one."""

_LINKABLE_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f\"'<>\\`|]+", re.IGNORECASE)
_ATOM = re.compile(r"<[^<>]*>|&(?:amp|lt|gt);")
_MARKDOWN = re.compile(  # spans are bounded so that unclosed markers cost linear time, not quadratic
    r"(?<!`)(?P<ticks>`+)(?!`)(?P<code>(?s:.{1,3000}?))(?<!`)(?P=ticks)(?!`)"
    r"|\[(?P<label>[^\[\]\n]{0,1000})\]\((?P<url>[^\s()]{0,2000}(?:\([^\s()]*\)[^\s()]*)*)\)"
    r"|\*\*(?P<bold_star>\S(?:.{0,1000}?\S)?)\*\*"
    r"|(?<!\w)__(?P<bold_under>\S(?:.{0,1000}?\S)?)__(?!\w)"
    r"|~~(?P<strike>\S(?:.{0,1000}?\S)?)~~"
    r"|(?<![*\w])\*(?P<italic_star>[^\s*](?:[^*\n]{0,1000}?[^\s*])?)\*(?![*\w])"
    r"|(?<!\w)_(?P<italic_under>[^\s_](?:[^_\n]{0,1000}?[^\s_])?)_(?!\w)"
)
_MAX_NESTING = 4
"""Formatting nested deeper than this is kept as escaped text (and recursion stays shallow)."""
_LABEL_BAR = "¦"
"""Stands in for ``|`` in a link label, where Slack would read it as the URL's end."""


def escape(text: str) -> str:
    """Slack's escaping: ``&``, ``<`` and ``>`` become entities; nothing else changes."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def link(url: str | None, label: str) -> str | None:
    """``<url|label>`` when `url` is a plain http(s) URL and the link is not too long, else None.

    The label is escaped, its whitespace collapsed and its ``|`` replaced, so it cannot end the link
    early; an empty label gives ``<url>``.
    """
    candidate = (url or "").strip()
    if not _LINKABLE_URL.fullmatch(candidate):
        return None
    text = escape(" ".join(label.split())).replace("|", _LABEL_BAR)
    made = f"<{escape(candidate)}|{text}>" if text else f"<{escape(candidate)}>"
    return made if size(made) <= MAX_LINK else None


def to_mrkdwn(text: str) -> str:
    """Markdown to Slack mrkdwn; everything that is not Markdown formatting is escaped.

    ``**b**``/``__b__`` → ``*b*``, ``*i*``/``_i_`` → ``_i_``, ``~~s~~`` → ``~s~``, code spans kept
    (their content escaped), ``[label](http(s)://url)`` → ``<url|label>``. A link to any other
    kind of URL stays as its literal, escaped text.
    """
    return _converted(text, 0)


def _converted(text: str, depth: int) -> str:
    if depth >= _MAX_NESTING:
        return escape(text)
    out: list[str] = []
    position = 0
    for match in _MARKDOWN.finditer(text):
        out.append(escape(text[position : match.start()]))
        out.append(_convert(match, depth))
        position = match.end()
    out.append(escape(text[position:]))
    return "".join(out)


def _convert(match: re.Match[str], depth: int) -> str:
    if match["ticks"] is not None:
        fence = "```" if len(match["ticks"]) >= 3 else "`"
        return f"{fence}{escape(match['code'])}{fence}"
    if match["url"] is not None:
        return link(match["url"], match["label"]) or escape(match.group(0))
    for group, mark in (
        ("bold_star", "*"),
        ("bold_under", "*"),
        ("strike", "~"),
        ("italic_star", "_"),
        ("italic_under", "_"),
    ):
        if match[group] is not None:
            return f"{mark}{_converted(match[group], depth + 1)}{mark}"
    raise AssertionError(f"unhandled Markdown match {match.group(0)!r}")  # pragma: no cover


def size(text: str) -> int:
    """The length of `text` in UTF-16 code units (at least its length in characters)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def split_text(text: str, limit: int) -> list[str]:
    """`text` (mrkdwn) in pieces of at most `limit` units, cut at whitespace where possible and
    never inside a link or an entity. Whitespace at a cut is dropped; nothing else is."""
    pieces: list[str] = []
    rest = text.strip()
    while size(rest) > limit:
        cut = _cut_point(rest, _fit(rest, limit))
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def pack(units: Iterable[str], separator: str, limit: int) -> list[str]:
    """Join `units` with `separator` into as few texts of at most `limit` units as their order
    allows; a unit longer than `limit` is cut with `split_text`. Blank units are skipped."""
    packed: list[str] = []
    current = ""
    for unit in units:
        for piece in split_text(unit, limit):
            joined = f"{current}{separator}{piece}" if current else piece
            if size(joined) <= limit:
                current = joined
            else:
                packed.append(current)
                current = piece
    if current:
        packed.append(current)
    return packed


def _fit(text: str, limit: int) -> int:
    """The largest index `i` with ``size(text[:i]) <= limit``."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            return index
    return len(text)


def _cut_point(text: str, end: int) -> int:
    """Where to cut `text` so that ``text[:cut]`` fits in `end` characters: the last whitespace
    outside links and entities, else `end` moved back to the start of a link it would split."""
    inside = [False] * (end + 1)
    atom_start = [0] * (end + 1)
    for atom in _ATOM.finditer(text):
        if atom.start() >= end:
            break
        for index in range(atom.start() + 1, min(atom.end(), end + 1)):
            inside[index] = True
            atom_start[index] = atom.start()
    for index in range(end, 0, -1):
        if text[index].isspace() and not inside[index]:  # text[0] is not whitespace: text[:index] is not blank
            return index
    if inside[end] and atom_start[end] > 0:
        return atom_start[end]
    return max(end, 1)
