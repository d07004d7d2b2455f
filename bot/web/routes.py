"""The local chat page's routes: the page at `/`, `POST /api/ask` and `POST /api/feedback`.

A thin adapter: JSON in → `Question` / `Feedback` → the service → JSON (and the rendered answer) out.
Each browser gets a random id in the ``candor_user`` cookie; it is the asker of its questions and the
user of its feedback (a ``"user"`` field in the body takes precedence, for scripts). It identifies a
browser, it does not authenticate anyone: the pipeline's access policy decides what "web" may read.

Every failure becomes a JSON ``{"error": ...}`` with a status that says whose fault it was (400 bad
input, 404 unknown trace, 413 too large, 415 not JSON, 503 database down, 500 anything else, logged
with its traceback), and the server keeps serving.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.web.render import answer_html
from rag.errors import CandorError, QuestionError, StoreError, UnknownTrace
from rag.model.answers import Feedback, Question, Rating, Turn

if TYPE_CHECKING:
    from bot.server import AnswerService

log = logging.getLogger("candor.web")

STATIC = Path(__file__).parent / "static"
USER_COOKIE = "candor_user"
MAX_FEEDBACK_COMMENT_CHARS = 4000
_USER_ID = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
_CONVERSATION_ID = re.compile(r"[A-Za-z0-9._:/@-]{1,200}")
_COOKIE_MAX_AGE = 365 * 24 * 3600

UNEXPECTED = "Something went wrong while answering. It has been logged; please try again."
UNAVAILABLE = "The knowledge base is unavailable right now. Please try again in a moment."
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_ASSETS = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css"}


class BadRequest(Exception):
    """The request itself is wrong; the message says how, for the person who sent it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class _Asset:
    body: bytes
    content_type: str

    def response(self) -> web.Response:
        return web.Response(body=self.body, content_type=self.content_type, charset="utf-8", headers=_PAGE_HEADERS)


def add_routes(app: web.Application, service: AnswerService, *, max_question_chars: int = 4000) -> None:
    """Mount the chat page on `app`: ``/``, ``/web/app.js``, ``/web/style.css``, ``/api/ask``, ``/api/feedback``."""
    chat = WebChat(service, max_question_chars=max_question_chars)
    assets = {name: _Asset((STATIC / name).read_bytes(), kind) for name, kind in _ASSETS.items()}
    app.router.add_get("/", _asset_handler(assets["index.html"]))
    app.router.add_get("/web/app.js", _asset_handler(assets["app.js"]))
    app.router.add_get("/web/style.css", _asset_handler(assets["style.css"]))
    app.router.add_post("/api/ask", chat.ask)
    app.router.add_post("/api/feedback", chat.feedback)


def _asset_handler(asset: _Asset) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        response = asset.response()
        _user(request, {}, response)  # give the browser its id on first visit
        return response

    return handler


class WebChat:
    """The two API handlers, bound to one service."""

    def __init__(self, service: AnswerService, *, max_question_chars: int) -> None:
        if max_question_chars < 1:
            raise ValueError(f"max_question_chars must be at least 1, got {max_question_chars}")
        self.service = service
        self.max_question_chars = max_question_chars

    async def ask(self, request: web.Request) -> web.Response:
        response = web.Response()
        try:
            body = await _json_object(request)
            question = Question(
                text=self._question_text(body),
                platform="web",
                asker=_user(request, body, response),
                conversation=_optional_id(body, "conversation", _CONVERSATION_ID),
                history=_history(body),
            )
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        try:
            answer = await self.service.answer(question)
        except CandorError as exc:
            return _candor_error(exc, "answer")
        except Exception:
            log.exception("unexpected error answering a web question")
            return _error(500, UNEXPECTED)
        return _json({"answer": answer.as_json(), "html": answer_html(answer)}, response)

    async def feedback(self, request: web.Request) -> web.Response:
        response = web.Response()
        try:
            body = await _json_object(request)
            feedback = Feedback(
                trace_id=_required_text(body, "trace_id", max_chars=200),
                rating=_rating(body),
                user=_user(request, body, response),
                platform="web",
                comment=_comment(body),
            )
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        try:
            await self.service.record_feedback(feedback)
        except CandorError as exc:
            return _candor_error(exc, "feedback")
        except Exception:
            log.exception("unexpected error recording web feedback")
            return _error(500, "Something went wrong while saving your feedback. It has been logged.")
        return _json({"ok": True}, response)

    def _question_text(self, body: dict[str, Any]) -> str:
        text = _required_text(body, "question", max_chars=None)
        if len(text) > self.max_question_chars:
            raise BadRequest(
                f"The question is too long ({len(text)} characters; the limit is {self.max_question_chars})."
            )
        return text


async def _json_object(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise BadRequest("Send the request body as JSON (Content-Type: application/json).", status=415)
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest("The request body is too large.", status=413) from None
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def _required_text(body: dict[str, Any], key: str, *, max_chars: int | None) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f'"{key}" is required and must be a non-empty string.')
    if max_chars is not None and len(value) > max_chars:
        raise BadRequest(f'"{key}" is too long (the limit is {max_chars} characters).')
    return value.strip()


def _optional_id(body: dict[str, Any], key: str, pattern: re.Pattern[str]) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BadRequest(f'"{key}" must be a short id (letters, digits and ._:/@-).')
    return value


def _history(body: dict[str, Any]) -> tuple[Turn, ...]:
    turns = body.get("history", [])
    if not isinstance(turns, list):
        raise BadRequest('"history" must be a list of {"text": str, "from_bot": bool}.')
    history: list[Turn] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
            raise BadRequest(f'"history[{i}]" must be an object with a "text" string.')
        from_bot = turn.get("from_bot", False)
        if not isinstance(from_bot, bool):
            raise BadRequest(f'"history[{i}].from_bot" must be true or false.')
        history.append(Turn(text=turn["text"], from_bot=from_bot))
    return tuple(history)


def _rating(body: dict[str, Any]) -> Rating:
    rating = body.get("rating")
    if rating == "up":
        return "up"
    if rating == "down":
        return "down"
    raise BadRequest('"rating" must be "up" or "down".')


def _comment(body: dict[str, Any]) -> str | None:
    comment = body.get("comment")
    if comment is None:
        return None
    if not isinstance(comment, str):
        raise BadRequest('"comment" must be a string.')
    if len(comment) > MAX_FEEDBACK_COMMENT_CHARS:
        raise BadRequest(f'"comment" is too long (the limit is {MAX_FEEDBACK_COMMENT_CHARS} characters).')
    return comment.strip() or None


def _user(request: web.Request, body: dict[str, Any], response: web.StreamResponse) -> str:
    """The browser's id: the body's "user", else the cookie, else a new one set on `response`."""
    named = _optional_id(body, "user", _USER_ID)
    if named is not None:
        return named
    cookie = request.cookies.get(USER_COOKIE)
    if cookie is not None and _USER_ID.fullmatch(cookie):
        return cookie
    minted = "web-" + secrets.token_hex(8)
    response.set_cookie(USER_COOKIE, minted, max_age=_COOKIE_MAX_AGE, httponly=True, samesite="Strict", path="/")
    return minted


def _candor_error(exc: CandorError, action: str) -> web.Response:
    if isinstance(exc, UnknownTrace):
        return _error(404, "That answer is not known here, so the feedback could not be attached to it.")
    if isinstance(exc, QuestionError):
        return _error(400, str(exc))
    if isinstance(exc, StoreError):
        log.warning("%s failed: database unavailable: %s", action, exc)
        return _error(503, UNAVAILABLE)
    log.error("%s failed: %s", action, exc, exc_info=exc)
    return _error(500, f"Candor could not complete the {action} ({type(exc).__name__}). It has been logged.")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _json(payload: dict[str, Any], response: web.Response) -> web.Response:
    """`payload` as the JSON body of `response` (which may already carry a cookie)."""
    response.content_type = "application/json"
    response.text = json.dumps(payload)
    return response
