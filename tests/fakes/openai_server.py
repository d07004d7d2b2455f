"""A fake OpenAI-compatible API on 127.0.0.1, a random free port: `POST /v1/embeddings` and
`POST /v1/chat/completions`.

The real `openai` client talks to it over HTTP.

Embeddings are deterministic: a signed, hashed bag of words (each lower-cased word adds ±1 to one
coordinate chosen by its hash), normalised, so texts sharing words are close and texts sharing none
are nearly orthogonal. `bag_of_words_vector` is the same function, for tests that want the exact
vector.

Chat replies are scripted and consumed in order, one per choice (`n` choices take `n`); when none
is queued, `fake.responder` (if set) computes the reply from the request; with neither, the request
gets a 500 that says so:

    fake.reply("Leave is 25 days [1].")                   # the next choice's content
    fake.reply({"verdict": "supported"}, usage=(120, 4))  # a dict or list is sent as JSON text
    fake.reply("Leave is", finish_reason="length")
    fake.responder = lambda request: request.user.upper() # for everything after the script

Failures are scripted and consumed in order, one per request, before any reply (a failed request
consumes no reply). `endpoint` ("embeddings" or "chat") aims one at one endpoint; without it, it
is for the next request to either:

    fake.fail(times=2)                 # two 500s
    fake.rate_limit(retry_after=1.0)   # one 429 with Retry-After: 1.0
    fake.malformed("missing_vector")   # one 200 whose body is wrong (see `Malformation`,
    fake.malformed("no_choices")       #   `ChatMalformation`: the kind says which endpoint)
    fake.delay_next(2.0)               # the next request answered normally, 2 s late
    fake.delay = 2.0                   # answer every request this many seconds late

`fake.schema_support` says which `response_format`s the chat endpoint takes (see `SchemaSupport`).

Every request received is recorded, with the status it was answered with: embeddings in
`fake.requests` (`ReceivedRequest`), chat in `fake.chat_requests` (`ChatRequest`).
`FakeOpenAI` runs on the caller's event loop; `ThreadedFakeOpenAI` runs one on its own loop in a
background thread, for tests whose client is another process.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
from aiohttp import web

Malformation = Literal["missing_vector", "extra_vector", "no_data", "ragged", "bad_json"]
"""Embeddings. missing_vector: one vector fewer than inputs; extra_vector: one more; no_data:
`data: []`; ragged: the first vector one number short; bad_json: a body that is not JSON at all."""

ChatMalformation = Literal["not_json", "no_choices", "null_content"]
"""Chat completions. not_json: a 200 `application/json` body that is not JSON (the client fails to
parse it); no_choices: `choices: []`; null_content: every choice's `message.content` is null."""

Endpoint = Literal["embeddings", "chat"]

SchemaSupport = Literal["json_schema", "json_object", "none"]
"""What the chat endpoint does with `response_format`:

- "json_schema" (OpenAI): takes `{"type": "text"}`, `{"type": "json_object"}` (400 unless a message
  mentions "json", as OpenAI requires) and `{"type": "json_schema", "json_schema": {"name": ...,
  "schema": ...}}` (400 without a name); any other type is a 400.
- "json_object" (llama.cpp's server): takes "text" and `{"type": "json_object"}`, with or without a
  `"schema"`; type "json_schema" (or any other) is an HTTP 500 whose error says the type must be
  "text" or "json_object".
- "none": any `response_format` is a 400 "response_format is not supported".
"""

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call"]
Content: TypeAlias = str | dict[str, Any] | list[Any]
"""A reply's content: a string as is, a dict or list serialised as JSON text."""

_WORD = re.compile(r"[a-z0-9]+")


def bag_of_words_vector(text: str, dimension: int) -> list[float]:
    """The unit vector the fake returns for `text` (a text without words gets the first axis)."""
    vector = np.zeros(dimension, dtype=np.float64)
    for word in _WORD.findall(text.lower()):
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vector[digest % dimension] += 1.0 if (digest >> 32) & 1 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        vector[0], norm = 1.0, 1.0
    return [float(x) for x in vector / norm]


def count_words(text: str) -> int:
    """How the fake counts tokens when a reply's usage is not scripted: lower-cased [a-z0-9]+ runs."""
    return len(_WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One embeddings request as the fake saw it, and what it answered."""

    model: str | None
    input: list[str]
    dimensions: int | None
    encoding_format: str | None
    authorization: str | None
    status: int
    at: float
    """`time.monotonic()` when it arrived."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted chat choice (what `FakeOpenAI.reply` queues; a responder may return one too)."""

    content: Content
    finish_reason: FinishReason = "stop"
    usage: tuple[int, int] | None = None
    """(prompt_tokens, completion_tokens); None: count words (`count_words`)."""
    model: str | None = None
    """The response's `model`; None: the model the request named."""

    @property
    def text(self) -> str:
        """The content as it goes into `message.content`."""
        return self.content if isinstance(self.content, str) else json.dumps(self.content, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat completions request as the fake saw it, and what it answered.

    The fields hold what the client sent (None when a parameter was absent)."""

    model: str | None
    messages: list[dict[str, Any]]
    """As sent: `{"role": ..., "content": ...}` dicts (content a string or a list of parts)."""
    response_format: Any
    """As sent, normally a dict such as `{"type": "json_schema", "json_schema": {...}}`; None when absent."""
    temperature: float | None
    n: int | None
    max_tokens: int | None
    max_completion_tokens: int | None
    authorization: str | None
    """The Authorization header, e.g. "Bearer sk-test"."""
    status: int
    """The HTTP status answered (or that would have been, had the client waited)."""
    at: float
    """`time.monotonic()` when it arrived."""
    body: dict[str, Any] = field(default_factory=dict)
    """The whole JSON body, for anything else (seed, stop, stream, tools, ...); {} if it was not an object."""

    @property
    def choices(self) -> int:
        """How many choices were asked for (`n`, default 1)."""
        return self.n if self.n is not None else 1

    def texts(self, *roles: str) -> list[str]:
        """The text of each message, in order, of the given roles (all messages without roles)."""
        return [_message_text(m) for m in self.messages if not roles or m.get("role") in roles]

    @property
    def system(self) -> str:
        """The system (and developer) messages' text, joined by blank lines ("" if none)."""
        return "\n\n".join(self.texts("system", "developer"))

    @property
    def user(self) -> str:
        """The last user message's text ("" if none)."""
        users = self.texts("user")
        return users[-1] if users else ""

    @property
    def prompt(self) -> str:
        """Every message's text, joined by blank lines."""
        return "\n\n".join(self.texts())

    @property
    def response_format_type(self) -> str | None:
        """`response_format["type"]`, or None."""
        kind = self.response_format.get("type") if isinstance(self.response_format, dict) else None
        return kind if isinstance(kind, str) else None

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The JSON schema asked for: `json_schema.schema` (OpenAI) or `schema` (llama.cpp's json_object)."""
        if not isinstance(self.response_format, dict):
            return None
        wrapper = self.response_format.get("json_schema")
        schema = wrapper.get("schema") if isinstance(wrapper, dict) else self.response_format.get("schema")
        return schema if isinstance(schema, dict) else None


Responder: TypeAlias = Callable[[ChatRequest], Content | Reply]
"""Computes one choice from the request when no reply is queued (called once per choice)."""


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    malformation: Malformation | ChatMalformation | None = None
    delay: float = 0.0
    endpoint: Endpoint | None = None


_NO_FAULT = _Fault()
_CHAT_MALFORMATIONS: frozenset[str] = frozenset(("not_json", "no_choices", "null_content"))


@dataclass(frozen=True, slots=True)
class _Problem:
    status: int
    message: str
    kind: str


class FakeOpenAI:
    """An OpenAI-compatible embeddings and chat server; `await start()` returns its base URL."""

    def __init__(self, *, dimension: int = 8, schema_support: SchemaSupport = "json_schema") -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self.dimension = dimension
        self.delay = 0.0
        """Seconds every request (either endpoint) is answered late."""
        self.schema_support: SchemaSupport = schema_support
        self.responder: Responder | None = None
        self.requests: list[ReceivedRequest] = []
        self.chat_requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._faults: deque[_Fault] = deque()
        self._replies: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- scripting ---------------------------------------------------------------------

    def fail(self, times: int = 1, *, status: int = 500, endpoint: Endpoint | None = None) -> None:
        """Answer the next `times` requests with `status` and an OpenAI-style error body."""
        self._script(times, _Fault(status=status, endpoint=endpoint))

    def rate_limit(self, *, retry_after: float, times: int = 1, endpoint: Endpoint | None = None) -> None:
        """Answer the next `times` requests with 429 and `Retry-After: retry_after` (seconds)."""
        headers = {"Retry-After": f"{retry_after:g}"}
        self._script(times, _Fault(status=429, headers=headers, endpoint=endpoint))

    def malformed(self, kind: Malformation | ChatMalformation, *, times: int = 1) -> None:
        """Answer the next `times` requests to the kind's endpoint with 200 and a wrong body."""
        endpoint: Endpoint = "chat" if kind in _CHAT_MALFORMATIONS else "embeddings"
        self._script(times, _Fault(malformation=kind, endpoint=endpoint))

    def delay_next(self, seconds: float, *, times: int = 1, endpoint: Endpoint | None = None) -> None:
        """Answer the next `times` requests normally but `seconds` late (on top of `delay`).

        A chat reply is taken from the script only once the delay is over, so a request the client
        gave up on (and the server cancelled) consumes none."""
        self._script(times, _Fault(delay=seconds, endpoint=endpoint))

    def reply(
        self,
        content: Content,
        *,
        finish_reason: FinishReason = "stop",
        usage: tuple[int, int] | None = None,
        model: str | None = None,
        times: int = 1,
    ) -> None:
        """Queue `times` chat choices with this content (a dict or list is sent as JSON text).

        `usage`: (prompt_tokens, completion_tokens), or None to count words; `model`: the response's
        model (None: the request's)."""
        scripted = Reply(content, finish_reason=finish_reason, usage=usage, model=model)
        with self._lock:
            self._replies.extend([scripted] * times)

    @property
    def replies_left(self) -> int:
        """Scripted chat replies not consumed yet."""
        with self._lock:
            return len(self._replies)

    @property
    def statuses(self) -> list[int]:
        """The statuses of the embeddings requests, in arrival order."""
        return [request.status for request in self.requests]

    @property
    def chat_statuses(self) -> list[int]:
        """The statuses of the chat requests, in arrival order."""
        return [request.status for request in self.chat_requests]

    def _script(self, times: int, fault: _Fault) -> None:
        with self._lock:
            self._faults.extend([fault] * times)

    def _take_fault(self, endpoint: Endpoint) -> _Fault:
        """The first queued fault for this endpoint (or for either), removed; else no fault."""
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.endpoint in (None, endpoint):
                    del self._faults[index]
                    return fault
        return _NO_FAULT

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake OpenAI server is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self, port: int = 0) -> str:
        """Listen on `port` (0: a free one); the base URL."""
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self._port = None, None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- the embeddings endpoint ---------------------------------------------------------

    async def _embeddings(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = None
        texts, problem = _inputs(body)
        fault = self._take_fault("embeddings")
        status = 400 if problem else fault.status
        self.requests.append(
            ReceivedRequest(
                model=body.get("model") if isinstance(body, dict) else None,
                input=texts,
                dimensions=body.get("dimensions") if isinstance(body, dict) else None,
                encoding_format=body.get("encoding_format") if isinstance(body, dict) else None,
                authorization=request.headers.get("Authorization"),
                status=status,
                at=arrived,
            )
        )
        if self.delay or fault.delay:
            await asyncio.sleep(self.delay + fault.delay)
        if problem:
            return _error(400, problem, "invalid_request_error")
        if status != 200:
            kind = "rate_limit_exceeded" if status == 429 else "server_error"
            return _error(status, f"simulated {status}", kind, fault.headers)
        assert isinstance(body, dict)
        dimension = int(body.get("dimensions") or self.dimension)
        vectors = [bag_of_words_vector(text, dimension) for text in texts]
        if fault.malformation == "bad_json":
            return web.Response(status=200, text='{"object": "list", "data": [', content_type="application/json")
        if fault.malformation == "missing_vector":
            vectors = vectors[:-1]
        elif fault.malformation == "extra_vector":
            vectors = [*vectors, vectors[-1]]
        elif fault.malformation == "no_data":
            vectors = []
        elif fault.malformation == "ragged":
            vectors = [vectors[0][:-1], *vectors[1:]]
        as_base64 = body.get("encoding_format") == "base64"
        tokens = sum(len(_WORD.findall(text.lower())) or 1 for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": index, "embedding": _encode(vector, as_base64)}
                    for index, vector in enumerate(vectors)
                ],
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    # --- the chat completions endpoint ---------------------------------------------------

    async def _chat_completions(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        try:
            parsed: Any = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        problem = _chat_problem(parsed, self.schema_support)
        fault = self._take_fault("chat")
        record = ChatRequest(
            model=_string(body.get("model")),
            messages=[m for m in body.get("messages") or [] if isinstance(m, dict)]
            if isinstance(body.get("messages"), list)
            else [],
            response_format=body.get("response_format"),
            temperature=_number(body.get("temperature")),
            n=_integer(body.get("n")),
            max_tokens=_integer(body.get("max_tokens")),
            max_completion_tokens=_integer(body.get("max_completion_tokens")),
            authorization=request.headers.get("Authorization"),
            status=200,
            at=arrived,
            body=body,
        )
        if problem is not None:
            status = problem.status
        elif fault.status != 200 or fault.malformation is not None:
            status = fault.status
        else:
            status = 200 if self._can_answer(record.choices) else 500
        with self._lock:
            position = len(self.chat_requests)
            self.chat_requests.append(dataclasses.replace(record, status=status))
        if self.delay or fault.delay:
            await asyncio.sleep(self.delay + fault.delay)
        if problem is not None:
            return _error(problem.status, problem.message, problem.kind)
        if fault.status != 200:
            kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
            return _error(fault.status, f"simulated {fault.status}", kind, fault.headers)
        if fault.malformation == "not_json":
            return web.Response(
                status=200, text='{"id": "chatcmpl-fake", "choices": [', content_type="application/json"
            )
        if fault.malformation is not None:
            empty = [Reply("")] * (0 if fault.malformation == "no_choices" else record.choices)
            return web.json_response(self._completion(record, empty, null_content=True))
        answered = self._answer(record)
        if isinstance(answered, _Problem):
            with self._lock:
                self.chat_requests[position] = dataclasses.replace(record, status=answered.status)
            return _error(answered.status, answered.message, answered.kind)
        return web.json_response(self._completion(record, answered))

    def _can_answer(self, choices: int) -> bool:
        with self._lock:
            return self.responder is not None or len(self._replies) >= choices

    def _answer(self, request: ChatRequest) -> list[Reply] | _Problem:
        """`request.choices` replies: from the script, then the responder; or the 500 saying why not."""
        wanted = request.choices
        with self._lock:
            responder = self.responder
            if responder is None and len(self._replies) < wanted:
                queued = len(self._replies)
                message = (
                    f"the fake OpenAI server has no scripted chat reply for this request: {wanted} choice(s) "
                    f"asked for, {queued} queued, and no responder; script one with fake.reply(...) or set "
                    "fake.responder"
                )
                return _Problem(500, message, "server_error")
            replies = [self._replies.popleft() for _ in range(min(wanted, len(self._replies)))]
        assert len(replies) == wanted or responder is not None
        while len(replies) < wanted:
            assert responder is not None
            try:
                computed = responder(request)
            except Exception as error:
                message = f"the fake OpenAI server's responder raised {type(error).__name__}: {error}"
                return _Problem(500, message, "server_error")
            replies.append(computed if isinstance(computed, Reply) else Reply(computed))
        return replies

    def _completion(self, request: ChatRequest, replies: list[Reply], *, null_content: bool = False) -> dict[str, Any]:
        prompt_tokens = next(
            (reply.usage[0] for reply in replies if reply.usage is not None), count_words(request.prompt)
        )
        completion_tokens = sum(
            reply.usage[1] if reply.usage is not None else count_words(reply.text) for reply in replies
        )
        model = next((reply.model for reply in replies if reply.model is not None), request.model or "")
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": index,
                    "message": {"role": "assistant", "content": None if null_content else reply.text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
                for index, reply in enumerate(replies)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": None,
        }


def _inputs(body: Any) -> tuple[list[str], str | None]:
    """The texts of an embeddings request, or the 400 message OpenAI would give."""
    if not isinstance(body, dict):
        return [], "We could not parse the JSON body of your request."
    if not body.get("model"):
        return [], "you must provide a model parameter"
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        return [], "'$.input' is invalid: expected a non-empty string or a non-empty list of non-empty strings"
    dimensions = body.get("dimensions")
    if dimensions is not None and (not isinstance(dimensions, int) or dimensions < 1):
        return list(texts), "'dimensions' must be a positive integer"
    return list(texts), None


def _chat_problem(body: Any, schema_support: SchemaSupport) -> _Problem | None:
    """Why a chat request is refused (status, message, error type), or None."""

    def invalid(message: str) -> _Problem:
        return _Problem(400, message, "invalid_request_error")

    if not isinstance(body, dict):
        return invalid("We could not parse the JSON body of your request.")
    if not body.get("model"):
        return invalid("you must provide a model parameter")
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages)
    ):
        return invalid("'messages' must be a non-empty list of {role, content} objects")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        return invalid("'n' must be a positive integer")
    if body.get("stream"):
        return invalid("the fake OpenAI server does not stream: stream=true is not supported")
    response_format = body.get("response_format")
    if response_format is None:
        return None
    if schema_support == "none":
        return invalid("response_format is not supported")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if not isinstance(response_format, dict) or not isinstance(kind, str):
        return invalid("'response_format' must be an object with a 'type'")
    if schema_support == "json_object":  # llama.cpp's server: a runtime error, answered as a 500
        if kind in ("text", "json_object"):
            return None
        message = f'response_format type must be one of "text" or "json_object", but got: {kind}'
        return _Problem(500, message, "server_error")
    if kind == "text":
        return None
    if kind == "json_object":
        said_json = any("json" in _message_text(m).lower() for m in messages)
        if said_json:
            return None
        return invalid(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
        )
    if kind == "json_schema":
        wrapper = response_format.get("json_schema")
        if not isinstance(wrapper, dict) or not isinstance(wrapper.get("name"), str):
            return invalid("Missing required parameter: 'response_format.json_schema.name'.")
        return None
    return invalid(f"Invalid value: '{kind}'. Supported values are: 'json_object', 'json_schema', and 'text'.")


def _message_text(message: dict[str, Any]) -> str:
    """A message's text: its content string, or its text parts joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _encode(vector: list[float], as_base64: bool) -> list[float] | str:
    if not as_base64:
        return vector
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(body, status=status, headers=headers or {})


class ThreadedFakeOpenAI:
    """Run a `FakeOpenAI` on its own event loop in a daemon thread (for subprocess clients).

    with ThreadedFakeOpenAI(FakeOpenAI(dimension=8)) as fake:
        fake.reply("scripted")
        subprocess.run(..., env={"OPENAI_BASE_URL": fake.base_url})

    Script and read the fake from the test's thread as usual; a `responder` runs on the fake's thread.
    """

    def __init__(self, fake: FakeOpenAI | None = None) -> None:
        self.fake = fake or FakeOpenAI()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-openai", daemon=True)
        self._port = 0

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.start(), self._loop).result(timeout=10)
        return self.fake

    def down(self) -> None:
        """Stop listening, as an endpoint that went away: connections are refused until `up()`."""
        self._port = int(self.fake.base_url.rsplit(":", 1)[1].split("/", 1)[0])
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self._loop).result(timeout=10)

    def up(self) -> None:
        """Listen again on the port it had before `down()`."""
        asyncio.run_coroutine_threadsafe(self.fake.start(self._port), self._loop).result(timeout=10)

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.fake.stop(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
