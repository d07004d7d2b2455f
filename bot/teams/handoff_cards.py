"""Teams' view of a hand-off: the "Ask a person" action, the triage card with its "Reply to asker"
form, the reply the asker gets, and the answers to the card actions. Pure functions from plain data
to plain data, like `bot.teams.cards`.

The actions are Adaptive Card ``Action.Execute`` (Universal Actions, card version 1.4): Teams sends a
click to the bot as an ``adaptiveCard/action`` invoke, as it sends its own 👍/👎 as a
``message/submitAction`` invoke, and shows the invoke's answer at once to whoever clicked: a short
message (`invoke_message`), or a card that replaces the one clicked (`invoke_card`: the form again
with what is wrong, the triage card once answered). An action's ``data`` carries the trace and why a
person is wanted, or the hand-off; the form's inputs are merged into it by Teams.

Text that comes from questions, answers, documents and people goes into ``TextRun``s, which Teams
shows as written (no markdown: no link or emphasis can come from it). The reply the asker gets is a
markdown message escaped like an answer (`bot.teams.cards.escape`), with the asker @mentioned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.render.handoff import REASON_WORDS, handoff_reason
from bot.render.wording import shorten
from bot.teams.cards import escape
from rag.errors import ConfigError
from rag.experts import Readers, default_readers, reader_groups
from rag.model.answers import Answer
from rag.model.loop import HANDOFF_REASONS, CuratedAnswer, Handoff, HandoffReason

HANDOFF_VERB = "candor.handoff"
REPLY_VERB = "candor.handoff.reply"
ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.4"
"""Action.Execute needs 1.4; Teams' desktop, web and mobile clients render it."""
REPLY_INPUT, CURATE_INPUT, QUESTION_INPUT, GROUPS_INPUT = "reply", "curate", "question", "groups"
READERS_INPUT = "readers"
READER_CHOICES: dict[Readers, str] = {
    "cited": "The readers of the documents the answer cited",
    "groups": "Only the access groups named below",
    "everyone": "Everyone who can ask Candor",
}
REPLY_MAX_LENGTH = 3000
QUESTION_MAX_LENGTH = 1000
QUESTION_CHARS = 2800
ANSWER_CHARS = 1500
TITLE_CHARS = 150
MAX_SOURCES = 10
LINK_CHARS = 500
"""Longer source URLs are named, not linked: the triage card stays well under Teams' 28 KB per card."""

OFFER_NOTE = "Not what you needed? A person from the team can answer."
VOTE_NOTE = "Thanks for the 👎. It is logged with this answer so the answer can be improved."
NOT_CHECKED = "A person's answer, not checked against the documents by Candor."
RESTRICTED_NOTE = "Its answer drew on restricted documents, so it is not shown here; the trace has it."
EMPTY_REPLY = "Write the answer first."
NO_QUESTION = "A curated answer needs its question."

_WHERE = {"personal": "a personal chat with Candor", "groupChat": "a group chat", "channel": "a channel"}
_LINKABLE_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f\"'<>\\`]+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ReplyForm:
    """What the "Reply to asker" form held when it was sent."""

    handoff_id: str
    reply: str
    curate: bool
    question: str
    groups: tuple[str, ...]
    readers: str | None = None
    """Who may read a kept answer: cited, groups or everyone (`rag.experts.reader_groups`)."""

    def problem(self, handoff: Handoff) -> str | None:
        """What must be fixed before the reply can go, if anything."""
        if not self.reply:
            return EMPTY_REPLY
        if self.curate and not self.question:
            return NO_QUESTION
        if self.curate:
            try:
                reader_groups(self.readers, self.groups, handoff.cited)
            except ConfigError as exc:
                return f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        return None


# --- the asker: "Ask a person" ---------------------------------------------------------------------


def with_handoff_offer(activity: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
    """The answer's activity with an "Ask a person" card under it when the answer refused, is
    low-confidence or left a part unanswered; else the activity as it is. (The card is under 1 KB:
    the answer is bounded at 80 KB, Teams takes 100 KB.)"""
    reason = handoff_reason(answer)
    return dict(activity) if reason is None else with_offer(activity, answer.trace_id, reason)


def with_offer(activity: Mapping[str, Any], trace_id: str, reason: HandoffReason) -> dict[str, Any]:
    """`activity` with the "Ask a person" card under it (also the failure note of an answer that was
    made but never reached the asker: reason "abstained")."""
    offer = attachment(offer_card(trace_id, reason, OFFER_NOTE))
    return {**activity, "attachments": [*activity.get("attachments", ()), offer]}


def vote_offer_activity(trace_id: str) -> dict[str, Any]:
    """The thank-you for a 👎, with the offer of a person."""
    return {"type": "message", "attachments": [attachment(offer_card(trace_id, "down_vote", VOTE_NOTE))]}


def offer_card(trace_id: str, reason: HandoffReason, note: str) -> dict[str, Any]:
    action = _execute("🙋 Ask a person", HANDOFF_VERB, {"trace": trace_id, "reason": reason})
    return _card([{"type": "TextBlock", "text": note, "wrap": True, "isSubtle": True}], [action])


def read_action(value: object) -> tuple[str, dict[str, Any]]:
    """The verb and data of an ``adaptiveCard/action`` invoke's value; ("", {}) when it is not an
    ``Action.Execute``."""
    action = value.get("action") if isinstance(value, Mapping) else None
    if not isinstance(action, Mapping) or action.get("type") != "Action.Execute":
        return "", {}
    data = action.get("data")
    return str(action.get("verb") or ""), dict(data) if isinstance(data, Mapping) else {}


def read_ask(data: Mapping[str, Any]) -> tuple[str, HandoffReason] | None:
    """The trace and reason of an "Ask a person" click (an unknown reason reads as "asked")."""
    trace = data.get("trace")
    if not isinstance(trace, str) or not trace:
        return None
    reason = data.get("reason")
    return trace, next((known for known in HANDOFF_REASONS if known == reason), "asked")


# --- the team: the triage card and its form --------------------------------------------------------


def read_reply_form(data: Mapping[str, Any]) -> ReplyForm:
    def typed(name: str) -> str:
        value = data.get(name)
        return value.strip() if isinstance(value, str) else ""

    groups = tuple(group.strip() for group in typed(GROUPS_INPUT).split(",") if group.strip())
    return ReplyForm(
        handoff_id=typed("handoff"),
        reply=typed(REPLY_INPUT),
        curate=typed(CURATE_INPUT).lower() == "true",
        question=typed(QUESTION_INPUT),
        groups=groups,
        readers=typed(READERS_INPUT) or None,
    )


def triage_activity(handoff: Handoff, *, trace_url: str | None = None) -> dict[str, Any]:
    """The post in the triage channel: the triage card, with a summary for notifications."""
    summary = f"A question for a person: {shorten(handoff.question, 200)}"
    card = triage_card(handoff, trace_url=trace_url)
    return {"type": "message", "summary": summary, "attachments": [attachment(card)]}


def triage_card(
    handoff: Handoff, *, form: ReplyForm | None = None, problem: str | None = None, trace_url: str | None = None
) -> dict[str, Any]:
    """The triage card with the "Reply to asker" form: empty and prefilled with the question, or
    (`form`, `problem`) as it was sent, with what is wrong above it."""
    body = [*_triage_body(handoff, trace_url), _text("Reply to asker", weight="Bolder", separator=True)]
    if problem:
        body.append(_text(f"⚠️ {problem}", color="Attention"))
    question = (
        form.question[:QUESTION_MAX_LENGTH] if form is not None else shorten(handoff.question, QUESTION_MAX_LENGTH)
    )
    body.extend(
        [
            {
                "type": "Input.Text",
                "id": REPLY_INPUT,
                "label": "Your answer",
                "isMultiline": True,
                "isRequired": True,
                "errorMessage": EMPTY_REPLY,
                "maxLength": REPLY_MAX_LENGTH,
                "value": form.reply[:REPLY_MAX_LENGTH] if form is not None else "",
            },
            {
                "type": "Input.Toggle",
                "id": CURATE_INPUT,
                "title": "Save as a curated answer for the next person who asks",
                "valueOn": "true",
                "valueOff": "false",
                "value": "true" if form is not None and form.curate else "false",
            },
            {
                "type": "Input.Text",
                "id": QUESTION_INPUT,
                "label": "The question it answers (how people ask it; used when it is saved)",
                "maxLength": QUESTION_MAX_LENGTH,
                "value": question,
            },
            {
                # the cited documents' readers by default (the narrowest), never everyone; the card is
                # seen by the whole triage channel, so it names no access group itself
                "type": "Input.ChoiceSet",
                "id": READERS_INPUT,
                "label": "Who may read it, if kept",
                "style": "expanded",
                "choices": [{"title": title, "value": value} for value, title in READER_CHOICES.items()],
                "value": (form.readers if form is not None else default_readers(handoff.cited)) or "",
            },
            {
                "type": "Input.Text",
                "id": GROUPS_INPUT,
                "label": "Access groups, comma-separated (with \u201cOnly the access groups named below\u201d)",
                "maxLength": 500,
                "value": ", ".join(form.groups if form is not None else ())[:500],
            },
        ]
    )
    send = _execute("Reply to asker", REPLY_VERB, {"handoff": handoff.id}, style="positive")
    return _card(body, [send], full_width=True)


def triage_done_card(
    handoff: Handoff,
    *,
    expert: str,
    curated: CuratedAnswer | None,
    notes: Iterable[str] = (),
    trace_url: str | None = None,
) -> dict[str, Any]:
    """The triage card once replied: no form; who replied, what was kept, and what went wrong."""
    done = f"✅ {expert} replied to the asker."
    if curated is not None:
        done += f" Saved as curated answer #{curated.id}: the next person who asks gets it, cited."
    body = [
        *_triage_body(handoff, trace_url),
        _runs([done], separator=True),
        _runs([f"Reply: {shorten(handoff.reply_text or '', 500)}"], subtle=True),
        *(_runs([f"⚠️ {note}"], color="Attention") for note in notes),
    ]
    return _card(body, [], full_width=True)


def where_asked(handoff: Handoff) -> str:
    kind = str(handoff.reply_to.get("conversation_type") or "")
    return _WHERE.get(kind, "Teams")


def asker_account(handoff: Handoff) -> dict[str, str]:
    """The asker's Teams account as the reply mentions them: id and name (from where they wait)."""
    user = (handoff.reply_to.get("reference") or {}).get("user") or {}
    return {"id": str(user.get("id") or handoff.asker), "name": str(user.get("name") or "")}


# --- the asker again: the person's reply ---------------------------------------------------------


def expert_reply_activity(handoff: Handoff, *, expert: str) -> dict[str, Any]:
    """What the asker gets where they asked: an @mention, who answered, the reply, and that Candor
    did not check it."""
    asker = asker_account(handoff)
    name = (asker["name"] or "there").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    mention = f"<at>{name}</at>"
    lines = [escape(line) for line in (handoff.reply_text or "").splitlines() if line.strip()]
    text = "\n\n".join([f"{mention} **{escape(expert)}** answered your question:", *lines, f"_{NOT_CHECKED}_"])
    entity = {"type": "mention", "mentioned": {"id": asker["id"], "name": asker["name"]}, "text": mention}
    return {"type": "message", "textFormat": "markdown", "text": text, "entities": [entity]}


def note_activity(text: str) -> dict[str, Any]:
    """A short note from Candor in the asker's conversation."""
    return {"type": "message", "textFormat": "markdown", "text": escape(text)}


# --- answers to the invoke -----------------------------------------------------------------------


def invoke_message(text: str) -> dict[str, Any]:
    """Shown to whoever clicked, beside the card (the card stays as it is)."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text}


def invoke_card(card: Mapping[str, Any]) -> dict[str, Any]:
    """Replaces the clicked card for whoever clicked."""
    return {"statusCode": 200, "type": ADAPTIVE_CARD, "value": dict(card)}


def invoke_error(status: int, message: str) -> dict[str, Any]:
    code = "BadRequest" if status < 500 else "InternalServerError"
    return {
        "statusCode": status,
        "type": "application/vnd.microsoft.error",
        "value": {"code": code, "message": message},
    }


def attachment(card: Mapping[str, Any]) -> dict[str, Any]:
    return {"contentType": ADAPTIVE_CARD, "content": dict(card)}


# --- parts ---------------------------------------------------------------------------------------


def _triage_body(handoff: Handoff, trace_url: str | None = None) -> list[dict[str, Any]]:
    asker = asker_account(handoff)["name"] or "Someone"
    body: list[dict[str, Any]] = [
        _text("🙋 A question for a person", size="Medium", weight="Bolder"),
        _runs([f"{asker} asked in {where_asked(handoff)}:"]),
        _quote(shorten(handoff.question, QUESTION_CHARS)),
        _text(f"{REASON_WORDS.get(handoff.reason, handoff.reason)}.", weight="Bolder"),
    ]
    if handoff.restricted:
        body.append(_text(RESTRICTED_NOTE, subtle=True))
    else:
        body.extend([_text("Candor's answer:", weight="Bolder"), _quote(shorten(handoff.answer_text, ANSWER_CHARS))])
        if handoff.sources:
            body.append(_text("Sources", weight="Bolder"))
            for source in handoff.sources[:MAX_SOURCES]:
                title = shorten(source.title, TITLE_CHARS) or f"Source {source.n}"
                url = (source.url or "").strip()
                run: dict[str, Any] = {"type": "TextRun", "text": title}
                if len(url) <= LINK_CHARS and _LINKABLE_URL.fullmatch(url):
                    run["selectAction"] = {"type": "Action.OpenUrl", "url": url}
                body.append({"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": f"[{source.n}] "}, run]})
    body.append(
        {
            "type": "FactSet",
            "facts": [{"title": "Trace", "value": handoff.trace_id}, {"title": "Hand-off", "value": handoff.id}],
        }
    )
    if trace_url is not None and len(trace_url) <= LINK_CHARS and _LINKABLE_URL.fullmatch(trace_url):
        opened = {
            "type": "TextRun",
            "text": "Open the trace",
            "selectAction": {"type": "Action.OpenUrl", "url": trace_url},
        }
        body.append({"type": "RichTextBlock", "inlines": [opened]})
    return body


def _card(body: list[dict[str, Any]], actions: list[dict[str, Any]], *, full_width: bool = False) -> dict[str, Any]:
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": body,
    }
    if actions:
        card["actions"] = actions
    if full_width:
        card["msteams"] = {"width": "Full"}
    return card


def _execute(title: str, verb: str, data: Mapping[str, Any], *, style: str | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {"type": "Action.Execute", "title": title, "verb": verb, "data": dict(data)}
    if style:
        action["style"] = style
    return action


def _text(
    text: str,
    *,
    size: str | None = None,
    weight: str | None = None,
    color: str | None = None,
    subtle: bool = False,
    separator: bool = False,
) -> dict[str, Any]:
    """A TextBlock of Candor's own words (never text from a person or a document: `_runs`)."""
    block: dict[str, Any] = {"type": "TextBlock", "text": text, "wrap": True}
    style = {"size": size, "weight": weight, "color": color, "isSubtle": subtle or None, "separator": separator or None}
    block.update((key, value) for key, value in style.items() if value is not None)
    return block


def _runs(
    texts: Iterable[str], *, separator: bool = False, subtle: bool = False, color: str | None = None
) -> dict[str, Any]:
    """Text shown as written: one paragraph of TextRuns, no markdown."""
    run: dict[str, Any] = {"type": "TextRun"}
    if subtle:
        run["isSubtle"] = True
    if color:
        run["color"] = color
    block: dict[str, Any] = {"type": "RichTextBlock", "inlines": [{**run, "text": text} for text in texts]}
    if separator:
        block["separator"] = True
    return block


def _quote(text: str) -> dict[str, Any]:
    return {"type": "Container", "style": "emphasis", "items": [_runs([text or "(empty)"])]}
