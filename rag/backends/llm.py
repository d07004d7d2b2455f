"""Chat models on any OpenAI-compatible endpoint, for the model-backed stages (writer, judge).

`ChatModel.structured(messages, Output)` asks for JSON matching a Pydantic model and returns
validated instances, and degrades explicitly:

- **Structured output.** `json_schema` first. An endpoint that refuses it (llama.cpp's server
  answers a 500 naming the schema) is asked with `{"type": "json_object", "schema": ...}`, then
  with the schema in the prompt only. The mode that worked is remembered for the endpoint.
- **Failures.** Timeouts, connection errors, 429 (after its `Retry-After`), 5xx, and output that is
  not JSON, breaks the schema or was cut off at the token limit (`finish_reason == "length"`) are
  retried with backoff, within the caller's deadline. Then `LLMUnavailable` or `LLMOutputError`:
  the caller falls back (the extractive writer, the offline critic) or abstains.
- **Circuit breaker.** After `failures` calls in a row that failed, the endpoint is not called for
  `reset_seconds`; then one trial call decides whether it is back.
- **Usage.** Every request's model, tokens in and out, time and outcome go to the current answer's
  `UsageMeter` (`metering()`, opened by the `Answerer`), so that the trace can cost the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from rag.backends.circuit import CircuitBreaker
from rag.errors import ConfigError, LLMError, LLMOutputError, LLMUnavailable
from rag.model.answers import ModelCall

log = logging.getLogger("candor.llm")

Output = TypeVar("Output", bound=BaseModel)
StructuredMode = Literal["json_schema", "json_object", "prompt"]
MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "prompt")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_SCHEMA_REFUSAL = re.compile(r"response_format|json_schema|schema|grammar", re.IGNORECASE)


# --- usage ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class UsageMeter:
    """The model calls made for one answer, and when its time for model calls runs out."""

    calls: list[ModelCall] = field(default_factory=list)
    deadline: float | None = None
    """A `time.monotonic()` instant: no model call may run past it (None: no budget)."""

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)


_METER: ContextVar[UsageMeter | None] = ContextVar("candor_usage_meter", default=None)


@contextlib.contextmanager
def metering(budget_seconds: float | None = None) -> Iterator[UsageMeter]:
    """Collect the model calls made inside the block (tasks it starts included); with a budget,
    they share that many seconds from now."""
    meter = UsageMeter(deadline=time.monotonic() + budget_seconds if budget_seconds is not None else None)
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def _record(call: ModelCall) -> None:
    meter = _METER.get()
    if meter is not None:
        meter.calls.append(call)


def _deadline() -> float | None:
    meter = _METER.get()
    return meter.deadline if meter is not None else None


# --- the model -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChatSettings:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 30.0
    """Seconds per request (never past the caller's deadline)."""
    attempts: int = 3
    temperature: float = 0.0
    max_tokens: int = 1024
    concurrency: int = 8
    """Requests in flight at once to this model (a judge gets every sentence of every answer)."""
    price: tuple[float, float] | None = None
    """Cost per million tokens in and out (`CANDOR_LLM_COSTS`); None: not priced."""


class BudgetExhausted(LLMUnavailable):
    """No time left in the answer's budget: nothing was sent."""


class LLMRefused(LLMUnavailable):
    """The endpoint refused this request for good (401, 404, 400: a bad key, model or request)."""


class _Retryable(Exception):
    """An attempt that may succeed if made again: the endpoint failed, or its output was unusable."""

    def __init__(self, error: LLMError, *, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class StructuredModel(Protocol):
    """What the model-backed stages (writer, judge, fact comparer) need from a model: structured
    replies. `ChatModel` is the one implementation; anything else that can return validated
    pydantic objects (another client, a local model) can stand in for it."""

    name: str

    async def structured(
        self,
        messages: Sequence[Mapping[str, str]],
        output: type[Output],
        *,
        purpose: str,
        deadline: float | None = None,
        n: int = 1,
        temperature: float | None = None,
        check: Callable[[Output], object] | None = None,
    ) -> list[Output]: ...


class ChatModel:
    """One model on an OpenAI-compatible endpoint (`openai.AsyncOpenAI`, any base URL)."""

    def __init__(
        self,
        settings: ChatSettings,
        *,
        breaker: CircuitBreaker | None = None,
        backoff_seconds: float = 0.5,
    ) -> None:
        from openai import AsyncOpenAI

        if not settings.model:
            raise ConfigError("a chat model needs a model name")
        if settings.attempts < 1 or settings.timeout <= 0:
            raise ConfigError("a chat model needs attempts >= 1 and timeout > 0")
        self.settings = settings
        self.name = settings.model
        self.breaker = breaker or CircuitBreaker()
        self.backoff_seconds = backoff_seconds
        self.mode: StructuredMode = "json_schema"
        self._slots: asyncio.Semaphore | None = None
        self._client = AsyncOpenAI(
            api_key=settings.api_key or "not-needed",
            base_url=settings.base_url,
            max_retries=0,
            timeout=settings.timeout,
        )

    async def structured(
        self,
        messages: Sequence[Mapping[str, str]],
        output: type[Output],
        *,
        purpose: str,
        deadline: float | None = None,
        n: int = 1,
        temperature: float | None = None,
        check: Callable[[Output], object] | None = None,
    ) -> list[Output]:
        """`n` replies, each validated as `output` and by `check` (which raises `LLMOutputError` for a
        reply that parses but contradicts itself: retried like malformed output); `deadline` is a
        `time.monotonic()` instant (default: the current answer's, see `metering`)."""
        deadline = deadline if deadline is not None else _deadline()
        if not self.breaker.allow():
            self._log(ModelCall(purpose, self.name, 0, 0, 0.0, "skipped", self.mode, "circuit open"))
            raise LLMUnavailable(f"{self.name}: not called, the endpoint failed repeatedly (circuit open)")
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.attempts),
            wait=self._wait(deadline),
            retry=retry_if_exception_type(_Retryable),
            reraise=True,
        )
        settled = False
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.settings.concurrency)
            async with self._slots:
                async for attempt in retrying:
                    with attempt:
                        replies = await self._attempt(messages, output, purpose, deadline, n, temperature, check)
        except (BudgetExhausted, LLMRefused):  # out of this answer's time, or a request it cannot take
            raise  # the endpoint itself is not failing: the breaker does not count it
        except _Retryable as exc:
            if isinstance(exc.error, LLMUnavailable) and not isinstance(exc.error, BudgetExhausted):
                self.breaker.failed()
            else:
                self.breaker.succeeded()  # it answered: the endpoint is alive, its output was not usable
            settled = True
            log.warning("%s: giving up after retries: %s", self.name, exc.error, extra={"purpose": purpose})
            raise exc.error from exc
        finally:
            if not settled:
                self.breaker.release()  # whatever ended the call (a cancellation), a trial slot is freed
        self.breaker.succeeded()
        return replies

    async def _attempt(
        self,
        messages: Sequence[Mapping[str, str]],
        output: type[Output],
        purpose: str,
        deadline: float | None,
        n: int,
        temperature: float | None,
        check: Callable[[Output], object] | None,
    ) -> list[Output]:
        import openai

        while True:  # only a refused structured-output mode loops, to the next mode
            timeout = self._timeout(deadline)
            mode = self.mode
            started = time.perf_counter()
            try:
                response = await self._client.chat.completions.create(
                    model=self.settings.model,
                    messages=_with_schema(messages, output) if mode != "json_schema" else list(messages),  # type: ignore[arg-type]
                    temperature=self.settings.temperature if temperature is None else temperature,
                    max_tokens=self.settings.max_tokens,
                    n=n,
                    timeout=timeout,
                    **_response_format(mode, output),
                )
            except openai.APIStatusError as exc:
                ms = (time.perf_counter() - started) * 1000
                if _refuses_mode(exc) and mode != "prompt":
                    self.mode = MODES[MODES.index(mode) + 1]
                    log.warning("%s refused %s structured output: using %s", self.name, mode, self.mode)
                    self._log(ModelCall(purpose, self.name, 0, 0, ms, "failed", mode, f"refused {mode}"))
                    continue
                self._log(ModelCall(purpose, self.name, 0, 0, ms, "failed", mode, f"HTTP {exc.status_code}"))
                if exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408:
                    raise _Retryable(
                        LLMUnavailable(f"{self.name}: HTTP {exc.status_code}"), retry_after=_retry_after(exc)
                    ) from exc
                raise LLMRefused(f"{self.name}: HTTP {exc.status_code}: {_message(exc)}") from exc
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                ms = (time.perf_counter() - started) * 1000
                self._log(ModelCall(purpose, self.name, 0, 0, ms, "failed", mode, type(exc).__name__))
                raise _Retryable(LLMUnavailable(f"{self.name}: {type(exc).__name__}: {exc}")) from exc
            except (ValueError, openai.OpenAIError) as exc:  # a body that is not the JSON the client expects
                ms = (time.perf_counter() - started) * 1000
                self._log(ModelCall(purpose, self.name, 0, 0, ms, "malformed", mode, "unreadable response"))
                raise _Retryable(LLMOutputError(f"{self.name}: unreadable response: {exc}")) from exc
            ms = (time.perf_counter() - started) * 1000
            usage = getattr(response, "usage", None)
            tokens = (
                (getattr(usage, "prompt_tokens", None) or 0, getattr(usage, "completion_tokens", None) or 0)
                if usage is not None
                else (0, 0)
            )
            try:
                choices = getattr(response, "choices", None)
                if not isinstance(choices, list):  # an HTML page or a bare string answered 200
                    raise LLMOutputError("the response is not a chat completion")
                replies = [_parse(choice, output) for choice in choices]
                if len(replies) != n:
                    raise LLMOutputError(f"asked for {n} replies, got {len(replies)}")
                if check is not None:
                    for reply in replies:
                        check(reply)
            except LLMOutputError as exc:
                self._log(ModelCall(purpose, self.name, *tokens, ms, "malformed", mode, str(exc)))
                raise _Retryable(LLMOutputError(f"{self.name}: {exc}")) from exc
            self._log(ModelCall(purpose, self.name, *tokens, ms, "ok", mode))
            return replies

    def _log(self, call: ModelCall) -> None:
        if self.settings.price is not None:
            per_in, per_out = self.settings.price
            cost = (call.prompt_tokens * per_in + call.completion_tokens * per_out) / 1_000_000
            call = replace(call, cost=cost)
        _record(call)

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self.settings.timeout
        left = deadline - time.monotonic()
        if left <= 0.05:
            raise BudgetExhausted(f"{self.name}: no time left in the answer's budget")
        return min(self.settings.timeout, left)

    def _wait(self, deadline: float | None) -> Callable[[RetryCallState], float]:
        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            retry_after = error.retry_after if isinstance(error, _Retryable) else None
            pause = retry_after if retry_after is not None else self.backoff_seconds * 2 ** (state.attempt_number - 1)
            if deadline is not None and time.monotonic() + pause >= deadline - 0.05:
                assert isinstance(error, _Retryable)
                raise error  # no time for another try: give up now with this attempt's error
            return pause

        return wait

    async def aclose(self) -> None:
        await self._client.close()


def _response_format(mode: StructuredMode, output: type[BaseModel]) -> dict[str, Any]:
    schema = output.model_json_schema()
    if mode == "json_schema":
        spec = {"name": output.__name__, "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {}


def _with_schema(messages: Sequence[Mapping[str, str]], output: type[BaseModel]) -> list[dict[str, str]]:
    """The messages with the schema spelled out, for endpoints that cannot enforce it."""
    rule = "Reply with one JSON object only, no prose and no code fence, matching this JSON schema:\n" + json.dumps(
        output.model_json_schema()
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0]['content']}\n\n{rule}"
    else:
        out.insert(0, {"role": "system", "content": rule})
    return out


def _parse(choice: Any, output: type[Output]) -> Output:
    if getattr(choice, "finish_reason", None) == "length":
        raise LLMOutputError("the reply was cut off at the token limit")
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    if not content or not isinstance(content, str):
        raise LLMOutputError("the reply was empty")
    fenced = _FENCE.match(content)
    try:
        return output.model_validate_json(fenced.group(1) if fenced else content)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:3])
        raise LLMOutputError(f"the reply does not match the schema ({problems})") from exc


def _refuses_mode(exc: Any) -> bool:
    return exc.status_code in (400, 422, 500, 501) and bool(_SCHEMA_REFUSAL.search(_message(exc)))


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error)
    return str(getattr(exc, "message", exc))


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


async def close_all(models: Sequence[ChatModel]) -> None:
    await asyncio.gather(*(m.aclose() for m in models), return_exceptions=True)


def quoted(text: str) -> str:
    """Document text as the prompts show it: every line indented, so that only Candor's own lines
    start at the margin (a document cannot forge a passage header, a part or the question)."""
    return "\n".join(f"  {line}" for line in text.splitlines() if line.strip()) or "  (empty)"
