"""`/dashboard/review`: the review queue, where people label a sample of answers in the browser.

The page is a shell and a script (`static/review.js`, keyboard-driven: one key per label); the data
comes from two JSON routes behind the dashboard's login (`Dashboard.refusal`: the admin's bearer
token or login cookie):

- ``GET /dashboard/review/items?since=&until=&kb=&sample=``: the next sampled answers, each sentence
  with the passages it cites, and the sampled abstentions with what a relaxed re-check found
  (`rag.insights.audit.review`);
- ``POST /dashboard/review/labels`` (JSON): one label, checked and stored at once; the report's
  human-labelled rates include it on the next load. A label from another site is refused (403):
  the cookie is SameSite=Strict, and the request must say it is JSON and same-origin.

A malformed window or label is a 400 with the reason, a database failure a 503; both are logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.web.dashboard_auth import same_origin
from rag import AuditRequest, report_window
from rag.errors import AuditError, CandorError

if TYPE_CHECKING:
    from bot.web.dashboard import ReportService

log = logging.getLogger("candor.dashboard")

PAGE = "/dashboard/review"
ITEMS = "/dashboard/review/items"
LABELS = "/dashboard/review/labels"
SCRIPT = "/dashboard/review.js"
STYLE = "/dashboard/review.css"
DEFAULT_SAMPLE = 50
MAX_SAMPLE = 500
MAX_LABEL_BYTES = 16 * 1024

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

Refusal = Callable[..., web.Response | None]


def add_review_routes(app: web.Application, service: ReportService, refusal: Refusal) -> None:
    review = Review(service, refusal)
    app.router.add_get(PAGE, review.page)
    app.router.add_get(ITEMS, review.items)
    app.router.add_post(LABELS, review.label)
    app.router.add_get(SCRIPT, _asset("review.js", "text/javascript"))
    app.router.add_get(STYLE, _asset("review.css", "text/css"))


class Review:
    def __init__(self, service: ReportService, refusal: Refusal) -> None:
        self.service = service
        self.refusal = refusal

    async def page(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request, back_to=PAGE)
        if refused is not None:
            return refused
        return web.Response(
            text=PAGE_HTML,
            content_type="text/html",
            charset="utf-8",
            headers={**_HEADERS, "Content-Security-Policy": CSP},
        )

    async def items(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request, back_to=PAGE)
        if refused is not None:
            return refused
        try:
            request_ = _request(request.query)
        except ValueError as exc:
            return _json(400, {"error": str(exc)})
        try:
            queue = await self.service.review_queue(request_)
        except CandorError as exc:
            log.warning("review queue: could not read the sample: %s", exc)
            return _json(503, {"error": "The queue could not be read right now; try again in a moment."})
        return _json(200, queue)

    async def label(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request, back_to=PAGE)
        if refused is not None:
            return refused
        if not same_origin(request.headers, request.host):
            return _json(403, {"error": "Refused: label from this server's own review page."})
        if request.content_type != "application/json":
            return _json(415, {"error": "Send the label as JSON."})
        try:
            raw = await request.content.read(MAX_LABEL_BYTES + 1)
            if len(raw) > MAX_LABEL_BYTES:
                return _json(413, {"error": "That label is too large."})
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _json(400, {"error": "The body is not JSON."})
        if not isinstance(body, dict):
            return _json(400, {"error": "The body must be a JSON object."})
        try:
            stored = await self.service.store_review_label(body)
        except AuditError as exc:
            return _json(400, {"error": str(exc)})
        except CandorError as exc:
            log.error("review queue: could not store a label: %s", exc)
            return _json(503, {"error": "The label could not be stored right now; it was not lost on the page: retry."})
        return _json(200, stored)


def _request(query: Mapping[str, str]) -> AuditRequest:
    window = report_window(query.get("since") or "30d", query.get("until") or None, kb=query.get("kb") or None)
    written = query.get("sample") or str(DEFAULT_SAMPLE)
    if not written.isdigit() or not 1 <= int(written) <= MAX_SAMPLE:
        raise ValueError(f"sample must be a number from 1 to {MAX_SAMPLE}")
    return AuditRequest(
        window.since, window.until, sample=int(written), knowledge_base=window.knowledge_base, seed="review-queue"
    )


def _asset(name: str, content_type: str) -> Callable[[web.Request], Any]:
    body = resources.files("bot.web").joinpath("static", name).read_text(encoding="utf-8")

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type=content_type, charset="utf-8", headers=_HEADERS)

    return handler


def _json(status: int, payload: Mapping[str, Any]) -> web.Response:
    return web.json_response(payload, status=status, headers=_HEADERS, dumps=lambda v: json.dumps(v, default=str))


PAGE_HTML = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width"><title>Candor: review answers</title>
<link rel="stylesheet" href="{STYLE}"><script src="{SCRIPT}" defer></script></head>
<body><header><h1>Review answers</h1>
<label>Your name <input id="labeller" autocomplete="name" placeholder="who labels"></label>
<span id="progress" aria-live="polite"></span>
<a href="/dashboard">Report</a></header>
<p class="keys">Keys: <kbd>s</kbd> supported · <kbd>u</kbd> unsupported · <kbd>p</kbd> partly ·
for an abstention <kbd>c</kbd> correct · <kbd>w</kbd> the documents did answer this ·
<kbd>j</kbd>/<kbd>k</kbd> next/previous sentence · <kbd>n</kbd>/<kbd>b</kbd> next/previous item</p>
<div id="status" role="status"></div>
<main id="queue" tabindex="-1"><p>Loading the sample…</p></main>
</body></html>
"""
