"""The weekly review sample in Slack, as Block Kit: an opening post, then in its thread one message per
sampled answer (each sentence beside the passage it cites, with three buttons) or abstention (the
question beside the nearest evidence, with two). Pure, like `bot.slack.blocks`.

A button's value is compact JSON naming the item (trace, kind, position or part) and the label, so
a click needs nothing else to be stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.render.wording import shorten
from bot.slack.kit import MESSAGE_BLOCKS, Block, button, context, section, sections
from bot.slack.mrkdwn import escape

REVIEW_ACTION = "candor_review_"
"""Prefix of the buttons' action ids (`candor_review_supported`, ...): unique within their block, as Slack asks."""
SENTENCE_CHARS = 1200
PASSAGE_CHARS = 600
QUESTION_CHARS = 600
SENTENCE_BUTTONS = (("✅ Supported", "supported"), ("❌ Unsupported", "unsupported"), ("◐ Partly", "partly"))
ABSTENTION_BUTTONS = (
    ("Right not to answer", "correct_abstention"),
    ("The documents did answer this", "wrong_abstention"),
)
WORDS = {
    "supported": "supported",
    "unsupported": "unsupported",
    "partly": "partly supported",
    "correct_abstention": "right not to answer",
    "wrong_abstention": "the documents did answer this",
}


def opening(
    answers: int, abstentions: int, *, days: int, held_back: int, queue_url: str | None
) -> tuple[str, list[Block]]:
    """The post that opens a week's sample; the items follow in its thread."""
    text = (
        f"🔎 This week's review: {answers} answers and {abstentions} refusals from the last {days} days. "
        "In the thread: is each sentence supported by the passage it cites? Each click is stored at once "
        "and counts in the report's hallucination rate (people's labels)."
    )
    lines = [escape(text)]
    if held_back:
        lines.append(escape(f"{held_back} more drew on restricted documents and are left for the dashboard's queue."))
    if queue_url:
        lines.append(f"<{queue_url}|Open the review queue> to label with the keyboard.")
    return text, [section("\n".join(lines))]


def nothing_to_review(days: int) -> str:
    return f"🔎 This week's review: nothing to label from the last {days} days."


def answer_message(item: Mapping[str, Any]) -> tuple[str, list[Block]]:
    """One sampled answer: the question, then each sentence with its passages and its buttons."""
    sources = {int(s["n"]): s for s in item.get("sources") or []}
    blocks: list[Block] = sections([f"*Q:* {escape(shorten(str(item['question']), QUESTION_CHARS))}"], "\n")
    for sentence in item.get("sentences") or []:
        cited = [sources[n] for n in sentence.get("citations") or [] if n in sources]
        passages = [
            f"[{s['n']}] {escape(shorten(str(s.get('title') or ''), 100))}: "
            f"{escape(shorten(str(s.get('excerpt') or ''), PASSAGE_CHARS))}"
            for s in cited
        ] or ["(cites no passage)"]
        blocks.extend(sections([f"> {escape(shorten(str(sentence['text']), SENTENCE_CHARS))}"], "\n"))
        blocks.extend(context(passages))
        item_key = {"t": item["trace_id"], "k": "sentence", "p": sentence["position"]}
        blocks.append(_buttons(item_key, SENTENCE_BUTTONS, sentence.get("label")))
    return f"Review: {escape(shorten(str(item['question']), 200))}", blocks[:MESSAGE_BLOCKS]


def abstention_message(item: Mapping[str, Any]) -> tuple[str, list[Block]]:
    """One sampled refusal (or unanswered part): the question, the nearest evidence, two buttons."""
    asked = item.get("part") or item["question"]
    found = [
        f"{escape(shorten(' > '.join(x for x in (e.get('title'), e.get('heading')) if x), 100))}: "
        f"{escape(shorten(str(e.get('sentence') or ''), PASSAGE_CHARS))}"
        for e in (item.get("evidence") or [])[:3]
    ] or ["Nothing found in the documents this asker could read."]
    blocks: list[Block] = [
        *sections([f"*Candor did not answer:* {escape(shorten(str(asked), QUESTION_CHARS))}"], "\n"),
        *context(["Nearest in the documents:", *found]),
        _buttons({"t": item["trace_id"], "k": "abstention", "q": item.get("part")}, ABSTENTION_BUTTONS, None),
    ]
    return f"Review: {escape(shorten(str(asked), 200))}", blocks


def labelled(blocks: Sequence[Block], value: str, *, label: str, user: str) -> list[Block]:
    """The message's blocks after a click: the clicked item's buttons replaced by who labelled it how."""
    done = context([f"✔ {escape(WORDS.get(label, label))}, labelled by <@{escape(user)}>"])[0]
    key = item_of(value)
    changed: list[Block] = []
    for block in blocks:
        values = [e.get("value") for e in block.get("elements") or []] if block.get("type") == "actions" else []
        changed.append(done if values and all(item_of(v or "") == key for v in values) else dict(block))
    return changed


def read_value(value: str) -> dict[str, Any]:
    """A review button's item and label; {} when it is not one of ours."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return {}
    if not isinstance(parsed, dict) or not isinstance(parsed.get("t"), str) or parsed.get("l") not in WORDS:
        return {}
    return parsed


def item_of(value: str) -> tuple[Any, ...]:
    parsed = read_value(value)
    return (parsed.get("t"), parsed.get("k"), parsed.get("p"), parsed.get("q")) if parsed else ()


def _buttons(item: Mapping[str, Any], choices: Sequence[tuple[str, str]], current: str | None) -> Block:
    elements = []
    for text, label in choices:
        value = json.dumps({**item, "l": label}, separators=(",", ":"))
        elements.append(button(text, REVIEW_ACTION + label, value, style="primary" if label == current else None))
    return {"type": "actions", "elements": elements}
