"""The chat page and its API over real HTTP: `build_app` on a real socket (127.0.0.1), `aiohttp.ClientSession`.

The `answer_service` fixture is a small in-test `AnswerService` (a fixed, realistic answer; feedback
recorded in a list); it can be swapped for the real pipeline. Failures are injected by wrapping it in
`FailsOnce`, which raises a given error on its first call and delegates afterwards, so each test also
shows that the server keeps serving after the error.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import re
import signal
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date

import aiohttp
import pytest
from aiohttp import ClientSession, CookieJar
from aiohttp.test_utils import TestServer, unused_port

from bot.server import AnswerService, build_app, serve
from bot.web.identity import AnonymousVisitors, ChatLogin, ProxyLogin
from rag.errors import QuestionError, StoreError, UnknownTrace
from rag.model.answers import Answer, AnswerSentence, Conflict, Feedback, GateOutcome, Question, Source

QUESTION = "How many days of annual leave do I get?"


class FakeAnswerService:
    """Answers every question with the same two-source answer (fresh trace id) and records everything."""

    def __init__(self) -> None:
        self.questions: list[Question] = []
        self.feedback: list[Feedback] = []
        self.traces: set[str] = set()

    async def answer(self, question: Question) -> Answer:
        self.questions.append(question)
        trace = str(uuid.uuid4())
        self.traces.add(trace)
        return Answer(
            question=question.text,
            route="answered",
            text="Full-time staff get 24 days of annual leave a year. Book leave in the HR portal.",
            sentences=(
                AnswerSentence("Full-time staff get 24 days of annual leave a year.", (1,)),
                AnswerSentence("Book leave in the HR portal.", (2,)),
            ),
            sources=(
                Source(
                    1,
                    "handbook/leave.md",
                    "Leave policy",
                    "Annual leave",
                    "Full-time staff get 24 days.",
                    0.82,
                    url="https://intranet.example.com/leave",
                    effective_date=date(2026, 1, 1),
                ),
                Source(
                    2,
                    "handbook/old-leave.md",
                    "Leave policy (2023)",
                    "Booking",
                    "Staff get 20 days. Book leave in the HR portal.",
                    0.64,
                    effective_date=date(2023, 1, 1),
                ),
            ),
            conflicts=(
                Conflict("Annual leave days differ.", ("24 days", "20 days"), (1, 2), 1, "newer effective date"),
            ),
            trace_id=trace,
            gates=(
                GateOutcome("retrieval_score", True, 0.71, attempt=1, details={"best_cosine": 0.71}),
                GateOutcome("faithfulness", True, 0.9, attempt=1, details={"judge_error": "upstream said: key sk-…"}),
            ),
        )

    async def record_feedback(self, feedback: Feedback) -> None:
        if feedback.trace_id not in self.traces:
            raise UnknownTrace(f"no trace {feedback.trace_id}")
        self.feedback.append(feedback)

    async def health(self) -> dict[str, object]:
        return {"database": "ok"}


class FailsOnce:
    """Raises `error` on the first call of any method, then behaves like `inner`."""

    def __init__(self, inner: AnswerService, error: Exception) -> None:
        self.inner = inner
        self.error: Exception | None = error

    def _fail(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    async def answer(self, question: Question) -> Answer:
        self._fail()
        return await self.inner.answer(question)

    async def record_feedback(self, feedback: Feedback) -> None:
        self._fail()
        await self.inner.record_feedback(feedback)

    async def health(self) -> dict[str, object]:
        self._fail()
        return await self.inner.health()


@pytest.fixture
def answer_service() -> FakeAnswerService:
    return FakeAnswerService()


@asynccontextmanager
async def started(service: AnswerService, login: ChatLogin | None = None) -> AsyncIterator[ClientSession]:
    """`build_app(service)` with the chat page (anonymous unless `login` says otherwise) on a free
    port of 127.0.0.1, and a client session (with cookies) for it."""
    chat = login or AnonymousVisitors()
    async with (
        TestServer(build_app(service, chat=chat, max_question_chars=200), host="127.0.0.1") as server,
        ClientSession(base_url=server.make_url("/"), cookie_jar=CookieJar(unsafe=True)) as session,
    ):
        yield session


@pytest.fixture
async def http(answer_service: FakeAnswerService) -> AsyncIterator[ClientSession]:
    async with started(answer_service) as session:
        yield session


async def ask(http: ClientSession, question: str = QUESTION, **extra: object) -> aiohttp.ClientResponse:
    return await http.post("/api/ask", json={"question": question, **extra})


async def test_page_loads_self_contained(http: ClientSession) -> None:
    response = await http.get("/")
    page = await response.text()

    assert response.status == 200 and response.content_type == "text/html"
    assert '<form id="ask-form"' in page and '<textarea id="question"' in page
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assets = re.findall(r'<(?:script|link)[^>]*?(?:src|href)="([^"]+)"', page)
    assert sorted(assets) == ["web/app.js", "web/style.css"]
    for asset in assets:
        loaded = await http.get("/" + asset)
        assert loaded.status == 200
        assert not re.search(r"https?:|@import|url\(", await loaded.text(), re.IGNORECASE)


async def test_ask_returns_answer_json_and_html(http: ClientSession, answer_service: FakeAnswerService) -> None:
    response = await ask(http)
    body = await response.json()

    assert response.status == 200
    assert body["answer"]["route"] == "answered" and body["answer"]["question"] == QUESTION
    # what the asker may see: no withheld sentences, model calls, costs or gate details
    assert not {"dropped", "model_calls", "cost", "timings_ms"} & set(body["answer"])
    assert body["answer"]["gates"] == [
        {"gate": "retrieval_score", "passed": True, "attempt": 1},
        {"gate": "faithfulness", "passed": True, "attempt": 1},
    ]
    assert [s["n"] for s in body["answer"]["sources"]] == [1, 2]
    trace = body["answer"]["trace_id"]
    assert f'<sup><a href="#src-{trace}-1">[1]</a></sup>' in body["html"]
    assert '<aside class="conflict"' in body["html"]
    (question,) = answer_service.questions
    assert question.platform == "web" and question.history == ()
    assert question.asker is not None and question.asker.startswith("web-")
    # anonymous: no access rule grants a browser's cookie id any group
    assert question.anonymous and question.scope is None


async def test_follow_up_sends_history_and_keeps_the_browser_id(
    http: ClientSession, answer_service: FakeAnswerService
) -> None:
    first = await (await ask(http, conversation="web/abc123")).json()
    history = [{"text": QUESTION, "from_bot": False}, {"text": first["answer"]["text"], "from_bot": True}]
    response = await ask(http, "And for part-time staff?", history=history, conversation="web/abc123")

    assert response.status == 200
    earlier, follow_up = answer_service.questions
    assert follow_up.text == "And for part-time staff?"
    assert [(t.text, t.from_bot) for t in follow_up.history] == [(QUESTION, False), (first["answer"]["text"], True)]
    assert follow_up.conversation == earlier.conversation == "web/abc123"
    assert follow_up.asker == earlier.asker


async def test_the_body_cannot_name_the_asker(http: ClientSession, answer_service: FakeAnswerService) -> None:
    response = await ask(http, user="U0ADMIN")
    assert response.status == 400
    assert '"user" is not accepted: who asks is who signed in' in (await response.json())["error"]
    feedback = await http.post("/api/feedback", json={"trace_id": "t", "rating": "up", "user": "U0ADMIN"})
    assert feedback.status == 400
    assert answer_service.questions == [] and answer_service.feedback == []


async def test_a_forged_cookie_is_replaced_by_an_anonymous_id(
    http: ClientSession, answer_service: FakeAnswerService
) -> None:
    http.cookie_jar.update_cookies({"candor_user": "U0ADMIN"})
    assert (await ask(http)).status == 200
    (question,) = answer_service.questions
    assert question.asker != "U0ADMIN" and question.asker is not None and question.asker.startswith("web-")
    assert question.anonymous


def proxy_login(trusted: str) -> ProxyLogin:
    return ProxyLogin("X-Forwarded-Email", [ipaddress.ip_network(trusted)])


async def test_behind_the_sign_in_proxy_the_asker_is_who_it_vouched_for(answer_service: FakeAnswerService) -> None:
    async with started(answer_service, proxy_login("127.0.0.1/32")) as http:
        signed_in = {"X-Forwarded-Email": "alice@example.com"}
        assert (await http.get("/", headers=signed_in)).status == 200
        response = await http.post("/api/ask", json={"question": QUESTION}, headers=signed_in)
        assert response.status == 200
        trace = (await response.json())["answer"]["trace_id"]
        voted = await http.post("/api/feedback", json={"trace_id": trace, "rating": "up"}, headers=signed_in)
        assert voted.status == 200

        anonymous = await http.post("/api/ask", json={"question": QUESTION})
        assert anonymous.status == 401 and "Sign in first" in (await anonymous.json())["error"]
        assert (await http.get("/")).status == 401
        unusable = await http.post("/api/ask", json={"question": QUESTION}, headers={"X-Forwarded-Email": "a b<c>"})
        assert unusable.status == 401

    (question,) = answer_service.questions
    assert question.asker == "alice@example.com" and question.scope is None  # the access policy decides
    assert not question.anonymous
    assert question.audience == "direct" and question.private_reply
    assert answer_service.feedback[0].user == "alice@example.com"


async def test_the_proxy_header_from_an_address_that_is_not_the_proxy_is_refused(
    answer_service: FakeAnswerService, caplog: pytest.LogCaptureFixture
) -> None:
    async with started(answer_service, proxy_login("10.0.0.0/8")) as http:
        forged = {"X-Forwarded-Email": "U0ADMIN"}
        response = await http.post("/api/ask", json={"question": QUESTION}, headers=forged)
        assert response.status == 401 and "Sign in first" in (await response.json())["error"]
        assert (await http.get("/", headers=forged)).status == 401
    assert answer_service.questions == []
    assert any("not a trusted proxy" in r.getMessage() for r in caplog.records)


async def test_without_a_login_there_is_no_chat_page(answer_service: FakeAnswerService) -> None:
    async with (
        TestServer(build_app(answer_service), host="127.0.0.1") as server,
        ClientSession(base_url=server.make_url("/")) as http,
    ):
        assert (await http.get("/")).status == 404
        assert (await http.post("/api/ask", json={"question": QUESTION})).status == 404
        assert (await http.get("/healthz")).status == 200
    assert answer_service.questions == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"question": ""}, '"question" is required'),
        ({"question": "   "}, '"question" is required'),
        ({"history": []}, '"question" is required'),
        ({"question": 42}, '"question" is required'),
        ({"question": "x" * 201}, "too long (201 characters; the limit is 200)"),
        ({"question": "ok", "history": "nope"}, '"history" must be a list'),
        ({"question": "ok", "history": [{"text": "hi", "from_bot": "yes"}]}, '"history[0].from_bot"'),
        ({"question": "ok", "conversation": "has spaces"}, '"conversation" must be a short id'),
        ({"question": "ok", "history": [{"text": "hi"}] * 21}, '"history" has 21 turns; send at most the latest 20'),
        ({"question": "ok", "history": [{"text": "y" * 4001}]}, '"history[0].text" is too long'),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
async def test_bad_questions_get_400_with_a_message(
    http: ClientSession, answer_service: FakeAnswerService, body: object, message: str
) -> None:
    response = await http.post("/api/ask", json=body)
    assert response.status == 400
    assert message in (await response.json())["error"]
    assert answer_service.questions == []


async def test_invalid_json_and_wrong_content_type(http: ClientSession) -> None:
    invalid = await http.post("/api/ask", data=b'{"question": ', headers={"Content-Type": "application/json"})
    assert invalid.status == 400 and "not valid JSON" in (await invalid.json())["error"]
    form = await http.post("/api/ask", data={"question": QUESTION})
    assert form.status == 415 and "JSON" in (await form.json())["error"]


async def test_body_over_64_kb_gets_413(http: ClientSession, answer_service: FakeAnswerService) -> None:
    payload = json.dumps({"question": "x", "history": [{"text": "y" * 70_000}]}).encode()
    response = await http.post("/api/ask", data=payload, headers={"Content-Type": "application/json"})
    assert response.status == 413 and "too large" in (await response.json())["error"]
    assert answer_service.questions == []
    assert (await ask(http)).status == 200


async def test_api_bodies_stay_small_when_the_server_takes_large_platform_bodies(
    answer_service: FakeAnswerService,
) -> None:
    """With Slack or Teams mounted the server takes 1 MB bodies; `/api/*` still reads 64 KB at most,
    with or without a Content-Length (a chunked body is cut off as it arrives)."""
    app = build_app(answer_service, chat=AnonymousVisitors(), max_body_bytes=1024 * 1024)
    async with TestServer(app, host="127.0.0.1") as server, ClientSession(base_url=server.make_url("/")) as http:
        payload = json.dumps({"question": "x", "history": [{"text": "y" * 3000}] * 30}).encode()
        assert 64 * 1024 < len(payload) < 1024 * 1024
        sized = await http.post("/api/ask", data=payload, headers={"Content-Type": "application/json"})
        assert sized.status == 413 and "the limit is 64 KB" in (await sized.json())["error"]

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(payload), 8192):
                yield payload[start : start + 8192]

        chunked = await http.post("/api/ask", data=chunks(), headers={"Content-Type": "application/json"})
        assert chunked.status == 413
        assert (await http.post("/api/ask", json={"question": QUESTION})).status == 200
    assert len(answer_service.questions) == 1


async def test_store_error_is_503_then_the_next_request_works(answer_service: FakeAnswerService) -> None:
    async with started(FailsOnce(answer_service, StoreError("connection refused on port 5432"))) as http:
        failed = await ask(http)
        error = (await failed.json())["error"]
        assert failed.status == 503 and "unavailable" in error and "5432" not in error
        assert (await ask(http)).status == 200


async def test_question_error_is_400_with_its_message(answer_service: FakeAnswerService) -> None:
    async with started(FailsOnce(answer_service, QuestionError("nothing left after removing markup"))) as http:
        failed = await ask(http)
        assert failed.status == 400
        assert (await failed.json())["error"] == "nothing left after removing markup"


async def test_unexpected_error_is_500_logged_then_the_next_request_works(
    answer_service: FakeAnswerService, caplog: pytest.LogCaptureFixture
) -> None:
    async with started(FailsOnce(answer_service, RuntimeError("boom"))) as http:
        with caplog.at_level(logging.ERROR, logger="candor.web"):
            failed = await ask(http)
        assert failed.status == 500
        assert (await failed.json())["error"].startswith("Something went wrong")
        (record,) = [r for r in caplog.records if r.name == "candor.web"]
        assert record.exc_info is not None and "boom" in str(record.exc_info[1])
        assert (await ask(http)).status == 200


async def test_feedback_up_and_down_reach_the_service(http: ClientSession, answer_service: FakeAnswerService) -> None:
    trace = (await (await ask(http)).json())["answer"]["trace_id"]
    up = await http.post("/api/feedback", json={"trace_id": trace, "rating": "up"})
    down = await http.post("/api/feedback", json={"trace_id": trace, "rating": "down", "comment": " Outdated. "})

    assert up.status == down.status == 200 and await up.json() == {"ok": True}
    first, second = answer_service.feedback
    assert (first.rating, first.comment, second.rating, second.comment) == ("up", None, "down", "Outdated.")
    assert first.platform == second.platform == "web"
    assert first.user == second.user == answer_service.questions[0].asker


async def test_feedback_for_an_unknown_trace_is_404(http: ClientSession) -> None:
    response = await http.post("/api/feedback", json={"trace_id": "no-such-trace", "rating": "up"})
    assert response.status == 404 and "error" in await response.json()


@pytest.mark.parametrize(
    "body",
    [{"rating": "up"}, {"trace_id": "t", "rating": "meh"}, {"trace_id": "t", "rating": "down", "comment": 5}],
)
async def test_bad_feedback_is_400(http: ClientSession, answer_service: FakeAnswerService, body: object) -> None:
    response = await http.post("/api/feedback", json=body)
    assert response.status == 400 and (await response.json())["error"]
    assert answer_service.feedback == []


async def test_healthz_ok(http: ClientSession) -> None:
    response = await http.get("/healthz")
    assert response.status == 200
    assert await response.json() == {"status": "ok", "database": "ok"}


async def test_healthz_503_when_the_database_is_down(answer_service: FakeAnswerService) -> None:
    async with started(FailsOnce(answer_service, StoreError("database is down"))) as http:
        response = await http.get("/healthz")
        assert response.status == 503
        assert await response.json() == {"status": "unavailable", "error": "database unavailable"}
        assert (await http.get("/healthz")).status == 200


class HeldAnswers:
    """Holds every answer until `release` is set, to have a request in flight at shutdown."""

    def __init__(self, inner: AnswerService) -> None:
        self.inner = inner
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def answer(self, question: Question) -> Answer:
        self.entered.set()
        await self.release.wait()
        return await self.inner.answer(question)

    async def record_feedback(self, feedback: Feedback) -> None:
        await self.inner.record_feedback(feedback)

    async def health(self) -> dict[str, object]:
        return await self.inner.health()


async def test_serve_finishes_requests_in_flight_on_sigterm(answer_service: FakeAnswerService) -> None:
    held = HeldAnswers(answer_service)
    before = signal.getsignal(signal.SIGTERM)
    port = unused_port()
    base = f"http://127.0.0.1:{port}"
    app = build_app(held, chat=AnonymousVisitors())
    server = asyncio.create_task(serve(app, "127.0.0.1", port, shutdown_timeout=10))
    async with ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        for _ in range(100):
            try:
                if (await http.get(base + "/healthz")).status == 200:
                    break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        in_flight = asyncio.create_task(http.post(base + "/api/ask", json={"question": QUESTION}))
        await asyncio.wait_for(held.entered.wait(), 5)

        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0.2)
        assert not server.done()  # still draining
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.get(base + "/healthz")  # but no longer accepting
        held.release.set()

        response = await asyncio.wait_for(in_flight, 5)
        assert response.status == 200 and (await response.json())["answer"]["question"] == QUESTION
        await asyncio.wait_for(server, 10)
    assert signal.getsignal(signal.SIGTERM) == before
