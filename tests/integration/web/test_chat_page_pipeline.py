"""The chat page on the real pipeline: `build_app(candor)` on a real socket, the sample handbook in
the embedded Postgres, questions and votes over HTTP, the vote stored on the trace."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.server import build_app
from rag.runtime import Candor
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
async def server(candor: Candor) -> AsyncIterator[TestServer]:
    kb = await candor.knowledge_base(f"web-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    test_server = TestServer(build_app(candor), host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


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
        asked = await session.post(
            server.make_url("/api/ask"),
            json={"question": "What is the salary band for an L3 Senior Software Engineer?"},
        )
        answer = (await asked.json())["answer"]
    assert answer["route"] == "abstained"
    assert "£" not in answer["text"]
