"""Teams' view of an `Answer`: Bot Framework activities as plain JSON-able dicts.

Pure functions from plain data to plain data; the adapter passes the dicts to botbuilder as `Activity`
fields. An answer is one markdown message, shaped as Teams documents AI-generated bot messages
(https://learn.microsoft.com/microsoftteams/platform/bots/how-to/bot-messages-ai-generated-content):

- ``text``: the answer, each sentence followed by its citation markers ``[n]``;
- ``entities``: one schema.org ``Message`` entity with ``additionalType: ["AIGeneratedContent"]`` (the
  "AI generated" label) and a ``Claim`` per marker in the text, ``position`` n, whose ``appearance`` is a
  ``DigitalDocument`` (name at most 80 characters, abstract at most 160, at most 3 keywords of 28,
  ``url`` only for a plain http(s) URL): Teams turns each ``[n]`` into a citation pill;
- ``channelData.feedbackLoopEnabled``: Teams' own 👍/👎, which come back as a ``message/submitAction``
  invoke whose ``replyToId`` is this message's id (`feedback_from_invoke` reads its value). Teams
  rejects a message that also sets ``channelData.feedbackLoop``, so only the flag is set.

What each route shows, as on Slack and the chat page: ``answered``, the sentences, a callout per conflict
(both values and sources, the preference and why), a line per unanswered part; ``low_confidence``, the
same after the low-confidence note and the caveats; ``abstained``, the refusal only (and the
ask-a-human line), no citations, still with the AI label.

Text from documents and questions is escaped (`escape`): no HTML, mention, link or emphasis can come
from it. The whole activity stays under `MAX_ACTIVITY_BYTES` as JSON: first the abstracts get shorter,
then sentences are cut from the end and a last line says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.render.wording import (
    FAILURE_NOTE,
    LOW_CONFIDENCE_NOTE,
    NO_PREFERENCE_REASON,
    UNANSWERED_NOTE,
    conflict_note,
    shorten,
    source_date,
)
from rag.model.answers import DEFAULT_REFUSAL, Answer, AnswerSentence, Conflict, Source

__all__ = [
    "MAX_ACTIVITY_BYTES",
    "activity_size",
    "answer_activity",
    "escape",
    "failure_activity",
    "typing_activity",
    "welcome_activity",
]

MAX_ACTIVITY_BYTES = 80_000
"""Teams refuses messages over about 100 KB; this leaves room for what botbuilder adds."""
NAME_CHARS = 80
ABSTRACT_CHARS = 160
KEYWORDS = 3
KEYWORD_CHARS = 28
TITLE_CHARS = 80
REFUSAL_LINE_CHARS = 3000
"""The refusal's first line is never dropped, so it is bounded: with it alone the message always fits."""
WELCOME_KNOWLEDGE_BASES = 100

_LINKABLE_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f\"'<>\\`]+", re.IGNORECASE)
_MARKDOWN_SPECIAL = re.compile(r"[\\`*~\[\]|]|(?<![^\W_])_|_(?![^\W_])")
"""Markdown punctuation to backslash-escape; ``_`` only where it could start or end emphasis."""
_BLOCK_START = re.compile(r"^(?:[#+\-=]|(\d{1,9})(?=[.)]))")


@dataclass(frozen=True, slots=True)
class _Detail:
    """How much of each cited source the citation entities carry."""

    name_chars: int
    abstract_chars: int
    keywords: bool


_DETAILS = (_Detail(NAME_CHARS, ABSTRACT_CHARS, True), _Detail(NAME_CHARS, 60, False), _Detail(40, 20, False))


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    """Markdown, escaped."""
    cites: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class _Parts:
    """The message text in pieces that can be left out from the end when it is too big."""

    before: tuple[_Line, ...]
    sentences: tuple[_Line, ...]
    after: tuple[_Line, ...]
    pinned: int
    """The first `pinned` lines of `before` are never left out (the low-confidence note, the refusal)."""


def answer_activity(answer: Answer, *, ask_human: str | None = None) -> dict[str, Any]:
    """The answer as one Teams message activity, under `MAX_ACTIVITY_BYTES` as JSON."""
    sources = {source.n: source for source in answer.sources}
    parts = _refusal_parts(answer, ask_human) if answer.abstained else _answer_parts(answer, sources, ask_human)
    whole = len(parts.sentences), len(parts.before) - parts.pinned + len(parts.after)
    for detail in _DETAILS:
        activity = _activity(parts, sources, detail, *whole)
        if activity_size(activity) <= MAX_ACTIVITY_BYTES:
            return activity
    detail = _DETAILS[-1]

    def fits(sentences: int, lines: int) -> bool:
        return activity_size(_activity(parts, sources, detail, sentences, lines)) <= MAX_ACTIVITY_BYTES

    kept = _largest(lambda k: fits(k, whole[1]), whole[0])
    if kept is not None:
        return _activity(parts, sources, detail, kept, whole[1])
    lines = _largest(lambda m: fits(0, m), whole[1]) or 0  # with no lines left it always fits
    return _activity(parts, sources, detail, 0, lines)


def failure_activity(trace_id: str | None = None) -> dict[str, Any]:
    """The friendly failure reply; the trace id in small text so a report can be matched to the logs."""
    text = escape(FAILURE_NOTE)
    if trace_id:
        text += f"\n\n_trace {escape(trace_id)}_"
    return _message(text)


def welcome_activity(knowledge_bases: Sequence[tuple[str, int]], *, ask_human: str | None = None) -> dict[str, Any]:
    """Sent when Candor is added to a chat or team: what it is, what it knows, how to ask, how it answers."""
    listed = [
        f"- **{escape(shorten(name, 100))}**: {count} document{'' if count == 1 else 's'}"
        for name, count in knowledge_bases[:WELCOME_KNOWLEDGE_BASES]
    ]
    if len(knowledge_bases) > WELCOME_KNOWLEDGE_BASES:
        listed.append(f"- … and {len(knowledge_bases) - WELCOME_KNOWLEDGE_BASES} more")
    sections = [
        "Hi, I'm **Candor**. I answer questions from your organisation's documents, "
        "and every answer shows where it comes from.",
        "**What I know**\n\n" + ("\n".join(listed) if listed else "No knowledge bases are loaded yet."),
        "**How to ask**\n\n"
        "- **In a personal chat:** just ask.\n"
        "- **In a channel or group chat:** @mention Candor with your question.",
        "**How I answer**\n\n"
        "- Every claim is cited with a number; select it to see the source and the passage.\n"
        "- When sources disagree, I say so, show both values and sources, and which one I prefer and why.\n"
        '- When the documents do not cover a question, I say "I don\'t know" instead of guessing.\n'
        "- Under every answer, 👍 or 👎 tells whether it helped, with an optional comment.",
    ]
    if ask_human:
        sections.append(f"Need a person? {_ask_human_line(ask_human)}")
    return _message("\n\n".join(sections))


def typing_activity() -> dict[str, Any]:
    """The "Candor is typing…" indicator, sent while an answer is being made."""
    return {"type": "typing"}


def escape(text: str) -> str:
    """`text` as literal Teams markdown on one line: whitespace collapsed, ``&``, ``<`` and ``>`` as
    entities (no HTML, no ``<at>`` mention), markdown punctuation backslash-escaped (no link, emphasis,
    code, heading or list), so it reads as written."""
    flat = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = _MARKDOWN_SPECIAL.sub(lambda match: "\\" + match.group(0), flat)
    return _BLOCK_START.sub(lambda match: f"{match.group(1)}\\" if match.group(1) else "\\" + match.group(0), escaped)


def activity_size(activity: Mapping[str, Any]) -> int:
    """The activity's size as JSON, in bytes (ASCII-escaped: never less than botbuilder's UTF-8)."""
    return len(json.dumps(activity).encode())


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "textFormat": "markdown", "text": text}


def _activity(parts: _Parts, sources: dict[int, Source], detail: _Detail, sentences: int, lines: int) -> dict[str, Any]:
    """The message with the first `sentences` sentences and the first `lines` lines that may be left out."""
    droppable_before = len(parts.before) - parts.pinned
    before = parts.before[: parts.pinned + min(lines, droppable_before)]
    after = parts.after[: max(0, lines - droppable_before)]
    kept = parts.sentences[:sentences]
    blocks = [line.text for line in before]
    if kept:
        blocks.append(" ".join(sentence.text for sentence in kept))
    blocks.extend(line.text for line in after)
    note = _shortened_note(len(parts.sentences) - len(kept), droppable_before + len(parts.after) - lines)
    if note:
        blocks.append(note)
    cited = sorted({n for line in (*before, *kept, *after) for n in line.cites})
    entity: dict[str, Any] = {
        "type": "https://schema.org/Message",
        "@type": "Message",
        "@context": "https://schema.org",
        "@id": "",
        "additionalType": ["AIGeneratedContent"],
    }
    if cited:
        entity["citation"] = [_citation(sources[n], detail) for n in cited]
    return {
        **_message("\n\n".join(block for block in blocks if block)),
        "entities": [entity],
        "channelData": {"feedbackLoopEnabled": True},
    }


def _shortened_note(sentences: int, lines: int) -> str:
    left_out = []
    if sentences:
        left_out.append(f"{sentences} more sentence{'' if sentences == 1 else 's'} in the sources")
    if lines:
        left_out.append(f"{lines} more note{'' if lines == 1 else 's'} left out")
    return f"_(answer shortened: {'; '.join(left_out)})_" if left_out else ""


def _largest(fits: Callable[[int], bool], most: int) -> int | None:
    """The largest k in [0, most] for which `fits(k)` holds (fitting is monotone in k), or None."""
    if not fits(0):
        return None
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _answer_parts(answer: Answer, sources: dict[int, Source], ask_human: str | None) -> _Parts:
    before: list[_Line] = []
    if answer.route == "low_confidence":
        before.append(_Line(f"⚠️ {escape(LOW_CONFIDENCE_NOTE)}"))
        before.extend(_Line(f"• {escape(caveat)}") for caveat in answer.caveats)
    else:
        before.extend(_Line(f"⚠️ {escape(caveat)}") for caveat in answer.caveats)
    after: list[_Line] = []
    if not answer.sentences:
        after.extend(_Line(escape(line)) for line in answer.text.splitlines() if line.strip())
    after.extend(_conflict(conflict, sources) for conflict in answer.conflicts)
    after.extend(_Line(escape(f"{UNANSWERED_NOTE} {part}")) for part in answer.unanswered_parts)
    if answer.unanswered_parts and ask_human:
        after.append(_Line(_ask_human_line(ask_human)))
    return _Parts(
        before=tuple(before),
        sentences=tuple(_sentence(sentence, sources) for sentence in answer.sentences),
        after=tuple(after),
        pinned=1 if answer.route == "low_confidence" else 0,
    )


def _refusal_parts(answer: Answer, ask_human: str | None) -> _Parts:
    lines = [line for line in (answer.text.strip() or DEFAULT_REFUSAL).splitlines() if line.strip()]
    after = [_Line(escape(line)) for line in lines[1:]]
    if ask_human:
        after.append(_Line(_ask_human_line(ask_human)))
    first = _Line(escape(shorten(lines[0], REFUSAL_LINE_CHARS)))
    return _Parts(before=(first,), sentences=(), after=tuple(after), pinned=1)


def _sentence(sentence: AnswerSentence, sources: dict[int, Source]) -> _Line:
    cited = tuple(n for n in dict.fromkeys(sentence.citations) if n in sources)
    text = " ".join(piece for piece in (escape(sentence.text), *(f"[{n}]" for n in cited)) if piece)
    if not sentence.supported:
        text += " _(not verified)_"
    if sentence.disputed:
        text += " _(disputed: see below)_"
    return _Line(text.strip(), cited)


def _conflict(conflict: Conflict, sources: dict[int, Source]) -> _Line:
    cited: list[int] = []

    def marker(n: int) -> str:
        if n not in sources:
            return f"source {n}"
        cited.append(n)
        return f"[{n}]"

    def source_ref(n: int) -> str:
        source = sources.get(n)
        if source is None:
            return marker(n)
        title = escape(shorten(source.title or source.document, TITLE_CHARS))
        date = f" ({escape(source_date(source))})" if source_date(source) else ""
        return f"{marker(n)} {title}{date}".rstrip()

    pieces = ["⚠️ **Sources disagree:**"]
    if conflict_note(conflict.note):
        pieces.append(_full_stop(escape(conflict_note(conflict.note))))
    if len(conflict.values) == len(conflict.sources):
        pieces.append(
            "; ".join(
                f'{source_ref(n)} says "{escape(value)}"'
                for value, n in zip(conflict.values, conflict.sources, strict=True)
            )
            + "."
        )
    else:  # values and sources do not pair up: list both as given
        values = ", ".join(f'"{escape(value)}"' for value in conflict.values)
        pieces.append(f"Values {values} in {', '.join(source_ref(n) for n in conflict.sources)}.")
    if conflict.preferred is None:
        pieces.append(_full_stop(f"No preference: {escape(conflict.reason.strip() or NO_PREFERENCE_REASON)}"))
    else:
        reason = f", {escape(conflict.reason)}" if conflict.reason.strip() else ""
        pieces.append(_full_stop(f"Preferred: {marker(conflict.preferred)}{reason}"))
    return _Line(" ".join(pieces), tuple(dict.fromkeys(cited)))


def _citation(source: Source, detail: _Detail) -> dict[str, Any]:
    name = _first(_plain(text, detail.name_chars) for text in (source.title, source.document)) or f"Source {source.n}"
    appearance: dict[str, Any] = {"@type": "DigitalDocument", "name": name}
    url = _linkable(source.url)
    if url is not None:
        appearance["url"] = url
    abstract = _first(_plain(text, detail.abstract_chars) for text in (source.excerpt, source.heading))
    if source.answered_by:  # who answered and when, whole (a keyword holds 28 characters), then the answer
        passage = source.excerpt.strip() or source.heading.strip()
        abstract = _plain(
            f"{source_date(source)}: {passage}" if passage else source_date(source), detail.abstract_chars
        )
    appearance["abstract"] = abstract or name
    if detail.keywords:
        keywords = [
            keyword
            for keyword in (
                _plain(source.heading, KEYWORD_CHARS) if source.heading.strip() != source.title.strip() else "",
                _date_keyword(source),
            )
            if keyword
        ][:KEYWORDS]
        if keywords:
            appearance["keywords"] = keywords
    return {"@type": "Claim", "position": source.n, "appearance": appearance}


def _date_keyword(source: Source) -> str:
    """The source's date as a keyword: "effective 2026-03-01"; for a curated answer "answered by Ana
    Diaz on 2026-12-02" when it fits, else "answered 2026-12-02" (its abstract names who)."""
    dated = source_date(source)
    if len(dated) > KEYWORD_CHARS and source.effective_date is not None:
        dated = f"answered {source.effective_date.isoformat()}"
    return _plain(dated, KEYWORD_CHARS)


def _plain(text: str, limit: int) -> str:
    """`text` for a field Teams shows as it is: no angle brackets, no markdown link, at most `limit`
    characters, cut at a word boundary with "…"."""
    size = limit
    while size > 0:
        made = shorten(text, size).replace("<", "&lt;").replace(">", "&gt;").replace("](", "] (")
        if len(made) <= limit:
            return made
        size -= len(made) - limit
    return ""


def _first(texts: Iterable[str]) -> str:
    return next((text for text in texts if text), "")


def _full_stop(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _linkable(url: str | None) -> str | None:
    candidate = (url or "").strip()
    return candidate if _LINKABLE_URL.fullmatch(candidate) else None


def _ask_human_line(ask_human: str) -> str:
    value = ask_human.strip()
    url = _linkable(value)
    if url is not None:
        return f"[Ask a human]({url.replace('(', '%28').replace(')', '%29')})"
    return f"Ask a human: {escape(value)}"
