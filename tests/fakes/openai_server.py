"""A fake OpenAI-compatible embeddings API: `POST /v1/embeddings` on 127.0.0.1, a random free port.

The real `openai` client talks to it over HTTP. Vectors are deterministic: a signed, hashed bag of
words (each lower-cased word adds ±1 to one coordinate chosen by its hash), normalised, so texts
sharing words are close and texts sharing none are nearly orthogonal. `bag_of_words_vector` is
the same function, for tests that want the exact vector.

Failures are scripted and consumed in order, one per request:

    fake.fail(times=2)                 # two 500s
    fake.rate_limit(retry_after=1.0)   # one 429 with Retry-After: 1.0
    fake.malformed("missing_vector")   # one 200 whose body is wrong (see `Malformation`)
    fake.delay = 2.0                   # answer every request this many seconds late

Every request received is recorded in `fake.requests`, with the status it was answered with.
`FakeOpenAI` runs on the caller's event loop; `ThreadedFakeOpenAI` runs one on its own loop in a
background thread, for tests whose client is another process.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from aiohttp import web

Malformation = Literal["missing_vector", "extra_vector", "no_data", "ragged", "bad_json"]
"""missing_vector: one vector fewer than inputs; extra_vector: one more; no_data: `data: []`;
ragged: the first vector one number short; bad_json: a body that is not JSON at all."""

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


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request as the fake saw it, and what it answered."""

    model: str | None
    input: list[str]
    dimensions: int | None
    encoding_format: str | None
    authorization: str | None
    status: int
    at: float
    """`time.monotonic()` when it arrived."""


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    malformation: Malformation | None = None


class FakeOpenAI:
    """An OpenAI-compatible embeddings server; `await start()` returns its base URL."""

    def __init__(self, *, dimension: int = 8) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self.dimension = dimension
        self.delay = 0.0
        self.requests: list[ReceivedRequest] = []
        self._faults: deque[_Fault] = deque()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- scripting ---------------------------------------------------------------------

    def fail(self, times: int = 1, *, status: int = 500) -> None:
        """Answer the next `times` requests with `status` and an OpenAI-style error body."""
        self._faults.extend(_Fault(status=status) for _ in range(times))

    def rate_limit(self, *, retry_after: float, times: int = 1) -> None:
        """Answer the next `times` requests with 429 and `Retry-After: retry_after` (seconds)."""
        self._faults.extend(_Fault(status=429, headers={"Retry-After": f"{retry_after:g}"}) for _ in range(times))

    def malformed(self, kind: Malformation, *, times: int = 1) -> None:
        """Answer the next `times` requests with 200 and a wrong body."""
        self._faults.extend(_Fault(malformation=kind) for _ in range(times))

    @property
    def statuses(self) -> list[int]:
        return [request.status for request in self.requests]

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake OpenAI server is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
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

    # --- the endpoint --------------------------------------------------------------------

    async def _embeddings(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = None
        texts, problem = _inputs(body)
        fault = self._faults.popleft() if self._faults else _Fault()
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
        if self.delay:
            await asyncio.sleep(self.delay)
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


def _inputs(body: Any) -> tuple[list[str], str | None]:
    """The texts of a request, or the 400 message OpenAI would give."""
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
        subprocess.run(..., env={"OPENAI_BASE_URL": fake.base_url})
    """

    def __init__(self, fake: FakeOpenAI | None = None) -> None:
        self.fake = fake or FakeOpenAI()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-openai", daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.start(), self._loop).result(timeout=10)
        return self.fake

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.fake.stop(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
