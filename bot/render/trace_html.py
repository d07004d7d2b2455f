"""One trace as a page (`/dashboard/traces/<id>`, linked from hand-offs): what was asked, what Candor
delivered and why, gate by gate, and what happened next (votes, hand-offs, curated answers).

Pure: the trace's JSON (`Candor.trace`) in, HTML out. Everything shown is escaped; a link is made only
from a plain http(s) URL. The page holds the question and the passages the answer cited, restricted
documents included: it is for the dashboard's admin only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from bot.render.report_html import ROUTES, STYLE

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
DETAILS_CHARS = 2000


def render_trace(trace: Mapping[str, Any]) -> str:
    """The whole page of one trace."""
    answer = trace.get("answer") or {}
    sections = [
        f"<h1>Trace {escape(str(trace['id']))}</h1>",
        f'<p class="window">{escape(_when(trace))} · {escape(str(trace.get("platform") or "?"))} · '
        f"<b>{escape(ROUTES.get(str(trace.get('route')), str(trace.get('route'))))}</b>"
        f"{' · ' + escape(str(trace.get('total_ms'))) + ' ms' if trace.get('total_ms') is not None else ''}</p>",
        _question(trace),
        _answer(answer, trace.get("answer_text") or ""),
        _sources(answer.get("sources") or []),
        _gates(trace.get("gates") or []),
        _dropped(trace.get("dropped") or []),
        _feedback(trace.get("feedback") or []),
        _handoffs(trace.get("handoffs") or []),
        _curated(trace.get("curated_answers") or []),
        '<p><a href="/dashboard">Back to the report</a></p>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width">'
        f"<title>Candor trace {escape(str(trace['id']))}</title><style>{STYLE}</style></head>\n<body>"
        + "\n".join(section for section in sections if section)
        + "</body></html>\n"
    )


def _when(trace: Mapping[str, Any]) -> str:
    return str(trace.get("created_at") or "")[:19].replace("T", " ") + " UTC"


def _question(trace: Mapping[str, Any]) -> str:
    rewritten = trace.get("rewritten_question")
    read_as = f"<p>Read as: {escape(str(rewritten))}</p>" if rewritten and rewritten != trace.get("question") else ""
    return f"<h2>Question</h2><blockquote>{escape(str(trace.get('question') or ''))}</blockquote>{read_as}"


def _answer(answer: Mapping[str, Any], text: str) -> str:
    sentences = answer.get("sentences") or []
    if not sentences:
        return f"<h2>Answer</h2><blockquote>{escape(text)}</blockquote>"
    items = "".join(
        f"<li>{escape(str(s.get('text') or ''))} "
        f"<small>[{', '.join(str(n) for n in s.get('citations') or [])}]</small></li>"
        for s in sentences
    )
    unanswered = "".join(f"<li>{escape(str(p))}</li>" for p in answer.get("unanswered_parts") or [])
    conflicts = "".join(
        f"<li>{escape(' / '.join(str(v) for v in c.get('values') or []))} "
        f"<small>(sources {', '.join(str(n) for n in c.get('sources') or [])}; preferred "
        f"{escape(str(c.get('preferred')))})</small></li>"
        for c in answer.get("conflicts") or []
    )
    return (
        f"<h2>Answer</h2><ol>{items}</ol>"
        + (f"<p>Unanswered parts:</p><ul>{unanswered}</ul>" if unanswered else "")
        + (f"<p>Sources disagree:</p><ul>{conflicts}</ul>" if conflicts else "")
    )


def _sources(sources: Sequence[Mapping[str, Any]]) -> str:
    if not sources:
        return ""
    rows = []
    for s in sources:
        title = escape(str(s.get("title") or s.get("document") or ""))
        url = s.get("url")
        if isinstance(url, str) and url.lower().startswith(("http://", "https://")):
            title = f'<a href="{escape(url, quote=True)}" rel="noopener noreferrer">{title}</a>'
        by = f" · answered by {escape(str(s['answered_by']))}" if s.get("answered_by") else ""
        dated = f" · effective {escape(str(s['effective_date']))}" if s.get("effective_date") else ""
        rows.append(
            f'<li value="{int(s.get("n") or 0)}"><b>{title}</b>{by}{dated} · {escape(str(s.get("document") or ""))}'
            f"<blockquote>{escape(str(s.get('excerpt') or ''))}</blockquote></li>"
        )
    return f"<h2>Sources</h2><ol>{''.join(rows)}</ol>"


def _gates(gates: Sequence[Mapping[str, Any]]) -> str:
    if not gates:
        return ""
    rows = "".join(
        f"<tr><td class=num>{int(g.get('attempt') or 0)}</td><th scope=row>{escape(str(g.get('gate')))}</th>"
        f"<td>{'passed' if g.get('passed') else '<b>failed</b>'}</td><td class=num>{_score(g.get('score'))}</td>"
        f"<td><details><summary>details</summary><pre>{escape(_json(g.get('details')))}</pre></details></td></tr>"
        for g in gates
    )
    head = "<tr><th>attempt</th><th>gate</th><th>outcome</th><th>score</th><th></th></tr>"
    return f"<h2>Gates</h2><table><thead>{head}</thead><tbody>{rows}</tbody></table>"


def _dropped(dropped: Sequence[Mapping[str, Any]]) -> str:
    if not dropped:
        return ""
    items = "".join(
        f"<li>{escape(str(d.get('text') or ''))} <small>({escape(', '.join(d.get('reasons') or []))})</small></li>"
        for d in dropped
    )
    return f"<h2>Dropped by the critic</h2><ul>{items}</ul>"


def _feedback(votes: Sequence[Mapping[str, Any]]) -> str:
    if not votes:
        return ""
    items = "".join(
        f"<li>{'👍' if int(v.get('rating') or 0) > 0 else '👎'} {escape(str(v.get('platform') or ''))}"
        f"{': ' + escape(str(v['comment'])) if v.get('comment') else ''}</li>"
        for v in votes
    )
    return f"<h2>Votes</h2><ul>{items}</ul>"


def _handoffs(handoffs: Sequence[Mapping[str, Any]]) -> str:
    if not handoffs:
        return ""
    items = []
    for h in handoffs:
        reply = (
            f"<blockquote>{escape(str(h['reply_text']))}</blockquote>"
            f"<small>replied by {escape(str(h.get('replied_by_name') or h.get('replied_by') or ''))}</small>"
            if h.get("reply_text")
            else "<small>waiting for a person</small>"
        )
        items.append(f"<li>{escape(str(h.get('reason')))} · {escape(str(h.get('status')))}{reply}</li>")
    return f"<h2>Handed to a person</h2><ul>{''.join(items)}</ul>"


def _curated(curated: Sequence[Mapping[str, Any]]) -> str:
    if not curated:
        return ""
    items = "".join(
        f"<li>#{int(c['id'])} by {escape(str(c.get('author_name') or ''))}: {escape(str(c.get('question') or ''))}"
        f" {'' if c.get('searchable') else '<small>(expired)</small>'}</li>"
        for c in curated
    )
    return (
        f'<h2>Curated answers from it</h2><ul>{items}</ul><p><a href="/dashboard/answers">All curated answers</a></p>'
    )


def _score(value: Any) -> str:
    return f"{float(value):.3f}" if isinstance(value, int | float) else ""


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return text if len(text) <= DETAILS_CHARS else text[:DETAILS_CHARS] + "…"
