"""Block Kit's building blocks with Slack's limits kept: a section holds at most 3,000 characters
(longer text becomes several sections), a context block 10 elements of 2,000, a button 75 characters
of label and 2,000 of value, a header 150 characters. Pure functions; `text` arguments are mrkdwn
already escaped (`bot.slack.mrkdwn.escape`), `plain` ones are shown as typed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.render.wording import shorten
from bot.slack.mrkdwn import pack, split_text

SECTION_LIMIT = 3000
CONTEXT_LIMIT = 2000
CONTEXT_ELEMENTS = 10
MESSAGE_BLOCKS = 50
BUTTON_TEXT_LIMIT = 75
BUTTON_VALUE_LIMIT = 2000
HEADER_LIMIT = 150

Block = dict[str, Any]


def button(text: str, action_id: str, value: str, *, style: str | None = None) -> Block:
    made: Block = {
        "type": "button",
        "action_id": action_id,
        "text": plain(text[:BUTTON_TEXT_LIMIT]),
        "value": value[:BUTTON_VALUE_LIMIT],
    }
    if style is not None:
        made["style"] = style
    return made


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def sections(units: Iterable[str], separator: str) -> list[Block]:
    return [section(text) for text in pack(units, separator, SECTION_LIMIT)]


def context(texts: Iterable[str]) -> list[Block]:
    elements = [{"type": "mrkdwn", "text": piece} for text in texts for piece in split_text(text, CONTEXT_LIMIT)]
    return [
        {"type": "context", "elements": elements[start : start + CONTEXT_ELEMENTS]}
        for start in range(0, len(elements), CONTEXT_ELEMENTS)
    ]


def header(text: str) -> Block:
    return {"type": "header", "text": plain(shorten(text, HEADER_LIMIT))}


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}
