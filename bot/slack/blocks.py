"""Slack's view of an `Answer`: Block Kit messages, the App Home tab and the 👎 reason modal.

Pure functions from plain data to plain data (dicts and `SlackMessage`s); the adapter posts them.
Everything that comes from a document or a question is escaped (`escape`, `to_mrkdwn`); a link is
made only from a plain ``http(s)://`` URL. Slack's limits are kept here, never by the adapter:
at most 3,000 characters per section, 50 blocks per message (further messages follow, their
fallback text starting with "(continued)"), 10 elements of 2,000 characters per context block,
75 characters per button and 150 per header.

What each route shows:

- ``answered``: the sentences, each followed by its citation markers ``[n]`` (linked to the source
  when it has a URL), a callout per conflict with both values and sources and the preference, a line
  per unanswered part, then the numbered sources with a quoted snippet of each passage.
- ``low_confidence``: the same, after a caveat section (the low-confidence note and the caveats).
- ``abstained``: the refusal text only (and the ask-a-human line when configured); no sources.

The last message always ends with the 👍/👎 buttons, whose value is the answer's trace id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.render.handoff import handoff_reason
from bot.render.wording import (
    FAILURE_NOTE,
    LOW_CONFIDENCE_NOTE,
    NO_PREFERENCE_REASON,
    UNANSWERED_NOTE,
    conflict_note,
    shorten,
    source_date,
)
from bot.slack.handoff_blocks import handoff_button
from bot.slack.kit import MESSAGE_BLOCKS, Block
from bot.slack.kit import button as _button
from bot.slack.kit import context as _context
from bot.slack.kit import header as _header
from bot.slack.kit import plain as _plain
from bot.slack.kit import section as _section
from bot.slack.kit import sections as _sections
from bot.slack.mrkdwn import escape, link, to_mrkdwn
from rag.model.answers import DEFAULT_REFUSAL, Answer, AnswerSentence, Conflict, Source
from rag.model.loop import HandoffReason

__all__ = [
    "FEEDBACK_DOWN",
    "FEEDBACK_REASON_CALLBACK",
    "FEEDBACK_UP",
    "REASON_ACTION",
    "REASON_BLOCK",
    "SlackMessage",
    "answer_messages",
    "escape",
    "failure_message",
    "feedback_ack",
    "feedback_reason_modal",
    "home_view",
    "response_url_body",
    "to_mrkdwn",
]

FEEDBACK_UP = "candor_feedback_up"
FEEDBACK_DOWN = "candor_feedback_down"
FEEDBACK_BLOCK = "candor_feedback"
FEEDBACK_REASON_CALLBACK = "candor_feedback_reason"
REASON_BLOCK = "reason"
REASON_ACTION = "reason_text"
REASON_MAX_LENGTH = 2000

SUMMARY_CHARS = 300
SNIPPET_CHARS = 200
TITLE_CHARS = 300
HOME_KNOWLEDGE_BASES = 100

_CHANNEL_ID = re.compile(r"#?([CG][A-Z0-9]{6,})")


@dataclass(frozen=True, slots=True)
class SlackMessage:
    text: str
    """Notification and fallback text: plain, escaped, at most 3,000 characters."""
    blocks: tuple[dict[str, Any], ...]


def answer_messages(answer: Answer, *, ask_human: str | None = None, handoff: bool = False) -> list[SlackMessage]:
    """The answer as one or more messages to post in order, the 👍/👎 buttons on the last one, and
    with `handoff` (a triage channel is set) an "Ask a person" button beside them when the answer
    is a refusal, low-confidence or leaves a part unanswered."""
    blocks: list[Block]
    if answer.abstained:
        blocks = _refusal_blocks(answer, ask_human)
    else:
        sources = {source.n: source for source in answer.sources}
        blocks = [
            *_caveat_blocks(answer),
            *_body_blocks(answer, sources),
            *(block for conflict in answer.conflicts for block in _conflict_blocks(conflict, sources)),
            *_unanswered_blocks(answer.unanswered_parts, ask_human),
            *_sources_blocks(answer.sources),
        ]
    blocks.append(_feedback_block(answer.trace_id, handoff_reason(answer) if handoff else None))
    summary = _summary(answer)
    chunks = [blocks[start : start + MESSAGE_BLOCKS] for start in range(0, len(blocks), MESSAGE_BLOCKS)]
    return [
        SlackMessage(summary if index == 0 else f"(continued) {summary}", tuple(chunk))
        for index, chunk in enumerate(chunks)
    ]


def response_url_body(message: SlackMessage) -> dict[str, Any]:
    """`message` as a post to a `response_url` (a slash command's, a button's): seen by the asker
    only, and a message of its own, never one replacing the message it answers (a 👍's thank-you
    must leave the answer in place)."""
    body: dict[str, Any] = {"text": message.text, "response_type": "ephemeral", "replace_original": False}
    if message.blocks:
        body["blocks"] = list(message.blocks)
    return body


def failure_message(trace_id: str | None = None, *, handoff: bool = False) -> SlackMessage:
    """The friendly failure reply; the trace id in small text so a report can be matched to the logs.
    With `handoff` and a trace (the answer was made but never reached the asker), the "Ask a person"
    button: the asker got no answer, as after a refusal. With no trace there is nothing to pass on."""
    blocks = [_section(escape(FAILURE_NOTE))]
    if trace_id:
        blocks.extend(_context([f"trace {escape(trace_id)}"]))
        if handoff:
            blocks.append({"type": "actions", "elements": [handoff_button(trace_id, "abstained")]})
    return SlackMessage(FAILURE_NOTE, tuple(blocks))


def feedback_ack(rating: Literal["up", "down"]) -> str:
    """The short ephemeral thank-you for a 👍 or a 👎."""
    if rating == "up":
        return "Thanks for the 👍, glad it helped."
    return "Thanks for the 👎. It is logged with this answer so the answer can be improved."


def feedback_reason_modal(trace_id: str) -> dict[str, Any]:
    """The ``views.open`` modal asking what was wrong after a 👎 (the reason is optional)."""
    return {
        "type": "modal",
        "callback_id": FEEDBACK_REASON_CALLBACK,
        "private_metadata": trace_id,
        "title": _plain("Not helpful"),
        "submit": _plain("Send"),
        "close": _plain("Skip"),
        "blocks": [
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "optional": True,
                "label": _plain("What was wrong or missing?"),
                "hint": _plain("Optional. It is stored with the answer's trace so it can be looked into."),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_ACTION,
                    "multiline": True,
                    "max_length": REASON_MAX_LENGTH,
                    "placeholder": _plain("e.g. the policy changed in 2026, or it should have found the travel guide"),
                },
            }
        ],
    }


def home_view(knowledge_bases: Sequence[tuple[str, int]], *, ask_human: str | None = None) -> dict[str, Any]:
    """The App Home tab: what Candor is, what it knows, how to ask it and how it answers."""
    listed = [
        f"• *{escape(shorten(name, 100))}*: {count} document{'' if count == 1 else 's'}"
        for name, count in knowledge_bases[:HOME_KNOWLEDGE_BASES]
    ]
    if len(knowledge_bases) > HOME_KNOWLEDGE_BASES:
        listed.append(f"… and {len(knowledge_bases) - HOME_KNOWLEDGE_BASES} more")
    blocks = [
        _header("Candor"),
        _section("I answer questions from your organisation's documents, and every answer shows where it comes from."),
        _header("What I know"),
        *_sections(listed or ["No knowledge bases are loaded yet."], "\n"),
        _header("How to ask"),
        _section(
            "• *In a channel:* mention me with your question; I answer in a thread.\n"
            "• *In a direct message:* just ask.\n"
            "• *Privately anywhere:* `/candor your question`; only you see the answer.\n"
            "• *Follow-ups:* reply in the thread; I read the thread before answering."
        ),
        _header("How I answer"),
        _section(
            "• Every claim is cited with a number [n] pointing at its source, listed under the answer "
            "with a quote of the passage.\n"
            "• When sources disagree, I say so, show both values and sources, and which one I prefer and why.\n"
            '• When the documents do not cover a question, I say "I don\'t know" instead of guessing.\n'
            "• Under every answer, 👍 or 👎 tells whether it helped; after a 👎 you can say what was wrong."
        ),
    ]
    if ask_human:
        blocks.append(_section(f"Need a person? {_ask_human_line(ask_human)}"))
    return {"type": "home", "blocks": blocks}


def _refusal_blocks(answer: Answer, ask_human: str | None) -> list[Block]:
    lines = (answer.text.strip() or DEFAULT_REFUSAL).splitlines()
    blocks = _sections((escape(line) for line in lines), "\n")
    if ask_human:
        blocks.append(_section(_ask_human_line(ask_human)))
    return blocks


def _caveat_blocks(answer: Answer) -> list[Block]:
    if answer.route == "low_confidence":
        lines = [f"⚠️ {escape(LOW_CONFIDENCE_NOTE)}", *(f"• {escape(caveat)}" for caveat in answer.caveats)]
    else:
        lines = [f"⚠️ {escape(caveat)}" for caveat in answer.caveats]
    return _sections(lines, "\n")


def _body_blocks(answer: Answer, sources: dict[int, Source]) -> list[Block]:
    if not answer.sentences:
        return _sections((to_mrkdwn(line) for line in answer.text.splitlines()), "\n")
    return _sections((_sentence(sentence, sources) for sentence in answer.sentences), " ")


def _sentence(sentence: AnswerSentence, sources: dict[int, Source]) -> str:
    markers = "".join(_marker(n, sources) for n in dict.fromkeys(sentence.citations))
    unverified = " _(not verified)_" if not sentence.supported else ""
    disputed = " _(disputed: see below)_" if sentence.disputed else ""
    return f"{to_mrkdwn(sentence.text.strip())} {markers}{unverified}{disputed}".strip()


def _marker(n: int, sources: dict[int, Source]) -> str:
    source = sources.get(n)
    return (link(source.url, f"[{n}]") if source else None) or f"[{n}]"


def _conflict_blocks(conflict: Conflict, sources: dict[int, Source]) -> list[Block]:
    def source_ref(n: int) -> str:
        source = sources.get(n)
        if source is None:
            return f"[{n}]"
        title = escape(shorten(source.title or source.document, TITLE_CHARS))
        dated = source_date(source)
        date = f" ({escape(dated)})" if dated else ""
        return f"[{n}] {title}{date}"

    note = f" {escape(conflict_note(conflict.note))}" if conflict_note(conflict.note) else ""
    lines = [f"⚠️ *Sources disagree:*{note}"]
    if len(conflict.values) == len(conflict.sources):
        lines.extend(
            f'• "{escape(value)}" in {source_ref(n)}'
            for value, n in zip(conflict.values, conflict.sources, strict=True)
        )
    else:  # values and sources do not pair up: list both as given
        lines.extend(f'• "{escape(value)}"' for value in conflict.values)
        lines.append("Sources: " + ", ".join(source_ref(n) for n in conflict.sources))
    if conflict.preferred is None:
        lines.append(f"No preference: {escape(conflict.reason.strip() or NO_PREFERENCE_REASON)}")
    else:
        reason = f" ({escape(conflict.reason.strip())})" if conflict.reason.strip() else ""
        lines.append(f"Preferred [{conflict.preferred}]{reason}")
    return _sections(lines, "\n")


def _unanswered_blocks(parts: tuple[str, ...], ask_human: str | None) -> list[Block]:
    blocks = _sections((f"{escape(UNANSWERED_NOTE)} {escape(part)}" for part in parts), "\n")
    if blocks and ask_human:
        blocks.extend(_context([_ask_human_line(ask_human)]))
    return blocks


def _sources_blocks(sources: tuple[Source, ...]) -> list[Block]:
    if not sources:
        return []
    return [{"type": "divider"}, *_sections(["*Sources*", *(_source(source) for source in sources)], "\n")]


def _source(source: Source) -> str:
    title = shorten(source.title or source.document, TITLE_CHARS)
    linked = link(source.url, title)
    line = f"[{source.n}] {linked or escape(title)}"
    if source.heading.strip() and source.heading.strip() != source.title.strip():
        line += f" · {escape(shorten(source.heading, TITLE_CHARS))}"
    if linked is None and source.title and source.title != source.document:
        line += f" · {escape(shorten(source.document, TITLE_CHARS))}"
    if source_date(source):
        line += f" · {escape(source_date(source))}"
    if source.excerpt.strip():
        line += f"\n> {escape(shorten(source.excerpt, SNIPPET_CHARS))}"
    return line


def _ask_human_line(ask_human: str) -> str:
    value = ask_human.strip()
    made = link(value, "Ask a human")
    if made is not None:
        return made
    channel = _CHANNEL_ID.fullmatch(value)
    if channel is not None:
        return f"Ask a human: <#{channel.group(1)}>"
    return f"Ask a human: {escape(value)}"


def _summary(answer: Answer) -> str:
    text = answer.text.strip() or " ".join(sentence.text for sentence in answer.sentences)
    if not text.strip():
        text = DEFAULT_REFUSAL if answer.abstained else "Candor answered."
    summary = escape(shorten(text, SUMMARY_CHARS))
    return f"(low confidence) {summary}" if answer.route == "low_confidence" else summary


def _feedback_block(trace_id: str, handoff: HandoffReason | None) -> Block:
    elements = [_button("👍 Helpful", FEEDBACK_UP, trace_id), _button("👎 Not helpful", FEEDBACK_DOWN, trace_id)]
    if handoff is not None:
        elements.append(handoff_button(trace_id, handoff))
    return {"type": "actions", "block_id": FEEDBACK_BLOCK, "elements": elements}
