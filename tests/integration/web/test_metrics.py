"""`/metrics` over real HTTP on the real pipeline: what an answer, a refusal, a gate, a model call,
the ledger and the spool add; who may scrape it."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.server import build_app
from bot.web.identity import AnonymousVisitors
from rag.model.answers import Answer, ModelCall, Question
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.tracking.limits import QuestionLimits
from rag.tracking.metrics import Metrics
from tests.fakes.teams_server import ingest_handbook
from tests.integration.tracking.test_limits import away_from_a_window_edge

TOKEN = "a-metrics-token-of-some-length"
QUESTION = "What is the minimum password length for company accounts?"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "metrics")


@pytest.fixture
async def core(candor: Candor, handbook: KnowledgeBase) -> Candor:
    """Fresh counters; one question per browser address per hour, so a second is refused."""
    await away_from_a_window_edge(3600)
    limits = QuestionLimits(candor.store.engine, per_user=1, per_conversation=100, window_seconds=3600)
    return dataclasses.replace(candor, limits=limits, metrics=Metrics(spool_size=candor.tracker.spool_stats))


@pytest.fixture
async def server(core: Candor) -> AsyncIterator[TestServer]:
    assert core.metrics is not None
    app = build_app(core, chat=AnonymousVisitors(), metrics=core.metrics, admin_token=TOKEN, reports=core)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


def sample(exposition: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition (labels in any order)."""
    for line in exposition.splitlines():
        found = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if found is None:
            continue
        present = dict(re.findall(r'(\w+)="([^"]*)"', found.group(1) or ""))
        if present == labels:
            return float(found.group(2))
    raise AssertionError(f"no sample {name}{labels}")


async def test_an_answer_and_a_refusal_are_counted_and_the_scrape_needs_the_token(
    core: Candor, server: TestServer
) -> None:
    address = f"127.0.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250 + 1}"
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(connector=connector) as browser:
        answered = await browser.post(server.make_url("/api/ask"), json={"question": QUESTION})
        assert answered.status == 200
        refused = await browser.post(server.make_url("/api/ask"), json={"question": QUESTION})
        assert refused.status == 429
    assert core.metrics is not None
    await core.metrics.refresh_ledger(core.store.engine)

    async with aiohttp.ClientSession() as scraper:
        anonymous = await scraper.get(server.make_url("/metrics"))
        assert anonymous.status == 401 and "candor_" not in await anonymous.text()
        wrong = await scraper.get(server.make_url("/metrics"), headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401
        scraped = await scraper.get(server.make_url("/metrics"), headers={"Authorization": f"Bearer {TOKEN}"})
        assert scraped.status == 200 and scraped.headers["Content-Type"].startswith("text/plain")
        text = await scraped.text()

    assert sample(text, "candor_questions_total", platform="web", route="answered") == 1
    assert sample(text, "candor_questions_refused_total", platform="web", reason="rate_limited") == 1
    assert sample(text, "candor_gate_outcomes_total", gate="retrieval_score", outcome="passed") == 1
    assert sample(text, "candor_answer_seconds_count", platform="web") == 1
    assert sample(text, "candor_stage_seconds_count", stage="retrieve") >= 1
    assert sample(text, "candor_ledger_claims", platform="slack") >= 0
    assert sample(text, "candor_spool_files") == 0
    assert QUESTION not in text and address not in text  # nothing a person typed, no ids


async def test_without_a_token_metrics_are_served_only_on_a_loopback_server(core: Candor) -> None:
    assert core.metrics is not None
    for open_metrics, status in ((False, 404), (True, 200)):
        app = build_app(core, metrics=core.metrics, open_metrics=open_metrics)
        async with TestServer(app, host="127.0.0.1") as test_server, aiohttp.ClientSession() as session:
            response = await session.get(test_server.make_url("/metrics"))
            assert response.status == status


def test_model_calls_tokens_and_cost_are_counted() -> None:
    metrics = Metrics()
    calls = (
        ModelCall("writer", "gpt-x", 900, 120, 850.0, "ok", cost=0.0021),
        ModelCall("judge", "judge-y", 300, 20, 400.0, "malformed"),
    )
    answer = Answer(question="q", route="low_confidence", text="t", model_calls=calls, timings_ms={"total": 1500.0})
    metrics.answered(Question("q", platform="slack"), answer)
    text = metrics.exposition().decode()
    assert sample(text, "candor_model_calls_total", purpose="writer", outcome="ok") == 1
    assert sample(text, "candor_model_calls_total", purpose="judge", outcome="malformed") == 1
    assert sample(text, "candor_model_tokens_total", direction="in") == 1200
    assert sample(text, "candor_model_cost_total") == pytest.approx(0.0021)
    assert sample(text, "candor_answer_seconds_sum", platform="slack") == pytest.approx(1.5)
    assert sample(text, "candor_questions_total", platform="slack", route="low_confidence") == 1
