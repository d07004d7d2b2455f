"""The gate log on the real embedded Postgres: traces read back whole, votes upsert, nothing is lost.

"Database unavailable" is a real second engine pointed at a port nobody listens on, so `record`
meets the same connection error it would meet in production; the spool it writes is then replayed
into the real database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import stat
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from rag.errors import TrackingError, UnknownTrace
from rag.model.answers import (
    Answer,
    AnswerSentence,
    Conflict,
    DroppedSentence,
    Feedback,
    GateOutcome,
    Question,
    Source,
)
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.migrate import MIGRATIONS_DIR, upgrade_to_head
from rag.tracking import TraceStore

CONFIG = {"retrieval_threshold": 0.35, "faithfulness_threshold": 0.7, "top_k": 8}
MODELS = {"embedder": "minilm", "reranker": "lexical-embedding", "synthesizer": "extractive", "critic": "lexical"}
TRACKING_TABLES = {"traces", "gate_outcomes", "trace_sources", "dropped_sentences", "feedback", "eval_runs"}


def make_question() -> Question:
    return Question(
        text="How many days of annual leave do I get, and can I carry them over?",
        scope=AccessScope(frozenset({"staff"}), frozenset({"handbook"})),
        asker="U123",
        platform="slack",
        conversation="T1/C2",
        thread="1733000000.000100",
    )


def make_answer(**overrides: Any) -> Answer:
    """Two sentences citing two sources, three gates over two attempts, one dropped sentence, one conflict."""
    fields: dict[str, Any] = {
        "question": "How many days of annual leave do I get, and can I carry them over?",
        "route": "answered",
        "text": "Full-time staff get 24 days of annual leave [1]. Up to 5 unused days carry over [2].",
        "sentences": (
            AnswerSentence("Full-time staff get 24 days of annual leave.", (1,)),
            AnswerSentence("Up to 5 unused days carry over to the next year.", (2,)),
        ),
        "sources": (
            Source(
                n=1,
                document="/docs/handbook/leave-2026.md",
                title="Leave policy 2026",
                heading="Annual leave",
                excerpt="Full-time staff receive 24 days of annual leave.",
                score=0.83,
                url="https://intranet.example/leave",
                effective_date=date(2026, 1, 1),
                chunk_id=101,
                document_id=11,
            ),
            Source(
                n=2,
                document="/docs/handbook/leave-2024.md",
                title="Leave policy 2024",
                heading="Carry-over",
                excerpt="Staff may carry over up to 5 unused days; full-time staff receive 20 days.",
                score=0.61,
                effective_date=date(2024, 3, 1),
                chunk_id=202,
                document_id=12,
            ),
        ),
        "conflicts": (
            Conflict(
                note="The sources disagree on annual leave: 24 days (2026) against 20 days (2024).",
                values=("24 days", "20 days"),
                sources=(1, 2),
                preferred=1,
                reason="newer effective date",
            ),
        ),
        "gates": (
            GateOutcome("retrieval_score", True, 0.71, attempt=1, details={"best_cosine": 0.71}),
            GateOutcome(
                "faithfulness", False, 0.5, attempt=1, details={"unsupported": 2, "checked_on": date(2026, 12, 1)}
            ),
            GateOutcome("faithfulness", True, 0.92, attempt=2, details={"unsupported": 0}),
        ),
        "timings_ms": {"retrieve": 12.5, "rerank": 30.25, "synthesise": 4.0, "critic": 20.0, "total": 66.75},
        "rewritten_question": "How many days of annual leave do staff get, and can leave be carried over?",
        "parts": ("How many days of annual leave do I get?", "Can I carry them over?"),
        "dropped": (
            DroppedSentence(
                text="Leave never expires.",
                citations=(2,),
                attempt=1,
                score=0.12,
                reasons=("no cited passage supports it", "contradicts source 2"),
            ),
        ),
        "created_at": datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
    }
    fields.update(overrides)
    return Answer(**fields)


@pytest.fixture
def store(candor: Candor, tmp_path: Path) -> TraceStore:
    return TraceStore(candor.store.engine, tmp_path / "spool")


@pytest.fixture
async def unreachable() -> AsyncIterator[AsyncEngine]:
    """An engine for a Postgres that is not there: port 1 on the loopback refuses at once."""
    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    yield engine
    await engine.dispose()


async def rows_of(candor: Candor, table: str, trace_id: str) -> int:
    """Rows in one tracking table for one trace, counted in SQL (not through `TraceStore`)."""
    sql = text(f"SELECT count(*) FROM {table} WHERE trace_id = CAST(:trace_id AS uuid)")
    async with candor.store.engine.connect() as conn:
        return int((await conn.execute(sql, {"trace_id": trace_id})).scalar_one())


def spooled(spool: Path) -> list[str]:
    return sorted(path.name for path in spool.glob("*.json")) if spool.is_dir() else []


# --- recording and reading back ------------------------------------------------------------------


async def test_a_recorded_answer_reads_back_with_every_part(store: TraceStore) -> None:
    answer = make_answer()

    assert await store.record(make_question(), answer, config=CONFIG, models=MODELS) is True

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["id"] == answer.trace_id
    assert trace["created_at"] == "2026-12-01T09:30:00+00:00"
    assert (trace["platform"], trace["asker"], trace["conversation"], trace["thread"]) == (
        "slack",
        "U123",
        "T1/C2",
        "1733000000.000100",
    )
    assert trace["question"] == make_question().text
    assert trace["rewritten_question"] == answer.rewritten_question
    assert trace["parts"] == list(answer.parts)
    assert trace["scope"] == {"groups": ["staff"], "knowledge_bases": ["handbook"]}
    assert trace["route"] == "answered"
    assert trace["answer_text"] == answer.text
    assert trace["config"] == CONFIG and trace["models"] == MODELS
    assert trace["timings"] == answer.timings_ms and trace["total_ms"] == 66.75
    assert trace["attempts"] == 2
    assert trace["recorded_late"] is False

    stored_answer = json.loads(json.dumps(answer.as_json(), default=str))
    assert trace["answer"] == stored_answer
    assert trace["answer"]["conflicts"] == [
        {
            "note": "The sources disagree on annual leave: 24 days (2026) against 20 days (2024).",
            "values": ["24 days", "20 days"],
            "sources": [1, 2],
            "preferred": 1,
            "reason": "newer effective date",
        }
    ]
    assert [s["text"] for s in trace["answer"]["sentences"]] == [s.text for s in answer.sentences]

    assert trace["gates"] == [
        {
            "attempt": 1,
            "position": 0,
            "gate": "retrieval_score",
            "passed": True,
            "score": 0.71,
            "details": {"best_cosine": 0.71},
        },
        {
            "attempt": 1,
            "position": 1,
            "gate": "faithfulness",
            "passed": False,
            "score": 0.5,
            "details": {"unsupported": 2, "checked_on": "2026-12-01"},
        },
        {
            "attempt": 2,
            "position": 2,
            "gate": "faithfulness",
            "passed": True,
            "score": 0.92,
            "details": {"unsupported": 0},
        },
    ]
    assert trace["sources"] == [
        {
            "n": 1,
            "chunk_id": 101,
            "document_id": 11,
            "document": "/docs/handbook/leave-2026.md",
            "title": "Leave policy 2026",
            "heading": "Annual leave",
            "effective_date": "2026-01-01",
            "score": 0.83,
        },
        {
            "n": 2,
            "chunk_id": 202,
            "document_id": 12,
            "document": "/docs/handbook/leave-2024.md",
            "title": "Leave policy 2024",
            "heading": "Carry-over",
            "effective_date": "2024-03-01",
            "score": 0.61,
        },
    ]
    assert trace["dropped"] == [
        {
            "attempt": 1,
            "text": "Leave never expires.",
            "citations": [2],
            "score": 0.12,
            "reasons": ["no cited passage supports it", "contradicts source 2"],
            "stage": "critic",
        }
    ]
    assert trace["feedback"] == []


async def test_gates_come_back_ordered_by_attempt_then_position(store: TraceStore) -> None:
    gates = (
        GateOutcome("faithfulness", True, 0.9, attempt=2),
        GateOutcome("retrieval_score", True, 0.7, attempt=1),
        GateOutcome("premise", True, 1.0, attempt=1),
    )
    answer = make_answer(gates=gates, dropped=())
    assert await store.record(make_question(), answer, config={}, models={})

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert [(g["attempt"], g["position"], g["gate"]) for g in trace["gates"]] == [
        (1, 1, "retrieval_score"),
        (1, 2, "premise"),
        (2, 0, "faithfulness"),
    ]


async def test_an_abstention_with_no_parts_and_no_scope_is_recorded(store: TraceStore) -> None:
    answer = make_answer(
        route="abstained",
        text="I don't know - the knowledge base does not cover this.",
        sentences=(),
        sources=(),
        conflicts=(),
        gates=(GateOutcome("retrieval_score", False, 0.12, attempt=1),),
        parts=(),
        dropped=(),
        created_at=None,
    )
    before = datetime.now(UTC)

    assert await store.record(Question("What is the moon made of?"), answer, config={}, models={})

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert (trace["route"], trace["scope"], trace["parts"], trace["platform"]) == ("abstained", None, [], "cli")
    assert datetime.fromisoformat(trace["created_at"]) >= before.replace(microsecond=0)
    assert (trace["sources"], trace["dropped"], len(trace["gates"])) == ([], [], 1)


async def test_an_unknown_or_malformed_trace_id_reads_as_none(store: TraceStore) -> None:
    assert await store.trace(str(uuid.uuid4())) is None
    assert await store.trace("not-a-uuid") is None


async def test_a_trace_id_that_is_not_a_uuid_is_refused(store: TraceStore) -> None:
    with pytest.raises(TrackingError, match="not a UUID"):
        await store.record(make_question(), make_answer(trace_id="trace-7"), config={}, models={})
    assert spooled(store.spool_dir) == []


# --- feedback ------------------------------------------------------------------------------------


async def test_a_changed_vote_replaces_the_earlier_one(store: TraceStore, candor: Candor) -> None:
    answer = make_answer()
    assert await store.record(make_question(), answer, config={}, models={})

    await store.record_feedback(Feedback(answer.trace_id, "up", user="U1", platform="slack"))
    await store.record_feedback(Feedback(answer.trace_id, "down", user="U1", platform="slack", comment="outdated"))

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert [(f["user_id"], f["rating"], f["comment"]) for f in trace["feedback"]] == [("U1", -1, "outdated")]
    assert await rows_of(candor, "feedback", answer.trace_id) == 1


async def test_two_users_vote_separately_and_anonymous_votes_upsert(store: TraceStore) -> None:
    answer = make_answer()
    assert await store.record(make_question(), answer, config={}, models={})

    await store.record_feedback(Feedback(answer.trace_id, "up", user="U1"))
    await store.record_feedback(Feedback(answer.trace_id, "down", user="U2", platform="teams"))
    await store.record_feedback(Feedback(answer.trace_id, "up"))
    await store.record_feedback(Feedback(answer.trace_id, "down"))

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    votes = {(f["user_id"], f["rating"], f["platform"]) for f in trace["feedback"]}
    assert votes == {("U1", 1, "web"), ("U2", -1, "teams"), (None, -1, "web")}


async def test_feedback_on_an_unknown_trace_is_refused(store: TraceStore) -> None:
    with pytest.raises(UnknownTrace):
        await store.record_feedback(Feedback(str(uuid.uuid4()), "up", user="U1"))
    with pytest.raises(UnknownTrace):
        await store.record_feedback(Feedback("not-a-trace", "up", user="U1"))
    assert spooled(store.spool_dir) == [], "an unknown trace is an error, not an outage"


# --- the database unavailable: spool and replay ---------------------------------------------------


async def test_an_unreachable_database_spools_the_trace_and_replay_writes_it_late(
    store: TraceStore, unreachable: AsyncEngine, candor: Candor, caplog: pytest.LogCaptureFixture
) -> None:
    answer = make_answer()
    offline = TraceStore(unreachable, store.spool_dir)

    with caplog.at_level(logging.ERROR, logger="candor.tracking"):
        assert await offline.record(make_question(), answer, config=CONFIG, models=MODELS) is False

    assert spooled(store.spool_dir) == [f"trace-{answer.trace_id}.json"]
    saved = json.loads((store.spool_dir / f"trace-{answer.trace_id}.json").read_text())
    assert saved["trace"]["answer"] == json.loads(json.dumps(answer.as_json(), default=str))
    assert len(saved["gates"]) == 3 and len(saved["sources"]) == 2 and len(saved["dropped"]) == 1
    errors = [r for r in caplog.records if r.name == "candor.tracking" and r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].__dict__["trace_id"] == answer.trace_id
    assert errors[0].__dict__["spool_file"].endswith(f"trace-{answer.trace_id}.json")
    assert await store.trace(answer.trace_id) is None

    assert await store.replay_spool() == 1

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert trace["recorded_late"] is True
    assert trace["created_at"] == "2026-12-01T09:30:00+00:00", "the answer's time, not the replay's"
    assert trace["answer"] == saved["trace"]["answer"]
    assert [g["gate"] for g in trace["gates"]] == ["retrieval_score", "faithfulness", "faithfulness"]
    assert len(trace["sources"]) == 2 and len(trace["dropped"]) == 1
    assert spooled(store.spool_dir) == []
    assert await store.replay_spool() == 0
    assert await rows_of(candor, "gate_outcomes", answer.trace_id) == 3


async def test_a_trace_spooled_before_dropped_sentences_had_a_stage_replays_as_the_critics(
    store: TraceStore, unreachable: AsyncEngine
) -> None:
    answer = make_answer()
    assert (
        await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config=CONFIG, models=MODELS)
        is False
    )
    path = store.spool_dir / f"trace-{answer.trace_id}.json"
    saved = json.loads(path.read_text())
    for dropped in saved["dropped"]:
        del dropped["stage"]  # the spool format of the previous release
    path.write_text(json.dumps(saved))

    assert await store.replay_spool() == 1
    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert [d["stage"] for d in trace["dropped"]] == ["critic"]


async def test_a_trace_spooled_after_it_was_written_is_skipped_on_replay(
    store: TraceStore, unreachable: AsyncEngine, candor: Candor
) -> None:
    answer = make_answer()
    assert await store.record(make_question(), answer, config={}, models={})
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})

    assert await store.replay_spool() == 0

    assert spooled(store.spool_dir) == []
    trace = await store.trace(answer.trace_id)
    assert trace is not None and trace["recorded_late"] is False
    assert await rows_of(candor, "gate_outcomes", answer.trace_id) == 3


async def test_feedback_is_spooled_too_and_never_overrides_a_newer_vote(
    store: TraceStore, unreachable: AsyncEngine
) -> None:
    answer = make_answer()
    offline = TraceStore(unreachable, store.spool_dir)
    assert not await offline.record(make_question(), answer, config={}, models={})
    await offline.record_feedback(Feedback(answer.trace_id, "up", user="U1"))
    await offline.record_feedback(Feedback(answer.trace_id, "down", user="U2"))
    names = spooled(store.spool_dir)
    assert len(names) == 3 and sum(name.startswith("feedback-") for name in names) == 2

    assert await store.replay_spool() == 3, "the trace first, then the votes that name it"

    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert {(f["user_id"], f["rating"]) for f in trace["feedback"]} == {("U1", 1), ("U2", -1)}

    # U2 votes up while the database is away, then down once it is back: the late replay of the
    # older vote must not undo the newer one.
    await offline.record_feedback(Feedback(answer.trace_id, "up", user="U2"))
    await store.record_feedback(Feedback(answer.trace_id, "down", user="U2"))
    assert await store.replay_spool() == 0
    trace = await store.trace(answer.trace_id)
    assert trace is not None
    assert {(f["user_id"], f["rating"]) for f in trace["feedback"]} == {("U1", 1), ("U2", -1)}
    assert spooled(store.spool_dir) == []


async def test_a_corrupt_spool_file_is_moved_aside_and_the_others_replay(
    store: TraceStore, unreachable: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    answer = make_answer()
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})
    corrupt = store.spool_dir / f"trace-{uuid.uuid4()}.json"
    corrupt.write_text('{"kind": "trace", "format": 1, "trace": {"id": ')
    wrong_shape = store.spool_dir / f"trace-{uuid.uuid4()}.json"
    wrong_shape.write_text(json.dumps({"kind": "trace", "format": 1, "trace": {"id": str(uuid.uuid4())}}))
    bad_value = json.loads((store.spool_dir / f"trace-{answer.trace_id}.json").read_text())
    bad_value["trace"]["id"] = str(uuid.uuid4())
    bad_value["trace"]["route"] = "guessed"  # the database's CHECK refuses it
    bad_route = store.spool_dir / f"trace-{bad_value['trace']['id']}.json"
    bad_route.write_text(json.dumps(bad_value))

    with caplog.at_level(logging.ERROR, logger="candor.tracking"):
        assert await store.replay_spool() == 1

    assert spooled(store.spool_dir) == []
    rejected = store.spool_dir / "rejected"
    assert sorted(p.name for p in rejected.iterdir()) == sorted([corrupt.name, wrong_shape.name, bad_route.name])
    assert (rejected / corrupt.name).read_text() == '{"kind": "trace", "format": 1, "trace": {"id": '
    assert len([r for r in caplog.records if "rejected" in r.getMessage()]) == 3
    assert await store.trace(answer.trace_id) is not None
    assert await store.trace(bad_value["trace"]["id"]) is None


async def test_replay_against_an_unreachable_database_keeps_the_spool(
    store: TraceStore, unreachable: AsyncEngine
) -> None:
    offline = TraceStore(unreachable, store.spool_dir)
    assert not await offline.record(make_question(), make_answer(), config={}, models={})

    with pytest.raises(TrackingError, match="unavailable"):
        await offline.replay_spool()

    assert len(spooled(store.spool_dir)) == 1
    assert not (store.spool_dir / "rejected").exists()
    assert await store.replay_spool() == 1


async def test_when_the_spool_cannot_be_written_either_record_raises(unreachable: AsyncEngine, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    offline = TraceStore(unreachable, blocker / "spool")

    with pytest.raises(TrackingError, match="nor spooled"):
        await offline.record(make_question(), make_answer(), config={}, models={})


# --- eval runs -----------------------------------------------------------------------------------


async def test_an_eval_run_is_recorded_and_listed_newest_first(store: TraceStore) -> None:
    golden = f"golden/{uuid.uuid4().hex}.yaml"
    first = await store.record_eval_run(
        golden=golden,
        knowledge_base="handbook",
        config=CONFIG,
        summary={"questions": 2, "answered_correctly": 1, "hallucination_rate": 0.0, "nan_score": float("nan")},
        per_question=[
            {"id": "leave-1", "route": "answered", "passed": True},
            {"id": "moon-1", "route": "abstained", "passed": False},
        ],
    )
    second = await store.record_eval_run(
        golden=golden, knowledge_base=None, config={}, summary={"questions": 0}, per_question=[]
    )
    assert second > first

    runs = [run for run in await store.eval_runs(limit=100) if run["golden"] == golden]
    assert [run["id"] for run in runs] == [second, first]
    older = runs[1]
    assert older["knowledge_base"] == "handbook" and older["config"] == CONFIG
    assert older["summary"] == {"questions": 2, "answered_correctly": 1, "hallucination_rate": 0.0, "nan_score": None}
    assert [q["id"] for q in older["per_question"]] == ["leave-1", "moon-1"]
    assert datetime.fromisoformat(older["created_at"]).tzinfo is not None
    assert runs[0]["knowledge_base"] is None and runs[0]["per_question"] == []
    assert len(await store.eval_runs(limit=1)) == 1


# --- the migration -------------------------------------------------------------------------------


async def test_the_migration_downgrades_and_upgrades_again(candor: Candor) -> None:
    """On a database of its own on the same server, so the session's tables are not touched."""
    name = f"migration_{uuid.uuid4().hex[:10]}"
    admin = candor.store.engine.execution_options(isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = candor.store.engine.url.set(database=name).render_as_string(hide_password=False)
    try:
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert await tables(url) >= TRACKING_TABLES
        await asyncio.to_thread(downgrade, url, "0001")
        remaining = await tables(url)
        assert not TRACKING_TABLES & remaining and "chunks" in remaining
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert await tables(url) >= TRACKING_TABLES
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def tables(url: str) -> set[str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
            return {row[0] for row in rows}
    finally:
        await engine.dispose()


def downgrade(url: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
    finally:
        engine.dispose()


# --- the spool while serving: votes on spooled answers, replay without a restart, its limits ---------


async def test_a_vote_on_an_answer_still_in_the_spool_is_spooled_and_replayed_after_it(
    store: TraceStore, unreachable: AsyncEngine
) -> None:
    """The database came back between the answer and the vote: the trace is still spooled, so the vote
    would name a trace the database does not have yet. It waits in the spool too, and neither is lost."""
    answer = make_answer()
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})

    await store.record_feedback(Feedback(answer.trace_id, "down", user="U7", comment="outdated"))

    assert sorted(spooled(store.spool_dir))[1] == f"trace-{answer.trace_id}.json"
    assert len(spooled(store.spool_dir)) == 2
    assert await store.replay_spool() == 2
    trace = await store.trace(answer.trace_id)
    assert trace is not None and [(f["rating"], f["user_id"]) for f in trace["feedback"]] == [(-1, "U7")]


async def test_serving_replays_the_spool_once_the_database_is_back(
    store: TraceStore, unreachable: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    answer = make_answer()
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})
    with caplog.at_level(logging.WARNING, logger="candor.tracking"):
        replaying = asyncio.create_task(store.replay_while_serving(0.1))
        try:
            for _ in range(100):
                if await store.trace(answer.trace_id) is not None:
                    break
                await asyncio.sleep(0.1)
        finally:
            replaying.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await replaying
    trace = await store.trace(answer.trace_id)
    assert trace is not None and trace["recorded_late"] is True
    assert spooled(store.spool_dir) == []
    assert any("spooled while the database was away" in r.getMessage() for r in caplog.records)


async def test_spool_files_are_the_process_users_alone(store: TraceStore, unreachable: AsyncEngine) -> None:
    answer = make_answer()
    assert not await TraceStore(unreachable, store.spool_dir).record(make_question(), answer, config={}, models={})
    assert stat.S_IMODE(store.spool_dir.stat().st_mode) == 0o700
    (path,) = store.spool_dir.glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_full_spool_loses_the_record_loudly(
    store: TraceStore, unreachable: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    offline = TraceStore(unreachable, store.spool_dir, spool_max_bytes=6_000)
    first, second = make_answer(), make_answer(trace_id=str(uuid.uuid4()))
    assert not await offline.record(make_question(), first, config={}, models={})
    assert (store.spool_dir / f"trace-{first.trace_id}.json").stat().st_size > 3_000  # room for one only
    with caplog.at_level(logging.ERROR, logger="candor.tracking"), pytest.raises(TrackingError, match="spool is full"):
        await offline.record(make_question(), second, config={}, models={})
    assert spooled(store.spool_dir) == [f"trace-{first.trace_id}.json"]  # the earlier record is kept
    lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
    assert lost and second.trace_id in lost[0] and "CANDOR_SPOOL_MAX_MB" in lost[0]
