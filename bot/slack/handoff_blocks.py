"""Slack's view of a hand-off: the "Ask a person" button, the triage post, the reply form and the
reply the asker gets. Pure functions from plain data to Block Kit, like `bot.slack.blocks`.

The button's value is compact JSON: the trace, why a person is wanted and, when the button sits in
an ephemeral note (after a 👎) where Slack does not say which message it follows, the thread the
asker waits in. The triage post shows the question, what Candor answered (not when the answer drew
on restricted documents: the triage channel's readers may not hold the asker's groups; the trace
has it), its sources and the trace id, with a "Reply to asker" button.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from bot.render.handoff import REASON_WORDS
from bot.render.wording import shorten
from bot.slack.kit import Block, button, context, header, plain, section, sections
from bot.slack.mrkdwn import escape, link
from rag.experts import Readers, cited_groups, default_readers
from rag.model.loop import CuratedAnswer, Handoff, HandoffReason

HANDOFF = "candor_handoff"
HANDOFF_REPLY = "candor_handoff_reply"
HANDOFF_REPLY_CALLBACK = "candor_handoff_reply_form"
REPLY_BLOCK, REPLY_ACTION = "reply", "reply_text"
CURATE_BLOCK, CURATE_ACTION, CURATE_VALUE = "curate", "curate_choice", "curate"
QUESTION_BLOCK, QUESTION_ACTION = "curated_question", "curated_question_text"
GROUPS_BLOCK, GROUPS_ACTION = "curated_groups", "curated_groups_text"
READERS_BLOCK, READERS_ACTION = "curated_readers", "curated_readers_choice"
READER_CHOICES: dict[Readers, str] = {
    "cited": "The readers of the documents the answer cited",
    "groups": "Only the access groups named below",
    "everyone": "Everyone who can ask Candor",
}
REPLY_MAX_LENGTH = 3000
QUESTION_MAX_LENGTH = 1000
ANSWER_CHARS = 1500
TITLE_CHARS = 150

_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*")


def handoff_button(trace_id: str, reason: HandoffReason, *, thread: str | None = None) -> Block:
    value: dict[str, Any] = {"trace": trace_id, "reason": reason}
    if thread is not None:
        value["thread"] = thread
    return button("🙋 Ask a person", HANDOFF, json.dumps(value, separators=(",", ":")))


def read_handoff_value(value: str) -> dict[str, Any]:
    """The button's value; {} when it is not one of ours."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) and isinstance(parsed.get("trace"), str) else {}


def vote_note_blocks(note: str, trace_id: str, *, thread: str | None) -> list[Block]:
    """The ephemeral thank-you for a 👎, with the offer of a person."""
    offer = handoff_button(trace_id, "down_vote", thread=thread)
    return [section(escape(note)), {"type": "actions", "elements": [offer]}]


def readable(question: str) -> str:
    """The question as people read it: without the mentions that addressed it to the bot."""
    return _MENTION.sub("", question).strip() or question


def triage_message(handoff: Handoff, *, where: str, trace_url: str | None = None) -> tuple[str, list[Block]]:
    """The post in the triage channel: (fallback text, blocks). `where` is mrkdwn naming the
    conversation ("<#C123>", "a direct message")."""
    question = shorten(readable(handoff.question), 2800)
    blocks: list[Block] = [  # escaped text grows (& is 5 characters): `sections` cuts it to Slack's limit
        header("🙋 A question for a person"),
        *sections([f"<@{handoff.asker}> asked in {where}:", f">{escape(question)}"], "\n"),
        section(f"*{escape(REASON_WORDS.get(handoff.reason, handoff.reason))}.*"),
    ]
    if handoff.restricted:
        blocks.append(section("_Its answer drew on restricted documents, so it is not shown here; the trace has it._"))
    else:
        blocks.extend(sections(["*Candor's answer:*", f">{escape(shorten(handoff.answer_text, ANSWER_CHARS))}"], "\n"))
        titles = [(source, shorten(source.title, TITLE_CHARS)) for source in handoff.sources]
        cited = [f"[{source.n}] {link(source.url, title) or escape(title)}" for source, title in titles]
        if cited:
            blocks.extend(sections(["*Sources*", *cited], "\n"))
    trace = link(trace_url, f"trace {handoff.trace_id}") if trace_url else None
    blocks.extend(context([f"{trace or 'trace ' + escape(handoff.trace_id)} · hand-off {escape(handoff.id)}"]))
    reply = button("Reply to asker", HANDOFF_REPLY, handoff.id, style="primary")
    blocks.append({"type": "actions", "elements": [reply]})
    return f"A question for a person: {escape(shorten(question, 200))}", blocks


def triage_done_blocks(
    handoff: Handoff, blocks: list[Block], *, expert: str, curated: CuratedAnswer | None
) -> list[Block]:
    """The triage post once replied: its blocks without the button, and who replied (and what was kept)."""
    kept = [block for block in blocks if block.get("type") != "actions"]
    done = f"✅ <@{escape(expert)}> replied to the asker."
    if curated is not None:
        done += f" Saved as curated answer #{curated.id}: the next person who asks gets it, cited."
    return [*kept, section(done), *context([f"reply: {escape(shorten(handoff.reply_text or '', 500))}"])]


def expert_reply_text(handoff: Handoff, *, expert: str) -> tuple[str, list[Block]]:
    """What the asker sees in their thread."""
    reply = handoff.reply_text or ""
    blocks = [
        section(f"<@{handoff.asker}> <@{escape(expert)}> answered your question:"),
        *sections([escape(line) for line in reply.splitlines() or [""]], "\n"),
        *context(["A person's answer, not checked against the documents by Candor."]),
    ]
    return f"A person answered your question: {escape(shorten(reply, 200))}", blocks


def reply_modal(handoff: Handoff) -> dict[str, Any]:
    """The form behind "Reply to asker": the reply, and whether to keep it as a curated answer."""
    return {
        "type": "modal",
        "callback_id": HANDOFF_REPLY_CALLBACK,
        "private_metadata": handoff.id,
        "title": plain("Reply to asker"),
        "submit": plain("Send"),
        "close": plain("Cancel"),
        "blocks": [
            *sections([f">{escape(shorten(readable(handoff.question), 2800))}"], "\n"),
            {
                "type": "input",
                "block_id": REPLY_BLOCK,
                "label": plain("Your answer"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REPLY_ACTION,
                    "multiline": True,
                    "max_length": REPLY_MAX_LENGTH,
                },
            },
            {
                "type": "input",
                "block_id": CURATE_BLOCK,
                "optional": True,
                "label": plain("Keep it"),
                "element": {
                    "type": "checkboxes",
                    "action_id": CURATE_ACTION,
                    "options": [
                        {
                            "text": plain("Save as a curated answer for the next person who asks"),
                            "value": CURATE_VALUE,
                        }
                    ],
                },
            },
            {
                "type": "input",
                "block_id": QUESTION_BLOCK,
                "optional": True,
                "label": plain("The question it answers"),
                "hint": plain("How people ask it; used when it is saved."),
                "element": {
                    "type": "plain_text_input",
                    "action_id": QUESTION_ACTION,
                    "initial_value": shorten(readable(handoff.question), QUESTION_MAX_LENGTH),
                    "max_length": QUESTION_MAX_LENGTH,
                },
            },
            _readers_input(handoff),
            *context([_cited_line(handoff)]),
            {
                "type": "input",
                "block_id": GROUPS_BLOCK,
                "optional": True,
                "label": plain("Access groups"),
                "hint": plain("Comma-separated; used with \u201cOnly the access groups named below\u201d."),
                "element": _groups_input(handoff),
            },
        ],
    }


def _readers_input(handoff: Handoff) -> dict[str, Any]:
    """Who may read a kept answer: the cited documents' readers when they share a group (the
    narrowest), else no choice made; everyone is never the default."""
    options = [{"text": plain(label), "value": value} for value, label in READER_CHOICES.items()]
    element: dict[str, Any] = {"type": "radio_buttons", "action_id": READERS_ACTION, "options": options}
    chosen = default_readers(handoff.cited)
    if chosen is not None:
        element["initial_option"] = options[list(READER_CHOICES).index(chosen)]
    return {
        "type": "input",
        "block_id": READERS_BLOCK,
        "optional": True,
        "label": plain("Who may read it, if kept"),
        "element": element,
    }


def _cited_line(handoff: Handoff) -> str:
    """Which documents the narrowest readers come from (the form is the expert's alone)."""
    if not handoff.cited:
        return "The answer cited no document: choose who may read a kept answer."
    shown = [
        f"{escape(shorten(doc.title, TITLE_CHARS))} ({escape(', '.join(doc.groups)) if doc.groups else 'everyone'})"
        for doc in handoff.cited[:10]
    ]
    return "Cited: " + "; ".join(shown)


def _groups_input(handoff: Handoff) -> dict[str, Any]:
    """Prefilled with the groups every cited document shares (reading needs only one group, so the
    asker's own groups could widen a reply that quotes one of them)."""
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": GROUPS_ACTION, "max_length": 500}
    narrow = cited_groups(handoff.cited)
    if narrow:
        element["initial_value"] = ", ".join(narrow)[:500]
    return element


def reply_form(view: Mapping[str, Any]) -> dict[str, Any]:
    """What the reply form holds: reply, curate (bool), question, readers (a choice or None), groups (list)."""
    values = (view.get("state") or {}).get("values") or {}

    def typed(block: str, action: str) -> str:
        return str(((values.get(block) or {}).get(action) or {}).get("value") or "").strip()

    chosen = ((values.get(CURATE_BLOCK) or {}).get(CURATE_ACTION) or {}).get("selected_options") or []
    groups = [group.strip() for group in typed(GROUPS_BLOCK, GROUPS_ACTION).split(",") if group.strip()]
    return {
        "reply": typed(REPLY_BLOCK, REPLY_ACTION),
        "curate": any(option.get("value") == CURATE_VALUE for option in chosen),
        "question": typed(QUESTION_BLOCK, QUESTION_ACTION),
        "readers": (((values.get(READERS_BLOCK) or {}).get(READERS_ACTION) or {}).get("selected_option") or {}).get(
            "value"
        ),
        "groups": groups,
    }
