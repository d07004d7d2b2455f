"""The chat page's view of an `Answer`: one HTML fragment, built by pure functions.

Everything that comes from a document or a question (sentences, titles, headings, excerpts, conflict
values, unanswered parts, URLs) is escaped with `html.escape`; a source URL becomes a link only when
it is a plain ``http(s)://`` URL. Citations are ``<sup><a href="#src-{trace}-{n}">[n]</a></sup>`` and
point at the matching entry of the numbered source list, whose ids carry the trace id so several
answers can share one page.

What each route shows:

- ``answered``: the sentences with citations, a callout per conflict, the unanswered parts, the sources.
- ``low_confidence``: the same, under a caveat banner (with the answer's own caveats, if any).
- ``abstained``: the refusal text only; an abstention shows no sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import escape

from bot.render.wording import (
    LOW_CONFIDENCE_NOTE,
    NO_PREFERENCE_REASON,
    UNANSWERED_NOTE,
    conflict_note,
    source_date,
)
from rag.model.answers import DEFAULT_REFUSAL, Answer, AnswerSentence, Conflict, Source

_LINKABLE_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f\"'<>\\`]+", re.IGNORECASE)
_NOT_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def answer_html(answer: Answer) -> str:
    """The answer as an ``<article>`` fragment for the chat page."""
    anchor = _anchor_prefix(answer.trace_id)
    parts: list[str]
    if answer.abstained:
        parts = [f'<p class="refusal">{escape(answer.text.strip() or DEFAULT_REFUSAL)}</p>']
    else:
        cited_sources = {source.n: source for source in answer.sources}
        parts = [
            _caveat_html(answer),
            _text_html(answer, anchor, cited_sources),
            *(_conflict_html(conflict, anchor, cited_sources) for conflict in answer.conflicts),
            _unanswered_html(answer.unanswered_parts),
            _sources_html(answer.sources, anchor),
        ]
    return (
        f'<article class="answer route-{escape(answer.route)}" data-trace="{escape(answer.trace_id)}">'
        + "".join(parts)
        + "</article>"
    )


def source_anchor(trace_id: str, n: int) -> str:
    """The id of source `n` of the answer with this trace id (the target of its citations)."""
    return f"{_anchor_prefix(trace_id)}-{n}"


def linkable_url(url: str | None) -> str | None:
    """`url` if it may become a link (a plain http or https URL), else None."""
    if url is None:
        return None
    candidate = url.strip()
    return candidate if _LINKABLE_URL.fullmatch(candidate) else None


def _anchor_prefix(trace_id: str) -> str:
    return "src-" + _NOT_ID_SAFE.sub("_", trace_id)


def _caveat_html(answer: Answer) -> str:
    if answer.route != "low_confidence" and not answer.caveats:
        return ""
    note = f"<p>{escape(LOW_CONFIDENCE_NOTE)}</p>" if answer.route == "low_confidence" else ""
    caveats = _list("ul", (escape(caveat) for caveat in answer.caveats))
    return f'<div class="caveat" role="note">{note}{caveats}</div>'


def _text_html(answer: Answer, anchor: str, sources: dict[int, Source]) -> str:
    if not answer.sentences:
        return f'<p class="answer-text">{escape(answer.text)}</p>' if answer.text.strip() else ""
    sentences = " ".join(_sentence_html(sentence, anchor, sources) for sentence in answer.sentences)
    return f'<p class="answer-text">{sentences}</p>'


def _sentence_html(sentence: AnswerSentence, anchor: str, sources: dict[int, Source]) -> str:
    marks = "".join(_citation_html(n, anchor, sources) for n in dict.fromkeys(sentence.citations))
    classes, title = "sentence", ""
    if not sentence.supported:
        classes, title = f"{classes} unsupported", "not verified against its sources"
    if sentence.disputed:
        classes, title = f"{classes} disputed", "disputed: another source says otherwise (see below)"
    titled = f' title="{title}"' if title else ""
    return f'<span class="{classes}"{titled}>{escape(sentence.text)}{marks}</span>'


def _citation_html(n: int, anchor: str, sources: dict[int, Source]) -> str:
    return f"<sup>{_source_link(n, anchor, sources)}</sup>"


def _source_link(n: int, anchor: str, sources: dict[int, Source]) -> str:
    if n not in sources:  # nothing to point at: show the number, link nowhere
        return f"[{n}]"
    return f'<a href="#{anchor}-{n}">[{n}]</a>'


def _conflict_html(conflict: Conflict, anchor: str, sources: dict[int, Source]) -> str:
    def source_ref(n: int) -> str:
        source = sources.get(n)
        title = f" {escape(source.title or source.document)}" if source else ""
        return _source_link(n, anchor, sources) + title

    if len(conflict.values) == len(conflict.sources):
        items = [
            f'<q class="value">{escape(value)}</q> from {source_ref(n)}'
            + (' <em class="preferred">(preferred)</em>' if n == conflict.preferred else "")
            for value, n in zip(conflict.values, conflict.sources, strict=True)
        ]
        listing = _list("ul", items)
    else:  # values and sources do not pair up: list both as given
        values = _list("ul", (f'<q class="value">{escape(value)}</q>' for value in conflict.values))
        listing = values + "<p>Sources: " + ", ".join(source_ref(n) for n in conflict.sources) + "</p>"
    note = conflict_note(conflict.note)
    if conflict.preferred is None:
        verdict = f"No preference: {escape(conflict.reason or NO_PREFERENCE_REASON)}."
    else:
        reason = f": {escape(conflict.reason)}" if conflict.reason else ""
        verdict = f"Preferred {source_ref(conflict.preferred)}{reason}."
    return (
        '<aside class="conflict" role="note">'
        f"<p><strong>Sources disagree</strong>{': ' + escape(note) if note else ''}</p>"
        f'{listing}<p class="verdict">{verdict}</p></aside>'
    )


def _unanswered_html(parts: tuple[str, ...]) -> str:
    if not parts:
        return ""
    items = _list("ul", (escape(part) for part in parts))
    return f'<section class="unanswered"><p>{escape(UNANSWERED_NOTE)}</p>{items}</section>'


def _sources_html(sources: tuple[Source, ...], anchor: str) -> str:
    if not sources:
        return ""
    items = "".join(_source_html(source, anchor) for source in sources)
    return f'<section class="sources"><h3>Sources</h3><ol>{items}</ol></section>'


def _source_html(source: Source, anchor: str) -> str:
    title = escape(source.title or source.document)
    url = linkable_url(source.url)
    if url is not None:
        title = f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
    details = [f'<span class="source-title">{title}</span>']
    if source.heading:
        details.append(f'<span class="source-heading">{escape(source.heading)}</span>')
    if source_date(source):
        details.append(f'<span class="source-date">{escape(source_date(source))}</span>')
    if source.title and source.title != source.document:
        details.append(f'<span class="source-document">{escape(source.document)}</span>')
    excerpt = ""
    if source.excerpt.strip():
        excerpt = f"<details><summary>Passage</summary><blockquote>{escape(source.excerpt)}</blockquote></details>"
    return f'<li id="{anchor}-{source.n}" value="{source.n}">{" ".join(details)}{excerpt}</li>'


def _list(tag: str, items: Iterable[str]) -> str:
    inner = "".join(f"<li>{item}</li>" for item in items)
    return f"<{tag}>{inner}</{tag}>" if inner else ""
