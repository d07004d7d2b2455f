"""The dashboard's other pages, behind its login (`Dashboard.refusal`):

- ``GET /dashboard/traces/<id>``: one trace, gate by gate, with its votes, hand-offs and curated
  answers (`bot.render.trace_html`); the triage posts link here when CANDOR_PUBLIC_URL is set.
- ``GET /dashboard/answers``: the curated answers (``?all=1``: expired ones too), each with a form to
  edit its question and answer, expire it or remove it; ``POST /dashboard/answers/<id>`` does it
  (refused from another site, like the login) and returns to the list saying what was done.

Server-rendered HTML without scripts; every value escaped. A bad id is a 404, a refused edit (an
empty answer) the list again with the reason, a database failure a 503; all logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from aiohttp import web

from bot.render.report_html import STYLE
from bot.render.trace_html import render_trace
from bot.web.dashboard_auth import same_origin
from rag.errors import CandorError, ConfigError, NotFound
from rag.model.loop import CuratedAnswer

if TYPE_CHECKING:
    from bot.web.dashboard import ReportService

log = logging.getLogger("candor.dashboard")

TRACES = "/dashboard/traces/{trace_id}"
ANSWERS = "/dashboard/answers"
ANSWER = "/dashboard/answers/{curated_id}"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
ANSWERS_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DONE = {"edited": "Saved: it answers with the new text from now on.", "expired": "Expired.", "removed": "Removed."}

Refusal = Callable[..., web.Response | None]


def trace_path(trace_id: str) -> str:
    return TRACES.format(trace_id=trace_id)


def add_page_routes(app: web.Application, service: ReportService, refusal: Refusal) -> None:
    pages = Pages(service, refusal)
    app.router.add_get(TRACES, pages.trace)
    app.router.add_get(ANSWERS, pages.answers)
    app.router.add_post(ANSWER, pages.change)


class Pages:
    def __init__(self, service: ReportService, refusal: Refusal) -> None:
        self.service = service
        self.refusal = refusal

    async def trace(self, request: web.Request) -> web.StreamResponse:
        trace_id = request.match_info["trace_id"]
        refused = self.refusal(request, back_to=trace_path(trace_id) if _UUID.match(trace_id) else None)
        if refused is not None:
            return refused
        if not _UUID.match(trace_id):
            return _text(404, "No such trace.")
        try:
            found = await self.service.trace(trace_id)
        except CandorError as exc:
            log.warning("dashboard: could not read trace %s: %s", trace_id, exc)
            return _text(503, "The trace could not be read right now; try again in a moment.")
        if found is None:
            return _text(404, "No such trace.")
        return _html(render_trace(found), "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")

    async def answers(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request, back_to=ANSWERS)
        if refused is not None:
            return refused
        every = request.query.get("all") == "1"
        try:
            found = await self.service.loop.curated.find(include_expired=every)
        except CandorError as exc:
            log.warning("dashboard: could not list curated answers: %s", exc)
            return _text(503, "The curated answers could not be read right now; try again in a moment.")
        note = DONE.get(request.query.get("done", ""), "")
        return _html(answers_page(found, every=every, note=note, error=request.query.get("error")), ANSWERS_CSP)

    async def change(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request, back_to=ANSWERS)
        if refused is not None:
            return refused
        if not same_origin(request.headers, request.host):
            return _text(403, "Refused: change curated answers from this server's own page.")
        written = request.match_info["curated_id"]
        if not written.isdigit():
            return _text(404, "No such curated answer.")
        form = await request.post()
        action, curated_id = str(form.get("action") or ""), int(written)
        curated = self.service.loop.curated
        try:
            if action == "edit":
                await curated.edit(
                    curated_id, question=str(form.get("question") or ""), answer=str(form.get("answer") or "")
                )
                done = "edited"
            elif action == "expire":
                await curated.expire(curated_id)
                done = "expired"
            elif action == "remove":
                await curated.remove(curated_id)
                done = "removed"
            else:
                return _text(400, "Unknown action: edit, expire or remove.")
        except NotFound:
            return _text(404, "No such curated answer.")
        except ConfigError as exc:
            return _see(ANSWERS + "?" + urlencode({"error": f"#{curated_id} was not saved: {exc}"}))
        except CandorError as exc:
            log.error("dashboard: could not change curated answer %s: %s", curated_id, exc)
            return _text(503, "The change could not be stored right now; try again in a moment.")
        log.info("dashboard: curated answer %s %s", curated_id, done)
        return _see(ANSWERS + "?" + urlencode({"done": done}))


def answers_page(curated: Sequence[CuratedAnswer], *, every: bool, note: str, error: str | None) -> str:
    now = datetime.now(UTC)
    rows = "".join(_answer_form(c, now) for c in curated) or "<p>No curated answers yet.</p>"
    switch = (
        f'<a href="{ANSWERS}">Live ones only</a>' if every else f'<a href="{ANSWERS}?all=1">Show expired ones too</a>'
    )
    flash = f'<p class="note" role="status">{escape(note)}</p>' if note else ""
    problem = f'<p class="note" role="alert">{escape(error[:300])}</p>' if error else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width"><title>Candor: curated answers</title>'
        f"<style>{STYLE}textarea,input[type=text]{{width:100%;font:inherit}}</style></head>\n<body>"
        f'<h1>Curated answers</h1><p class="window">Experts\' answers kept as documents: searched, gated and cited '
        f'like any other. {switch} · <a href="/dashboard">Report</a></p>{flash}{problem}{rows}</body></html>\n'
    )


def _answer_form(c: CuratedAnswer, now: datetime) -> str:
    state = "expired" if c.expired(now) else "live"
    expiry = f", expires {c.expires_at.date().isoformat()}" if c.expires_at and state == "live" else ""
    groups = f" · readers: {escape(', '.join(c.access_groups))}" if c.access_groups else " · readers: everyone"
    source = f' · <a href="{trace_path(c.trace_id)}">from this question</a>' if c.trace_id else ""
    action = escape(ANSWER.format(curated_id=c.id), quote=True)
    buttons = (
        '<button name="action" value="edit">Save</button> <button name="action" value="expire">Expire now</button> '
        if state == "live"
        else ""
    ) + '<button name="action" value="remove">Remove</button>'
    return (
        f'<section id="answer-{c.id}"><h2>#{c.id} {state} · {escape(c.knowledge_base)}</h2>'
        f'<p class="window">by {escape(c.author_name)}, {c.updated_at.date().isoformat()}{expiry}{groups}{source}</p>'
        f'<form method="post" action="{action}">'
        f'<label>Question <input type="text" name="question" value="{escape(c.question, quote=True)}" required></label>'
        f'<label>Answer <textarea name="answer" rows="4" required>{escape(c.answer)}</textarea></label>'
        f"{buttons}</form></section>"
    )


def _html(page: str, csp: str) -> web.Response:
    headers = {**_HEADERS, "Content-Security-Policy": csp}
    return web.Response(text=page, content_type="text/html", charset="utf-8", headers=headers)


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers=_HEADERS)


def _see(location: str) -> web.Response:
    return web.Response(status=303, headers={**_HEADERS, "Location": location})
