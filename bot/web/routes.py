"""The local chat page's routes: the page at `/`, `POST /api/ask` and `POST /api/feedback`.

A thin adapter: JSON in → `Question` / `Feedback` → the service → JSON (and the rendered answer) out.
Who asks is the login's to say (`bot.web.identity`), never the body's: an anonymous browser (its
cookie id) reads public documents only (no access rule grants it groups; knowledge-base limits
apply); a person an authenticating proxy vouched for asks as themselves, in a conversation only
they read (``audience="direct"``), so their ``platform: web`` access rules count.

Every failure becomes a JSON ``{"error": ...}`` with a status that says whose fault it was (400 bad
input, 401 not signed in, 404 unknown trace, 413 too large, 415 not JSON, 429 too many questions,
503 database down, 500 anything else, logged with its traceback), and the server keeps serving.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.web.identity import ChatLogin, NotSignedIn, WebUser
from bot.web.render import answer_html
from rag.errors import CandorError, QuestionError, RateLimited, StoreError, UnknownTrace
from rag.model.answers import Feedback, Question, Rating, Turn

if TYPE_CHECKING:
    from bot.server import AnswerService

log = logging.getLogger("candor.web")

STATIC = Path(__file__).parent / "static"
MAX_FEEDBACK_COMMENT_CHARS = 4000
MAX_API_BODY_BYTES = 64 * 1024
"""The largest body `/api/*` reads, whatever the server allows other routes (Slack, Teams: 1 MB)."""
MAX_HISTORY_TURNS = 20
MAX_TURN_CHARS = 4000
_CONVERSATION_ID = re.compile(r"[A-Za-z0-9._:/@-]{1,200}")

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


def add_routes(
    app: web.Application, service: AnswerService, login: ChatLogin, *, max_question_chars: int = 4000
) -> None:
    """Mount the chat page on `app`: ``/``, ``/web/app.js``, ``/web/style.css``, ``/api/ask``, ``/api/feedback``."""
    chat = WebChat(service, login, max_question_chars=max_question_chars)
    assets = {name: _Asset((STATIC / name).read_bytes(), kind) for name, kind in _ASSETS.items()}
    app.router.add_get("/", _asset_handler(assets["index.html"], login))
    app.router.add_get("/web/app.js", _asset_handler(assets["app.js"], login))
    app.router.add_get("/web/style.css", _asset_handler(assets["style.css"], login))
    app.router.add_post("/api/ask", chat.ask)
    app.router.add_post("/api/feedback", chat.feedback)


def _asset_handler(asset: _Asset, login: ChatLogin) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        response = asset.response()
        try:
            login.identify(request, response)  # and give an anonymous browser its id on first visit
        except NotSignedIn as exc:
            return web.Response(status=401, text=str(exc), headers=_PAGE_HEADERS)
        return response

    return handler


class WebChat:
    """The two API handlers, bound to one service."""

    def __init__(self, service: AnswerService, login: ChatLogin, *, max_question_chars: int) -> None:
        if max_question_chars < 1:
            raise ValueError(f"max_question_chars must be at least 1, got {max_question_chars}")
        self.service = service
        self.login = login
        self.max_question_chars = max_question_chars

    async def ask(self, request: web.Request) -> web.Response:
        response = web.Response()
        try:
            user = self._user(request, response)
            body = await _json_object(request)
            question = Question(
                text=self._question_text(body),
                platform="web",
                asker=user.id,
                conversation=_optional_id(body, "conversation", _CONVERSATION_ID),
                history=_history(body),
                audience="direct",
                private_reply=True,
                anonymous=not user.authenticated,
                client_address=None if user.authenticated else request.remote,
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
        return _json({"answer": answer.reader_json(), "html": answer_html(answer)}, response)

    async def feedback(self, request: web.Request) -> web.Response:
        response = web.Response()
        try:
            user = self._user(request, response)
            body = await _json_object(request)
            feedback = Feedback(
                trace_id=_required_text(body, "trace_id", max_chars=200),
                rating=_rating(body),
                user=user.id,
                platform="web",
                comment=_comment(body),
                askers_only=True,
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

    def _user(self, request: web.Request, response: web.StreamResponse) -> WebUser:
        try:
            return self.login.identify(request, response)
        except NotSignedIn as exc:
            raise BadRequest(str(exc), status=401) from None

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
    raw = await _read_limited(request, MAX_API_BODY_BYTES)
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    if "user" in body:
        raise BadRequest('"user" is not accepted: who asks is who signed in (docs/security.md).')
    return body


async def _read_limited(request: web.Request, limit: int) -> bytes:
    """The body, refused (413) past `limit` bytes before more than that is read."""
    too_large = BadRequest(f"The request body is too large (the limit is {limit // 1024} KB).", status=413)
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := await request.content.read(16 * 1024):
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
    except web.HTTPRequestEntityTooLarge:
        raise too_large from None
    return b"".join(chunks)


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
    if len(turns) > MAX_HISTORY_TURNS:
        raise BadRequest(f'"history" has {len(turns)} turns; send at most the latest {MAX_HISTORY_TURNS}.')
    history: list[Turn] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
            raise BadRequest(f'"history[{i}]" must be an object with a "text" string.')
        if len(turn["text"]) > MAX_TURN_CHARS:
            raise BadRequest(f'"history[{i}].text" is too long (the limit is {MAX_TURN_CHARS} characters).')
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


def _candor_error(exc: CandorError, action: str) -> web.Response:
    if isinstance(exc, UnknownTrace):
        return _error(404, "That answer is not known here, so the feedback could not be attached to it.")
    if isinstance(exc, RateLimited):
        response = _error(429, str(exc))
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
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
