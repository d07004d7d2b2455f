"""`rag.backends.llm.ChatModel` against a fake OpenAI-compatible server on 127.0.0.1, through the real `openai` client:
structured output and its fallbacks, retries, the answer's time budget, the circuit breaker, usage and cost."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from pydantic import BaseModel, ConfigDict

from rag.backends.circuit import CircuitBreaker
from rag.backends.llm import ChatModel, ChatSettings, metering
from rag.errors import LLMOutputError, LLMUnavailable
from tests.fakes.openai_server import FakeOpenAI

MESSAGES = [{"role": "system", "content": "You answer in JSON."}, {"role": "user", "content": "How many days?"}]


class Days(BaseModel):
    model_config = ConfigDict(extra="forbid")

    days: int
    unit: str


GOOD = {"days": 25, "unit": "days"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def model(fake: FakeOpenAI, *, breaker: CircuitBreaker | None = None, **changes: Any) -> ChatModel:
    settings = ChatSettings("writer-model", base_url=fake.base_url, api_key="sk-test", timeout=5.0, attempts=3)
    return ChatModel(replace(settings, **changes), breaker=breaker, backoff_seconds=0.05)


async def test_a_structured_reply_is_validated_and_its_usage_and_cost_recorded(fake: FakeOpenAI) -> None:
    fake.reply(GOOD, usage=(1200, 30))
    chat = model(fake, price=(0.15, 0.60))
    with metering() as meter:
        (days,) = await chat.structured(MESSAGES, Days, purpose="writer")
    assert days == Days(days=25, unit="days")
    (request,) = fake.chat_requests
    assert request.response_format_type == "json_schema" and request.json_schema is not None
    assert request.json_schema["properties"]["days"]["type"] == "integer"
    assert request.model == "writer-model" and request.authorization == "Bearer sk-test"
    (call,) = meter.calls
    assert (call.purpose, call.model, call.outcome, call.mode) == ("writer", "writer-model", "ok", "json_schema")
    assert (call.prompt_tokens, call.completion_tokens) == (1200, 30)
    assert call.cost == pytest.approx((1200 * 0.15 + 30 * 0.60) / 1_000_000)


async def test_an_endpoint_refusing_json_schema_gets_json_object_with_the_schema_and_keeps_it(
    fake: FakeOpenAI,
) -> None:
    fake.schema_support = "json_object"  # llama.cpp's server: a 500 for json_schema
    fake.reply(GOOD, times=2)
    chat = model(fake)
    with metering() as meter:
        await chat.structured(MESSAGES, Days, purpose="writer")
        await chat.structured(MESSAGES, Days, purpose="writer")
    refused, first, second = fake.chat_requests
    assert (refused.status, refused.response_format_type) == (500, "json_schema")
    assert first.response_format_type == second.response_format_type == "json_object"
    assert first.json_schema is not None and "days" in first.json_schema["properties"]
    assert "JSON schema" in first.system  # spelled out for the model too
    assert [c.outcome for c in meter.calls] == ["failed", "ok", "ok"]


async def test_an_endpoint_without_any_response_format_gets_the_schema_in_the_prompt(fake: FakeOpenAI) -> None:
    fake.schema_support = "none"
    fake.reply(f"```json\n{GOOD}\n```".replace("'", '"'))  # a fenced reply, as chat models write
    (days,) = await model(fake).structured(MESSAGES, Days, purpose="writer")
    assert days.days == 25
    assert [r.response_format_type for r in fake.chat_requests] == ["json_schema", "json_object", None]
    assert '"days"' in fake.chat_requests[-1].system


async def test_a_429_is_retried_after_its_retry_after(fake: FakeOpenAI) -> None:
    fake.rate_limit(retry_after=1.0, endpoint="chat")
    fake.reply(GOOD)
    await model(fake).structured(MESSAGES, Days, purpose="writer")
    throttled, answered = fake.chat_requests
    assert (throttled.status, answered.status) == (429, 200)
    assert answered.at - throttled.at >= 1.0


async def test_5xx_and_malformed_replies_are_retried(fake: FakeOpenAI) -> None:
    fake.fail(status=503, endpoint="chat")
    fake.malformed("not_json")
    fake.reply({"days": "many"})  # breaks the schema: retried too... but attempts are 3
    fake.reply(GOOD)
    with pytest.raises(LLMOutputError, match="does not match the schema"):
        await model(fake).structured(MESSAGES, Days, purpose="writer")
    assert fake.chat_statuses == [503, 200, 200]
    (days,) = await model(fake, attempts=1).structured(MESSAGES, Days, purpose="writer")
    assert days.days == 25


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("length", "cut off at the token limit"),
        ("no_choices", "asked for 1 replies, got 0"),
        ("null_content", "the reply was empty"),
    ],
)
async def test_unusable_replies_are_malformed_after_the_retries(fake: FakeOpenAI, script: str, message: str) -> None:
    for _ in range(2):
        if script == "length":
            fake.reply('{"days": 2', finish_reason="length")
        else:
            fake.malformed(script)  # type: ignore[arg-type]
    with metering() as meter, pytest.raises(LLMOutputError, match=message):
        await model(fake, attempts=2).structured(MESSAGES, Days, purpose="judge")
    assert [c.outcome for c in meter.calls] == ["malformed", "malformed"]


async def test_a_slow_endpoint_times_out_and_the_answers_budget_stops_the_retries(fake: FakeOpenAI) -> None:
    fake.delay_next(3.0, times=5, endpoint="chat")
    chat = model(fake, timeout=0.5, attempts=5)
    started = time.monotonic()
    with metering(budget_seconds=1.2) as meter, pytest.raises(LLMUnavailable):
        await chat.structured(MESSAGES, Days, purpose="writer")
    assert time.monotonic() - started < 2.5  # not five tries of half a second plus backoff
    assert 1 <= len(meter.calls) <= 2 and all(c.outcome == "failed" for c in meter.calls)


async def test_a_bad_request_is_not_retried(fake: FakeOpenAI) -> None:
    fake.fail(status=401, endpoint="chat")
    with pytest.raises(LLMUnavailable, match="HTTP 401"):
        await model(fake).structured(MESSAGES, Days, purpose="writer")
    assert fake.chat_statuses == [401]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_the_circuit_opens_after_repeated_failures_and_a_trial_closes_it(fake: FakeOpenAI) -> None:
    clock = Clock()
    chat = model(fake, attempts=1, breaker=CircuitBreaker(failures=2, reset_seconds=30, clock=clock))
    fake.fail(status=500, times=2, endpoint="chat")
    for _ in range(2):
        with pytest.raises(LLMUnavailable):
            await chat.structured(MESSAGES, Days, purpose="writer")
    assert chat.breaker.state == "open"
    with metering() as meter, pytest.raises(LLMUnavailable, match="circuit open"):
        await chat.structured(MESSAGES, Days, purpose="writer")
    assert len(fake.chat_requests) == 2  # nothing was sent while open
    assert [c.outcome for c in meter.calls] == ["skipped"]

    clock.now = 31.0  # half open: one trial goes out
    assert chat.breaker.state == "half_open"
    fake.reply(GOOD)
    await chat.structured(MESSAGES, Days, purpose="writer")
    assert chat.breaker.state == "closed" and len(fake.chat_requests) == 3


async def test_a_failed_trial_reopens_the_circuit(fake: FakeOpenAI) -> None:
    clock = Clock()
    chat = model(fake, attempts=1, breaker=CircuitBreaker(failures=1, reset_seconds=10, clock=clock))
    fake.fail(status=502, times=2, endpoint="chat")
    with pytest.raises(LLMUnavailable):
        await chat.structured(MESSAGES, Days, purpose="writer")
    clock.now = 11.0
    with pytest.raises(LLMUnavailable, match="HTTP 502"):
        await chat.structured(MESSAGES, Days, purpose="writer")  # the trial
    assert chat.breaker.state == "open"
    clock.now = 15.0
    with pytest.raises(LLMUnavailable, match="circuit open"):
        await chat.structured(MESSAGES, Days, purpose="writer")


async def test_n_samples_come_back_validated(fake: FakeOpenAI) -> None:
    fake.reply(GOOD)
    fake.reply({"days": 20, "unit": "days"})
    replies = await model(fake).structured(MESSAGES, Days, purpose="consistency", n=2, temperature=0.7)
    assert [r.days for r in replies] == [25, 20]
    (request,) = fake.chat_requests
    assert (request.n, request.temperature) == (2, 0.7)


async def test_a_cancelled_trial_frees_the_half_open_circuit(fake: FakeOpenAI) -> None:
    clock = Clock()
    chat = model(fake, attempts=1, breaker=CircuitBreaker(failures=1, reset_seconds=10, clock=clock))
    fake.fail(status=500, endpoint="chat")
    with pytest.raises(LLMUnavailable):
        await chat.structured(MESSAGES, Days, purpose="writer")
    clock.now = 11.0
    fake.delay_next(5.0, endpoint="chat")
    trial = asyncio.create_task(chat.structured(MESSAGES, Days, purpose="writer"))
    await asyncio.sleep(0.3)
    trial.cancel()
    with pytest.raises(asyncio.CancelledError):
        await trial
    fake.reply(GOOD)
    (days,) = await chat.structured(MESSAGES, Days, purpose="writer")  # not refused as "circuit open"
    assert days.days == 25 and chat.breaker.state == "closed"


async def test_an_exhausted_budget_or_a_refused_request_does_not_open_the_circuit(fake: FakeOpenAI) -> None:
    chat = model(fake, attempts=1, breaker=CircuitBreaker(failures=1, reset_seconds=30))
    with metering(budget_seconds=0.0), pytest.raises(LLMUnavailable, match="no time left"):
        await chat.structured(MESSAGES, Days, purpose="judge")
    fake.fail(status=400, endpoint="chat")
    with pytest.raises(LLMUnavailable, match="HTTP 400"):
        await chat.structured(MESSAGES, Days, purpose="judge")
    assert chat.breaker.state == "closed"


async def test_a_200_that_is_not_a_chat_completion_is_malformed_not_a_crash() -> None:
    async def html(request: web.Request) -> web.Response:
        return web.Response(text="<html>maintenance</html>", content_type="text/html")

    async def no_usage(request: web.Request) -> web.Response:
        reply = {"role": "assistant", "content": '{"days": 1, "unit": "d"}'}
        choice = {"index": 0, "finish_reason": "stop", "message": reply}
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "usage": {}, "choices": [choice]}
        return web.json_response(body)

    for handler, expected in ((html, LLMOutputError), (no_usage, None)):
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        chat = ChatModel(ChatSettings("m", base_url=url, attempts=1, price=(1.0, 1.0)), backoff_seconds=0.01)
        try:
            with metering() as meter:
                if expected is None:
                    (days,) = await chat.structured(MESSAGES, Days, purpose="writer")
                    assert days.days == 1 and (meter.calls[0].prompt_tokens, meter.calls[0].cost) == (0, 0.0)
                else:
                    with pytest.raises(expected, match=r"not a chat completion|unreadable"):
                        await chat.structured(MESSAGES, Days, purpose="writer")
        finally:
            await chat.aclose()
            await runner.cleanup()


async def test_requests_to_one_model_are_limited_to_its_concurrency(fake: FakeOpenAI) -> None:
    fake.delay_next(0.5, times=2, endpoint="chat")
    fake.reply(GOOD, times=2)
    chat = model(fake, concurrency=1)
    await asyncio.gather(*(chat.structured(MESSAGES, Days, purpose="judge") for _ in range(2)))
    first, second = sorted(r.at for r in fake.chat_requests)
    assert second - first >= 0.45  # the second waited for the first
