"""The chat page on the real pipeline: `build_app(candor)` on a real socket, the sample handbook in
the embedded Postgres, questions and votes over HTTP, the vote stored on the trace; and who may read
the restricted salary bands: a person the sign-in proxy vouched for, whom a `platform: web` rule
grants hr-confidential, and nobody who merely claims to be that person."""

from __future__ import annotations

import dataclasses
import ipaddress
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.server import build_app
from bot.web.identity import AnonymousVisitors, ProxyLogin
from rag.runtime import Candor, build_answerer
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
async def server(candor: Candor) -> AsyncIterator[TestServer]:
    kb = await candor.knowledge_base(f"web-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    test_server = TestServer(build_app(candor, chat=AnonymousVisitors()), host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


SALARY = "What is the salary band for an L3 Senior Software Engineer?"
HR_PERSON = "hr.lead@example.com"


@pytest.fixture(scope="module")
async def signed_in_server(
    candor: Candor, server: TestServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[TestServer]:
    """The page behind a sign-in proxy on 127.0.0.1, with an access rule for one HR person."""
    policy = Path(tmp_path_factory.mktemp("web-policy")) / "access.yaml"
    policy.write_text(f'- platform: web\n  asker: "{HR_PERSON}"\n  groups: [hr-confidential]\n', encoding="utf-8")
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer)
    login = ProxyLogin("X-Forwarded-Email", [ipaddress.ip_network("127.0.0.1/32")])
    test_server = TestServer(build_app(core, chat=login), host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


async def test_the_person_the_proxy_vouched_for_reads_their_restricted_documents(
    signed_in_server: TestServer,
) -> None:
    async with aiohttp.ClientSession() as session:
        asked = await session.post(
            signed_in_server.make_url("/api/ask"), json={"question": SALARY}, headers={"X-Forwarded-Email": HR_PERSON}
        )
        answer = (await asked.json())["answer"]
    assert answer["route"] == "answered" and "£" in answer["text"]


@pytest.mark.parametrize(
    "headers",
    [{"X-Forwarded-Email": "someone.else@example.com"}, {"X-Forwarded-User": HR_PERSON}, {}],
)
async def test_nobody_else_reads_them_behind_the_proxy(signed_in_server: TestServer, headers: dict[str, str]) -> None:
    async with aiohttp.ClientSession() as session:
        asked = await session.post(signed_in_server.make_url("/api/ask"), json={"question": SALARY}, headers=headers)
        body = await asked.json()
    if "X-Forwarded-Email" not in headers:
        assert asked.status == 401 and "answer" not in body
        return
    assert body["answer"]["route"] == "abstained"
    shown = str(body)
    for restricted in ("£", "Salary Bands and Severance", "Engineering salary bands", "hr-compensation"):
        assert restricted not in shown


async def test_page_loads_and_answers_and_stores_the_vote(candor: Candor, server: TestServer) -> None:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        page = await session.get(server.make_url("/"))
        assert page.status == 200 and "text/html" in page.headers["Content-Type"]

        health = await session.get(server.make_url("/healthz"))
        assert health.status == 200
        assert (await health.json())["database"] == "ok"

        asked = await session.post(
            server.make_url("/api/ask"), json={"question": "What is the minimum password length for company accounts?"}
        )
        assert asked.status == 200
        body = await asked.json()
        answer = body["answer"]
        assert answer["route"] == "answered"
        assert "14 characters" in answer["text"]
        assert "14 characters" in body["html"] and 'href="#src-' in body["html"]

        voted = await session.post(
            server.make_url("/api/feedback"),
            json={"trace_id": answer["trace_id"], "rating": "down", "comment": "too short"},
        )
        assert voted.status == 200

    trace = await candor.tracker.trace(answer["trace_id"])
    assert trace is not None
    assert trace["platform"] == "web"
    assert [(f["rating"], f["comment"]) for f in trace["feedback"]] == [(-1, "too short")]


async def test_a_restricted_question_from_the_page_reads_public_documents_only(server: TestServer) -> None:
    async with aiohttp.ClientSession() as session:
        asked = await session.post(server.make_url("/api/ask"), json={"question": SALARY})
        answer = (await asked.json())["answer"]
    assert answer["route"] == "abstained"
    assert "£" not in answer["text"]


async def test_only_the_browser_that_asked_can_vote_on_the_answer(candor: Candor, server: TestServer) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as asker:
        asked = await asker.post(server.make_url("/api/ask"), json={"question": "How long is the notice period?"})
        trace_id = (await asked.json())["answer"]["trace_id"]
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as stranger:
            await stranger.get(server.make_url("/"))  # a browser of its own, with its own id
            voted = await stranger.post(server.make_url("/api/feedback"), json={"trace_id": trace_id, "rating": "down"})
            assert voted.status == 404  # as for an answer it never saw: nothing says whose it is
        own = await asker.post(server.make_url("/api/feedback"), json={"trace_id": trace_id, "rating": "up"})
        assert own.status == 200
    trace = await candor.tracker.trace(trace_id)
    assert trace is not None and [f["rating"] for f in trace["feedback"]] == [1]
