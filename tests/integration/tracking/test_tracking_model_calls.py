"""Model calls and what they cost, in the gate log on the real embedded Postgres (migration 0007).

Every language-model request made for an answer is a `model_calls` row; the trace carries the
answer's totals: tokens summed (0 without calls), cost summed (0.0 without calls, NULL when a call
was to an unpriced model). Spooled records replay with their calls; a record spooled before calls
were traced replays with its totals unknown (NULL), not zero.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from rag.model.answers import ModelCall
from rag.runtime import Candor
from rag.store.migrate import upgrade_to_head
from rag.tracking import TraceStore
from tests.integration.tracking.test_tracking import (
    CONFIG,
    MODELS,
    downgrade,
    make_answer,
    make_question,
    rows_of,
    spooled,
)

WRITER = ModelCall("writer", "gpt-4o-mini", 1200, 150, 812.5, "ok", "json_schema", cost=0.00027)
JUDGE = ModelCall("judge", "local-llama", 900, 40, 430.25, "malformed", "json_object", "no verdict for claim 2")
"""Unpriced (cost None) and malformed: its tokens were spent all the same."""

WRITER_ROW = {
    "position": 0,
    "purpose": "writer",
    "model": "gpt-4o-mini",
    "prompt_tokens": 1200,
    "completion_tokens": 150,
    "ms": 812.5,
    "outcome": "ok",
    "mode": "json_schema",
    "error": None,
    "cost": 0.00027,
}
JUDGE_ROW = {
    "position": 1,
    "purpose": "judge",
    "model": "local-llama",
    "prompt_tokens": 900,
    "completion_tokens": 40,
    "ms": 430.25,
    "outcome": "malformed",
    "mode": "json_object",
    "error": "no verdict for claim 2",
    "cost": None,
}


@pytest.fixture
def store(candor: Candor, tmp_path: Path) -> TraceStore:
    return TraceStore(candor.store.engine, tmp_path / "spool")


@pytest.fixture
async def unreachable() -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    yield engine
    await engine.dispose()


def totals(trace: dict[str, object]) -> tuple[object, object, object]:
    return trace["prompt_tokens"], trace["completion_tokens"], trace["cost"]


async def test_model_calls_read_back_exactly_with_the_answers_totals(store: TraceStore) -> None:
    answer = make_answer(model_calls=(WRITER, JUDGE))

    assert await store.record(make_question(), answer, config=CONFIG, models=MODELS) is True

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["model_calls"] == [WRITER_ROW, JUDGE_ROW]
    assert totals(trace) == (2100, 190, None), "one call unpriced: the cost is unknown, not understated"
    assert trace["answer"]["model_calls"] == [WRITER.as_json(), JUDGE.as_json()]
    assert trace["answer"]["cost"] is None


async def test_calls_come_back_in_the_order_they_were_made_and_priced_calls_sum(
    store: TraceStore, candor: Candor
) -> None:
    retry = ModelCall("writer", "gpt-4o-mini", 1300, 160, 700.0, "ok", "json_object", cost=0.000291)
    skipped = ModelCall("judge", "gpt-4o-mini", 0, 0, 0.0, "skipped", "json_schema", "circuit open", cost=0.0)
    answer = make_answer(model_calls=(WRITER, retry, skipped))

    assert await store.record(make_question(), answer, config={}, models={})

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert [(c["position"], c["mode"], c["outcome"]) for c in trace["model_calls"]] == [
        (0, "json_schema", "ok"),
        (1, "json_object", "ok"),
        (2, "json_schema", "skipped"),
    ]
    assert trace["model_calls"][2]["error"] == "circuit open"
    assert totals(trace) == (2500, 310, 0.00027 + 0.000291 + 0.0)
    assert trace["cost"] == answer.cost
    assert await rows_of(candor, "model_calls", answer.trace_id) == 3


async def test_an_offline_answer_made_no_calls_and_cost_nothing(store: TraceStore) -> None:
    answer = make_answer()

    assert await store.record(make_question(), answer, config={}, models={})

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["model_calls"] == []
    assert totals(trace) == (0, 0, 0.0)


async def test_deleting_a_trace_deletes_its_model_calls(store: TraceStore, candor: Candor) -> None:
    answer = make_answer(model_calls=(WRITER, JUDGE))
    assert await store.record(make_question(), answer, config={}, models={})

    async with candor.store.engine.begin() as conn:
        await conn.execute(text("DELETE FROM traces WHERE id = CAST(:id AS uuid)"), {"id": answer.trace_id})

    assert await rows_of(candor, "model_calls", answer.trace_id) == 0


# --- the spool -----------------------------------------------------------------------------------


async def test_a_spooled_trace_replays_with_its_model_calls(store: TraceStore, unreachable: AsyncEngine) -> None:
    answer = make_answer(model_calls=(WRITER, JUDGE))

    assert await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={}) is False
    saved = json.loads((store.spool_dir / f"trace-{answer.trace_id}.json").read_text())
    assert saved["model_calls"] == [WRITER_ROW, JUDGE_ROW]
    assert totals(saved["trace"]) == (2100, 190, None)

    assert await store.replay_spool() == 1

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["recorded_late"] is True
    assert trace["model_calls"] == [WRITER_ROW, JUDGE_ROW]
    assert totals(trace) == (2100, 190, None)
    assert spooled(store.spool_dir) == []


async def test_a_trace_spooled_before_model_calls_were_traced_replays_with_unknown_totals(
    store: TraceStore, unreachable: AsyncEngine
) -> None:
    answer = make_answer(model_calls=(WRITER,))
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})
    path = store.spool_dir / f"trace-{answer.trace_id}.json"
    saved = json.loads(path.read_text())
    del saved["model_calls"]  # the spool format of the previous release
    for key in ("prompt_tokens", "completion_tokens", "cost"):
        del saved["trace"][key]
    path.write_text(json.dumps(saved))

    assert await store.replay_spool() == 1

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["recorded_late"] is True
    assert trace["model_calls"] == []
    assert totals(trace) == (None, None, None), "not recorded, which is not the same as none"
    assert trace["answer"]["model_calls"] == [WRITER.as_json()], "the answer itself still lists them"
    assert not (store.spool_dir / "rejected").exists()


# --- the migration -------------------------------------------------------------------------------


async def test_migration_0007_downgrades_and_upgrades_leaving_older_traces_unknown(candor: Candor) -> None:
    """On a database of its own on the same server, so the session's tables are not touched."""
    name = f"migration_{uuid.uuid4().hex[:10]}"
    admin = candor.store.engine.execution_options(isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = candor.store.engine.url.set(database=name).render_as_string(hide_password=False)
    older = str(uuid.uuid4())
    try:
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert await model_call_columns(url) == {"model_calls": True, "traces": 3}
        await asyncio.to_thread(downgrade, url, "0006")
        assert await model_call_columns(url) == {"model_calls": False, "traces": 0}
        await execute(
            url,
            "INSERT INTO traces (id, question, route, answer_text, answer) "
            "VALUES (CAST(:id AS uuid), 'q?', 'abstained', 'I don''t know', '{}')",
            {"id": older},
        )
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert await model_call_columns(url) == {"model_calls": True, "traces": 3}
        row = await execute(
            url, "SELECT prompt_tokens, completion_tokens, cost FROM traces WHERE id = CAST(:id AS uuid)", {"id": older}
        )
        assert row == (None, None, None)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def model_call_columns(url: str) -> dict[str, object]:
    found = await execute(
        url,
        "SELECT to_regclass('public.model_calls') IS NOT NULL, (SELECT count(*) FROM information_schema.columns "
        "WHERE table_name = 'traces' AND column_name IN ('prompt_tokens', 'completion_tokens', 'cost'))",
        {},
    )
    assert found is not None
    return {"model_calls": found[0], "traces": found[1]}


async def execute(url: str, sql: str, params: dict[str, str]) -> tuple[object, ...] | None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(sql), params)
            row = result.first() if result.returns_rows else None
            return None if row is None else tuple(row)
    finally:
        await engine.dispose()
