"""The fake OpenAI chat completions endpoint, proven with the real `openai` client over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from tests.fakes.openai_server import ChatMalformation, ChatRequest, FakeOpenAI, Reply, ThreadedFakeOpenAI

MODEL = "test-chat"
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
    "additionalProperties": False,
}
JSON_SCHEMA_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as running:
        yield running


@pytest.fixture
async def client(fake: FakeOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    made = openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
    yield made
    await made.close()


async def ask(client: openai.AsyncOpenAI, text: str = "How many days of leave?", **options: Any) -> ChatCompletion:
    completion: ChatCompletion = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}], **options
    )
    return completion


def only_content(completion: ChatCompletion) -> str | None:
    [choice] = completion.choices
    return choice.message.content


# --- scripted replies -------------------------------------------------------------------------


async def test_scripted_replies_come_back_in_order_in_the_openai_shape(
    fake: FakeOpenAI, client: openai.AsyncOpenAI
) -> None:
    fake.reply("Leave is 25 days [1].")
    fake.reply("Ask HR [2].")
    first = await ask(client)
    second = await ask(client)
    assert only_content(first) == "Leave is 25 days [1]."
    assert only_content(second) == "Ask HR [2]."
    assert first.object == "chat.completion"
    assert first.id.startswith("chatcmpl-") and first.id != second.id
    assert first.model == MODEL
    assert abs(first.created - time.time()) < 60
    [choice] = first.choices
    assert (choice.index, choice.message.role, choice.finish_reason) == (0, "assistant", "stop")
    assert fake.replies_left == 0


async def test_a_dict_or_list_reply_is_json_text(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    verdict = {"verdict": "supported", "citations": [1, 2], "note": "déjà vu"}
    fake.reply(verdict)
    fake.reply([{"claim": "a"}, {"claim": "b"}])
    first, second = only_content(await ask(client)), only_content(await ask(client))
    assert first is not None and json.loads(first) == verdict
    assert second is not None and json.loads(second) == [{"claim": "a"}, {"claim": "b"}]


async def test_times_repeats_a_reply_and_model_overrides_the_echo(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("same", times=3, model="gpt-fake-2025")
    completions = [await ask(client) for _ in range(3)]
    assert [only_content(c) for c in completions] == ["same"] * 3
    assert {c.model for c in completions} == {"gpt-fake-2025"}
    with pytest.raises(openai.InternalServerError):
        await ask(client)


async def test_finish_reason_length(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("Annual leave is", finish_reason="length")
    completion = await ask(client, max_tokens=3)
    assert completion.choices[0].finish_reason == "length"
    assert only_content(completion) == "Annual leave is"


async def test_usage_is_scripted_or_counted_in_words(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("ignored for usage", usage=(120, 7))
    fake.reply("Twenty five days, per year.")
    scripted = await ask(client)
    counted = await ask(client, "How many days of leave?")
    assert scripted.usage is not None and counted.usage is not None
    assert scripted.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}) == {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "total_tokens": 127,
    }
    assert (counted.usage.prompt_tokens, counted.usage.completion_tokens, counted.usage.total_tokens) == (5, 5, 10)


async def test_counted_prompt_tokens_cover_every_message(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("ok")
    completion = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Cite every claim."},
            {"role": "user", "content": [{"type": "text", "text": "Leave policy?"}]},
        ],
    )
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5, 1)


async def test_n_choices_take_n_replies(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("draft one", usage=(50, 2))
    fake.reply("draft two, longer", usage=(50, 3))
    fake.reply("left for later")
    completion = await ask(client, n=2, temperature=0.7)
    assert [(c.index, c.message.content) for c in completion.choices] == [(0, "draft one"), (1, "draft two, longer")]
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (50, 5)
    assert fake.replies_left == 1
    assert fake.chat_requests[0].n == 2 and fake.chat_requests[0].choices == 2


async def test_n_choices_fill_from_the_responder_after_the_script(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("scripted")
    fake.responder = lambda request: "computed"
    completion = await ask(client, n=3)
    assert [c.message.content for c in completion.choices] == ["scripted", "computed", "computed"]


async def test_too_few_replies_for_n_is_a_500_that_consumes_none(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("only one")
    with pytest.raises(openai.InternalServerError, match="2 choice"):
        await ask(client, n=2)
    assert fake.replies_left == 1
    assert only_content(await ask(client)) == "only one"
    assert fake.chat_statuses == [500, 200]


# --- the responder and the empty script -------------------------------------------------------


async def test_a_responder_reads_the_prompt(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    """A fake writer that copies the first passage it was given, with its citation."""

    def copy_first_passage(request: ChatRequest) -> str:
        assert request.system == "Answer only from the passages."
        passage = request.user.split("\n")[1]
        return f"{passage.removeprefix('[1] ')} [1]"

    fake.responder = copy_first_passage
    completion = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Answer only from the passages."},
            {"role": "user", "content": "Passages:\n[1] Leave is 25 days.\n[2] Parking is free.\nQ: leave?"},
        ],
    )
    assert only_content(completion) == "Leave is 25 days. [1]"
    assert fake.replies_left == 0


async def test_a_responder_can_hallucinate_in_a_known_share_of_drafts(
    fake: FakeOpenAI, client: openai.AsyncOpenAI
) -> None:
    drafts = 0

    def every_other_draft_hallucinates(request: ChatRequest) -> dict[str, Any]:
        nonlocal drafts
        drafts += 1
        if drafts % 2 == 0:
            return {"answer": "Leave is 40 days.", "citations": [9]}
        return {"answer": "Leave is 25 days.", "citations": [1]}

    fake.responder = every_other_draft_hallucinates
    completion = await ask(client, n=4)
    answers = [json.loads(choice.message.content or "null")["answer"] for choice in completion.choices]
    assert answers == ["Leave is 25 days.", "Leave is 40 days."] * 2
    assert drafts == 4


async def test_a_responder_may_return_a_reply_with_finish_reason_and_usage(
    fake: FakeOpenAI, client: openai.AsyncOpenAI
) -> None:
    fake.responder = lambda request: Reply("cut", finish_reason="length", usage=(9, 1))
    completion = await ask(client)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None and completion.usage.total_tokens == 10


async def test_a_responder_that_raises_is_a_500_naming_the_error(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    def broken(request: ChatRequest) -> str:
        raise KeyError("passage 3")

    fake.responder = broken
    with pytest.raises(openai.InternalServerError, match="responder raised KeyError"):
        await ask(client)
    assert fake.chat_statuses == [500]


async def test_an_empty_script_is_a_500_naming_what_is_missing(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as raised:
        await ask(client)
    assert raised.value.status_code == 500
    assert "no scripted chat reply" in raised.value.message
    assert "fake.reply" in raised.value.message and "fake.responder" in raised.value.message
    assert fake.chat_statuses == [500]


# --- faults -------------------------------------------------------------------------------------


async def test_fail_answers_with_the_status_and_keeps_the_reply(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.fail(times=2, status=503)
    fake.reply("after the outage")
    for _ in range(2):
        with pytest.raises(openai.APIStatusError) as raised:
            await ask(client)
        assert raised.value.status_code == 503
    assert only_content(await ask(client)) == "after the outage"
    assert fake.chat_statuses == [503, 503, 200]


async def test_fail_with_a_4xx_status(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.fail(status=401)
    with pytest.raises(openai.AuthenticationError):
        await ask(client)


async def test_rate_limit_raises_with_retry_after(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.rate_limit(retry_after=1.5)
    fake.reply("later")
    with pytest.raises(openai.RateLimitError) as raised:
        await ask(client)
    assert raised.value.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "1.5"
    assert fake.replies_left == 1


async def test_a_retrying_client_waits_for_retry_after(fake: FakeOpenAI) -> None:
    fake.rate_limit(retry_after=0.6)
    fake.reply("after waiting")
    async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=1) as retrying:
        completion = await retrying.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    assert only_content(completion) == "after waiting"
    assert fake.chat_statuses == [429, 200]
    assert fake.chat_requests[1].at - fake.chat_requests[0].at >= 0.5


async def test_a_delayed_reply_times_the_client_out_and_stays_queued(fake: FakeOpenAI) -> None:
    fake.delay_next(3.0)
    fake.reply("in time")
    async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0, timeout=0.3) as impatient:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await impatient.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
        assert time.monotonic() - started < 2.0
        assert len(fake.chat_requests) == 1
        assert fake.replies_left == 1, "the abandoned request took no reply"
        completion = await impatient.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    assert only_content(completion) == "in time"


async def test_delay_makes_every_request_late(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.delay = 0.3
    fake.reply("slow", times=2)
    started = time.monotonic()
    await ask(client)
    await ask(client)
    assert time.monotonic() - started >= 0.6


@pytest.mark.parametrize("kind", ["no_choices", "null_content"])
async def test_malformed_bodies_parse_into_what_the_client_must_reject(
    fake: FakeOpenAI, client: openai.AsyncOpenAI, kind: ChatMalformation
) -> None:
    fake.malformed(kind)
    fake.reply("the real one")
    completion = await ask(client, n=2)
    if kind == "no_choices":
        assert completion.choices == []
    else:
        assert [c.message.content for c in completion.choices] == [None, None]
    assert fake.replies_left == 1
    assert only_content(await ask(client)) == "the real one"
    assert fake.chat_statuses == [200, 200]


async def test_a_body_that_is_not_json_fails_to_parse(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.malformed("not_json")
    with pytest.raises(json.JSONDecodeError):
        await ask(client)
    assert fake.chat_statuses == [200]


async def test_faults_can_be_aimed_at_one_endpoint(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.fail(status=502, endpoint="chat")
    fake.malformed("no_data")  # an embeddings fault: chat requests pass it by
    fake.fail(status=500)  # for whichever request comes next
    fake.reply("chat ok", times=2)
    with pytest.raises(ValueError, match="No embedding data"):  # the openai client rejects `data: []`
        await client.embeddings.create(model="test-embed", input=["leave"])
    with pytest.raises(openai.APIStatusError) as raised:
        await ask(client)
    assert raised.value.status_code == 502
    with pytest.raises(openai.InternalServerError):
        await ask(client)
    assert only_content(await ask(client)) == "chat ok"
    assert fake.statuses == [200]
    assert fake.chat_statuses == [502, 500, 200]


async def test_stream_is_refused(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("unused")
    with pytest.raises(openai.BadRequestError, match="does not stream"):
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}], stream=True)
    assert fake.replies_left == 1


# --- structured output --------------------------------------------------------------------------


class Verdict(BaseModel):
    verdict: str


async def test_json_schema_mode_takes_json_schema_and_parse_works(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply({"verdict": "supported"}, times=2)
    completion = await ask(client, response_format=JSON_SCHEMA_FORMAT)
    assert json.loads(only_content(completion) or "") == {"verdict": "supported"}
    parsed = await client.chat.completions.parse(
        model=MODEL, messages=[{"role": "user", "content": "judge"}], response_format=Verdict
    )
    assert parsed.choices[0].message.parsed == Verdict(verdict="supported")
    first, second = fake.chat_requests
    assert first.response_format == JSON_SCHEMA_FORMAT
    assert first.response_format_type == "json_schema" and first.json_schema == VERDICT_SCHEMA
    assert second.response_format_type == "json_schema"
    assert second.json_schema is not None and second.json_schema["properties"] == {
        "verdict": {"title": "Verdict", "type": "string"}
    }


async def test_json_schema_mode_checks_the_format_as_openai_does(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply({"verdict": "supported"})
    completion = await ask(client, "Answer in JSON.", response_format={"type": "json_object"})
    assert json.loads(only_content(completion) or "") == {"verdict": "supported"}
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        await ask(client, "Answer.", response_format={"type": "json_object"})
    with pytest.raises(openai.BadRequestError, match=r"json_schema\.name"):
        await ask(client, response_format={"type": "json_schema", "json_schema": {"schema": VERDICT_SCHEMA}})
    with pytest.raises(openai.BadRequestError, match="Invalid value: 'yaml'"):
        await ask(client, response_format={"type": "yaml"})
    assert fake.chat_statuses == [200, 400, 400, 400]


async def test_json_object_mode_refuses_json_schema_like_llama_cpp(
    fake: FakeOpenAI, client: openai.AsyncOpenAI
) -> None:
    fake.schema_support = "json_object"
    fake.reply({"verdict": "unsupported"})
    with pytest.raises(openai.InternalServerError) as raised:
        await ask(client, response_format=JSON_SCHEMA_FORMAT)
    assert raised.value.status_code == 500
    assert 'must be one of "text" or "json_object", but got: json_schema' in raised.value.message
    with_schema = {"type": "json_object", "schema": VERDICT_SCHEMA}
    completion = await ask(client, "Answer.", response_format=with_schema)
    assert json.loads(only_content(completion) or "") == {"verdict": "unsupported"}
    refused, taken = fake.chat_requests
    assert (refused.status, taken.status) == (500, 200)
    assert refused.response_format == JSON_SCHEMA_FORMAT
    assert taken.response_format == with_schema and taken.json_schema == VERDICT_SCHEMA


async def test_none_mode_refuses_any_response_format() -> None:
    async with FakeOpenAI(schema_support="none") as plain:
        plain.reply("plain text", times=2)
        async with openai.AsyncOpenAI(base_url=plain.base_url, api_key="x", max_retries=0) as to_plain:
            formats: list[Any] = [{"type": "json_object"}, JSON_SCHEMA_FORMAT, {"type": "text"}]
            for response_format in formats:
                with pytest.raises(openai.BadRequestError, match="response_format is not supported"):
                    await to_plain.chat.completions.create(
                        model=MODEL,
                        messages=[{"role": "user", "content": "json please"}],
                        response_format=response_format,
                    )
            completion = await to_plain.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "q"}]
            )
        assert only_content(completion) == "plain text"
        assert plain.chat_statuses == [400, 400, 400, 200]
        assert [r.response_format_type for r in plain.chat_requests] == ["json_object", "json_schema", "text", None]
        assert plain.replies_left == 1


# --- recording ------------------------------------------------------------------------------------


async def test_requests_are_recorded(fake: FakeOpenAI) -> None:
    fake.reply("one", times=2)
    async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-judge", max_retries=0) as judge:
        await judge.chat.completions.create(
            model="judge-model",
            messages=[
                {"role": "system", "content": "You judge."},
                {"role": "developer", "content": "Be strict."},
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "part"}]},
            ],
            temperature=0.2,
            max_tokens=64,
            seed=7,
        )
        await judge.chat.completions.create(
            model="judge-model", messages=[{"role": "user", "content": "q"}], max_completion_tokens=32, n=1
        )
    first, second = fake.chat_requests
    assert first.model == "judge-model"
    assert [m["role"] for m in first.messages] == ["system", "developer", "user", "assistant", "user"]
    assert first.messages[2] == {"role": "user", "content": "first question"}
    assert (first.temperature, first.n, first.max_tokens, first.max_completion_tokens) == (0.2, None, 64, None)
    assert (second.temperature, second.n, second.max_tokens, second.max_completion_tokens) == (None, 1, None, 32)
    assert first.response_format is None and first.json_schema is None
    assert first.authorization == "Bearer sk-judge"
    assert first.status == 200 and first.body["seed"] == 7
    assert first.system == "You judge.\n\nBe strict."
    assert first.user == "second\npart"
    assert first.texts("assistant") == ["first answer"]
    assert first.prompt.startswith("You judge.\n\nBe strict.\n\nfirst question")
    assert first.at <= second.at <= time.monotonic()
    assert fake.requests == [], "chat requests are not embeddings requests"


async def test_embeddings_still_work_beside_chat(fake: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake.reply("chat")
    embedded = await client.embeddings.create(model="test-embed", input=["annual leave"])
    assert len(embedded.data[0].embedding) == fake.dimension
    assert only_content(await ask(client)) == "chat"
    assert [r.input for r in fake.requests] == [["annual leave"]]
    assert len(fake.chat_requests) == 1


# --- the threaded fake ----------------------------------------------------------------------------


def test_threaded_fake_serves_chat_to_a_sync_client() -> None:
    with ThreadedFakeOpenAI() as fake:
        fake.reply({"verdict": "supported"})
        fake.responder = lambda request: f"echo: {request.user}"
        with openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=0) as sync_client:
            first = sync_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a"}])
            second = sync_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "b"}])
        assert json.loads(first.choices[0].message.content or "") == {"verdict": "supported"}
        assert second.choices[0].message.content == "echo: b"
        assert fake.chat_statuses == [200, 200]
    with pytest.raises(RuntimeError):
        _ = fake.base_url


CHAT_CLIENT = """
import os, openai
client = openai.OpenAI(max_retries=0)
for question in ("first", "second"):
    try:
        completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
        print(completion.choices[0].message.content, completion.usage.total_tokens)
    except openai.APIStatusError as error:
        print("error", error.status_code)
"""


def test_threaded_fake_serves_chat_to_another_process() -> None:
    with ThreadedFakeOpenAI() as fake:
        fake.fail(status=503)
        fake.reply("from the script", usage=(10, 3))
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-sub"}
        done = subprocess.run(
            [sys.executable, "-c", CHAT_CLIENT], env=env, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["error 503", "from the script 13"]
    assert [r.authorization for r in fake.chat_requests] == ["Bearer sk-sub", "Bearer sk-sub"]
    assert [r.user for r in fake.chat_requests] == ["first", "second"]
