"""`candor audit answers`: sampled re-verification on answers made by the real pipeline, checked against the
stored rows.

Answers come from the offline pipeline over the sample handbook (gate: `evidence-verifier-v1`), each test
on days of its own in April 2017 (nothing else in the session's database is dated there) and in a
knowledge base of its own. The audit's LLM judge is the real `openai` client on the fake OpenAI server:
it calls every sentence naming `MARKER` unsupported, answers a sentence naming `UNREADABLE` with
something that is not JSON, and supports the rest. Expected numbers are computed here from the traces'
stored sentences and that rule, never from the report's SQL.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.render.report_text import render_report
from rag.errors import ConfigError, StoreError
from rag.insights.audit.answers import AuditRequest, relaxed_rechecker, run_audit, stored_scope
from rag.insights.audit.labels import export_labels, import_labels
from rag.insights.audit.verifier import AuditVerifier, audit_spec, build_audit_verifier, independent
from rag.insights.relaxed import recheck
from rag.insights.report.audit_measures import wilson_interval
from rag.insights.report.build import build_report, report_window
from rag.model.answers import Question
from rag.model.evidence import Ranked
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli
from tests.conftest import REPO
from tests.fakes.openai_server import ChatRequest, FakeOpenAI, ThreadedFakeOpenAI
from tests.fakes.teams_server import ingest_handbook
from tests.fakes.writers import Models, judges
from tests.integration.insights.test_report import execute
from tests.integration.pipeline.test_llm_pipeline import core

MARKER = "Northwind Labs"
UNREADABLE = "laptops"
DELIVERED = (
    "How much paid parental leave does the primary carer get?",
    "How many days of annual leave do full-time employees get?",
    "What is the minimum password length for company accounts?",
    "How often do we get a new work laptop?",
    "What is the daily meal allowance for international travel, and how quickly are approved expenses paid back?",
    "When was Northwind Labs founded, and who is the CEO?",
    "What are the core hours for remote employees, and is there a gym or wellness allowance?",
)
ABSTAINED = (
    "How much does the Platinum plan cost per user per month?",
    "Is there free parking at the Leeds office?",
)
GATE = "evidence-verifier-v1"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "audit")


def day(n: int) -> datetime:
    """The n-th day of April 2017, 09:00 UTC (each test has days of its own)."""
    return datetime(2017, 4, n, 9, 0, tzinfo=UTC)


def window(n: int, kb: KnowledgeBase, **more: Any) -> AuditRequest:
    return AuditRequest(day(n).replace(hour=0), day(n + 1).replace(hour=0), knowledge_base=kb.name, **more)


async def seed(candor: Candor, kb: KnowledgeBase, when: datetime, questions: Iterable[str]) -> list[str]:
    """Ask each question through the real pipeline (scoped to `kb`), then date its trace at `when`."""
    ids = []
    for minute, text in enumerate(questions):
        scope = AccessScope(frozenset(), frozenset([kb.name]))
        answer = await candor.answer(Question(text, scope=scope, platform="cli"))
        at = when + timedelta(minutes=minute)
        await execute(
            candor, "UPDATE traces SET created_at = :at WHERE id = CAST(:id AS uuid)", {"at": at, "id": answer.trace_id}
        )
        ids.append(answer.trace_id)
    return ids


async def delivered(candor: Candor, ids: Sequence[str]) -> list[tuple[str, int, str]]:
    """(trace, position, text) of every delivered sentence of these traces, from the stored rows."""
    rows = await execute(
        candor,
        "SELECT id::text AS id, route, answer FROM traces WHERE id::text = ANY(:ids) ORDER BY created_at",
        {"ids": list(ids)},
    )
    return [
        (row["id"], position, sentence["text"])
        for row in rows
        if row["route"] != "abstained"
        for position, sentence in enumerate(row["answer"]["sentences"])
    ]


async def audit_rows(candor: Candor, run_id: int) -> list[dict[str, Any]]:
    return await execute(
        candor,
        "SELECT trace_id::text AS trace_id, position, text, supported, reasons, independent FROM audit_sentences "
        "WHERE run_id = :run ORDER BY id",
        {"run": run_id},
    )


def sentence_of(request: ChatRequest) -> str:
    return request.user.split("Sentence: ", 1)[-1].split("\n\nEvidence:", 1)[0]


def audit_judge(request: ChatRequest) -> Any:
    """The fake audit model: unsupported when the sentence names MARKER, not JSON when it names UNREADABLE."""
    sentence = sentence_of(request)
    if UNREADABLE in sentence:
        return "I would rather not say."
    if MARKER in sentence:
        return {"supported": False, "reason": f"the evidence does not say {MARKER}"}
    return {"supported": True, "reason": "the evidence states it"}


def llm_auditor(candor: Candor, fake: FakeOpenAI, **settings: Any) -> AuditVerifier:
    chosen = {"audit_verifier": "openai:audit-model", "audit_base_url": fake.base_url, "llm_attempts": 1, **settings}
    return build_audit_verifier(candor.settings.model_copy(update=chosen), candor.embedder)


STRATIFIED = "stratified by day, weighted by delivered sentences"


def weighted(days: Iterable[tuple[int, int, int]]) -> tuple[float, dict[str, Any]]:
    """(delivered, judged, unsupported) of each day → the rate stratified by day and its 95% interval,
    written out here as docs/reporting.md states them: each day with a judged sentence weighted by the
    sentences it delivered; the interval from each day's share plus 2 unsupported and 2 supported."""
    judged = [d for d in days if d[1]]
    total = sum(d[0] for d in judged)
    rate = sum(d[0] / total * d[2] / d[1] for d in judged)
    adjusted = [(d[0] / total, (d[2] + 2) / (d[1] + 4), d[1] + 4) for d in judged]
    centre = sum(w * p for w, p, _ in adjusted)
    half = 1.959963984540054 * math.sqrt(sum(w * w * p * (1 - p) / n for w, p, n in adjusted))
    interval = {"low": round(max(0.0, centre - half), 4), "high": round(min(1.0, centre + half), 4)}
    return round(rate, 4), {**interval, "confidence": 0.95, "method": "stratified agresti-coull"}


def false_alarms() -> dict[str, Any]:
    """The relaxed re-check's false alarms as benchmarks/relaxed_recheck.py stored them."""
    calibration = json.loads((REPO / "rag" / "calibration.json").read_text(encoding="utf-8"))
    checked = calibration["relaxed_recheck"]["report_check"]

    def flagged(tally: dict[str, int]) -> dict[str, Any]:
        n = tally["unanswerable"] - tally["unanswerable_true_gap"]
        return {"n": n, "of": tally["unanswerable"], "rate": round(n / tally["unanswerable"], 4)}

    return {
        **flagged(checked["golden"]),
        "set": "sample/golden.yaml",
        "threshold": calibration["relaxed_threshold"],
        "date": calibration["relaxed_recheck"]["date"],
        "parts": flagged(checked["golden_parts"]),
    }


def wilson(n: int, of: int) -> dict[str, Any]:
    """The Wilson interval as the roots of its quadratic (another form than rag.insights.report.audit_measures')."""
    z = 1.959963984540054
    root = z * math.sqrt(n * (of - n) / of + z * z / 4)
    low, high = ((n + z * z / 2 - root) / (of + z * z), (n + z * z / 2 + root) / (of + z * z))
    return {"low": round(low, 4), "high": round(high, 4), "confidence": 0.95, "method": "wilson"}


# --- pure rules ------------------------------------------------------------------------------------------


def test_the_wilson_interval_matches_published_values() -> None:
    assert wilson_interval(2, 40) == {"low": 0.0138, "high": 0.165, "confidence": 0.95, "method": "wilson"}
    assert wilson_interval(0, 10) == {"low": 0.0, "high": 0.2775, "confidence": 0.95, "method": "wilson"}
    assert wilson_interval(10, 10) == {"low": 0.7225, "high": 1.0, "confidence": 0.95, "method": "wilson"}
    assert wilson_interval(0, 0) is None
    for n, of in ((1, 3), (7, 19), (50, 51)):
        assert wilson_interval(n, of) == wilson(n, of)
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def test_independence_is_judged_against_every_model_the_gate_combines() -> None:
    assert independent("evidence-verifier-v1", "llm-judge:audit-model")
    assert not independent("evidence-verifier-v1", "evidence-verifier-v1")
    assert not independent("llm-judge:gpt-x+evidence-verifier-v1", "llm-judge:gpt-x")
    assert not independent("llm-judge:gpt-x+evidence-verifier-v1", "evidence-verifier-v1")
    assert independent("llm-judge:gpt-x+cross-encoder:nli", "llm-judge:gpt-y")
    assert not independent(None, "llm-judge:gpt-y"), "an unrecorded gate cannot be shown to be another model"


def test_the_offline_fallback_of_every_gate_and_the_writers_model_are_not_independent() -> None:
    # a judge gate falls back to the offline verifier when its model fails; its name does not say so
    assert not independent("llm-judge:gpt-x", "evidence-verifier-v1")
    assert not independent("cross-encoder:nli", "evidence-verifier-v1")
    assert independent("llm-judge:gpt-x", "llm-judge:gpt-y")
    # a model judging what it wrote itself
    assert not independent("evidence-verifier-v1", "llm-judge:gpt-w", "llm-writer:gpt-w")
    assert independent("evidence-verifier-v1", "llm-judge:gpt-y", "llm-writer:gpt-w")
    assert independent("evidence-verifier-v1", "llm-judge:gpt-y", "extractive-v1")


def test_auto_picks_the_strongest_configured_verifier(candor: Candor) -> None:
    settings = candor.settings
    assert audit_spec(settings.model_copy(update={"audit_verifier": "auto", "judge": "evidence"})) == "evidence"
    assert audit_spec(settings.model_copy(update={"audit_verifier": "auto", "judge": "openai:j"})) == "openai:j"
    cross = settings.model_copy(update={"audit_verifier": "auto", "judge": "cross-encoder:/m"})
    assert audit_spec(cross) == "cross-encoder:/m"
    explicit = settings.model_copy(update={"audit_verifier": "openai:a", "judge": "openai:j"})
    assert audit_spec(explicit) == "openai:a"
    typo = settings.model_copy(update={"audit_verifier": "evidnce"})  # model_copy does not validate
    with pytest.raises(ConfigError, match="CANDOR_AUDIT_VERIFIER: 'evidnce' is none of"):
        build_audit_verifier(typo, candor.embedder)


def test_a_trace_without_a_stored_scope_is_rechecked_on_public_documents_only() -> None:
    assert stored_scope(None) == AccessScope.public()
    assert stored_scope({"groups": ["hr"], "knowledge_bases": ["a"]}) == AccessScope(
        frozenset(["hr"]), frozenset(["a"])
    )
    assert stored_scope({"groups": [], "knowledge_bases": None}) == AccessScope(frozenset(), None)


# --- the audit on stored answers -------------------------------------------------------------------------


async def test_an_independent_judge_measures_the_rate_the_stored_sentences_give(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(3), [*DELIVERED, *ABSTAINED])
    sentences = await delivered(candor, ids)
    unreadable = [s for s in sentences if UNREADABLE in s[2]]
    judged = [s for s in sentences if UNREADABLE not in s[2]]
    unsupported = [s for s in judged if MARKER in s[2]]
    assert len(unsupported) >= 2 and len(unreadable) == 1 and len(judged) >= 6, sentences

    async with FakeOpenAI() as fake:
        fake.responder = audit_judge
        result = await run_audit(candor.tracker.engine, llm_auditor(candor, fake), window(3, handbook, seed="t1"))
        assert sorted(map(sentence_of, fake.chat_requests)) == sorted(s[2] for s in sentences), "every one asked"

    assert result.complete and result.error is None and result.verifier == "llm-judge:audit-model"
    rows = await audit_rows(candor, result.run_id)
    assert {(r["trace_id"], r["position"], r["text"]) for r in rows} == set(sentences)
    assert all(r["independent"] for r in rows), "the gate was evidence-verifier-v1"
    not_judged = [r for r in rows if r["supported"] is None]
    assert [r["text"] for r in not_judged] == [s[2] for s in unreadable], "never judged by the offline verifier"
    assert "not judged" in not_judged[0]["reasons"][0]

    report = await build_report(candor.tracker.engine, report_window("2017-04-03", "2017-04-04", kb=handbook.name))
    measure = report["total"]["hallucination_rate"]
    answers = len({s[0] for s in judged})
    rate, interval = weighted([(len(sentences), len(judged), len(unsupported))])
    assert rate == round(len(unsupported) / len(judged), 4), "one day: the plain share"
    assert measure == {
        "status": "measured",
        "rate": rate,
        "n": len(unsupported),
        "sample_size": len(judged),
        "answers": answers,
        "not_judged": 1,
        "verifier": "llm-judge:audit-model",
        "interval": interval,
        "method": STRATIFIED,
        "coverage": {"n": len(sentences), "of": len(sentences), "rate": 1.0},
        "agreement": None,
        "reason": None,
    }
    by_day = await build_report(
        candor.tracker.engine, report_window("2017-04-03", "2017-04-04", by="day", kb=handbook.name)
    )
    assert [p["hallucination_rate"] for p in by_day["periods"]] == [measure], "one day: the period is the total"
    assert "Sampled measures per period" in render_report(by_day).splitlines()
    print(render_report(by_day))  # the sample in the report of this work (pytest -s)
    line = next(x for x in render_report(report).splitlines() if x.startswith("Hallucination rate (sampled"))
    assert line == (
        f"Hallucination rate (sampled re-verification): {100 * rate:.1f}% (95% CI {100 * interval['low']:.1f}–"
        f"{100 * interval['high']:.1f}%) weighted by day, from {len(unsupported)}/{len(judged)} sentences judged "
        f"(days holding {len(sentences)}/{len(sentences)} delivered sentences) by llm-judge:audit-model on "
        f"{answers} answers; 1 not judged."
    )

    # A second run picks only the answer with a sentence left unjudged, and settles it.
    async with FakeOpenAI() as fake:
        fake.responder = judges(unless=[MARKER])
        again = await run_audit(candor.tracker.engine, llm_auditor(candor, fake), window(3, handbook, seed="t1"))
    assert {s.sentence.trace_id for s in again.sentences} == {s[0] for s in unreadable}
    after = await build_report(candor.tracker.engine, report_window("2017-04-03", "2017-04-04", kb=handbook.name))
    assert after["total"]["hallucination_rate"]["sample_size"] == len(sentences)
    assert after["total"]["hallucination_rate"]["not_judged"] == 0
    assert after["total"]["hallucination_rate"]["n"] == len(unsupported)


async def test_the_gates_own_verifier_is_not_independent_and_gives_no_rate(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(5), DELIVERED)
    sentences = await delivered(candor, ids)
    own = build_audit_verifier(candor.settings.model_copy(update={"audit_verifier": "evidence"}), candor.embedder)
    assert own.name == GATE
    result = await run_audit(candor.tracker.engine, own, window(5, handbook, seed="own"))
    rows = await audit_rows(candor, result.run_id)
    assert len(rows) == len(sentences) and not any(r["independent"] for r in rows)
    agreed = sum(bool(r["supported"]) for r in rows)

    report = await build_report(candor.tracker.engine, report_window("2017-04-05", "2017-04-06", kb=handbook.name))
    measure = report["total"]["hallucination_rate"]
    assert measure["status"] == "not_independent" and measure["rate"] is None and measure["n"] is None
    assert measure["interval"] is None and measure["verifier"] == GATE
    assert measure["sample_size"] == len(sentences)
    assert measure["agreement"] == {"n": agreed, "of": len(sentences), "rate": round(agreed / len(sentences), 4)}
    assert measure["reason"] == (
        f"the only verifier that re-checked answers is the gate's own ({GATE}): its rate would not be independent"
    )
    rendered = render_report(report)
    line = next(x for x in rendered.splitlines() if x.startswith("Hallucination rate (sampled"))
    assert line.startswith("Hallucination rate (sampled re-verification): not independent: ") and "%" not in line
    print(line)


async def test_auto_audits_with_the_gates_llm_judge_and_says_it_is_not_independent(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    async with FakeOpenAI() as fake:
        fake.responder = Models(writer=lambda r: {}, judge=judges())
        gated = core(candor, fake, writer="extractive", judge="openai:gate-judge", llm_attempts=1)
        ids = await seed(gated, handbook, day(7), DELIVERED[:4])
        models = await execute(
            candor, "SELECT DISTINCT models ->> 'verifier' AS v FROM traces WHERE id::text = ANY(:ids)", {"ids": ids}
        )
        assert [m["v"] for m in models] == ["llm-judge:gate-judge+evidence-verifier-v1"]
        verifier = build_audit_verifier(gated.settings.model_copy(update={"audit_verifier": "auto"}), candor.embedder)
        assert verifier.name == "llm-judge:gate-judge"
        result = await run_audit(candor.tracker.engine, verifier, window(7, handbook, seed="auto"))
    assert result.independent == (0, len(await delivered(candor, ids)))
    report = await build_report(candor.tracker.engine, report_window("2017-04-07", "2017-04-08", kb=handbook.name))
    assert report["total"]["hallucination_rate"]["status"] == "not_independent"
    assert "llm-judge:gate-judge" in report["total"]["hallucination_rate"]["reason"]


def failing_after(calls: int) -> Callable[[ChatRequest], Any]:
    """`audit_judge` for `calls` requests, then an error for every request (the fake answers 500)."""
    seen: list[str] = []

    def respond(request: ChatRequest) -> Any:
        seen.append(sentence_of(request))
        if len(seen) > calls:
            raise RuntimeError("the audit model went away")
        return judges(unless=[MARKER])(request)

    return respond


async def test_a_judge_failing_mid_run_stores_what_it_judged_as_an_incomplete_run_and_a_rerun_finishes(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(9), DELIVERED)
    sentences = await delivered(candor, ids)
    async with FakeOpenAI() as fake:
        fake.responder = failing_after(3)
        broken = await run_audit(candor.tracker.engine, llm_auditor(candor, fake), window(9, handbook, seed="x"))
    assert not broken.complete and "audit-model" in (broken.error or "") and "HTTP 500" in (broken.error or "")
    rows = await audit_rows(candor, broken.run_id)
    assert [r["supported"] is not None for r in rows] == [True, True, True, False], "3 judged, then the failure"
    (run,) = await execute(candor, "SELECT complete, error FROM audit_runs WHERE id = :id", {"id": broken.run_id})
    assert run["complete"] is False and run["error"] == broken.error

    report = await build_report(candor.tracker.engine, report_window("2017-04-09", "2017-04-10", kb=handbook.name))
    assert report["total"]["hallucination_rate"]["sample_size"] == 3
    assert report["total"]["hallucination_rate"]["not_judged"] == 1

    async with FakeOpenAI() as fake:
        fake.responder = judges(unless=[MARKER])
        finished = await run_audit(candor.tracker.engine, llm_auditor(candor, fake), window(9, handbook, seed="x"))
    assert finished.complete
    per_trace = Counter(s[0] for s in sentences)
    judged_first = Counter(r["trace_id"] for r in rows if r["supported"] is not None)
    done = {t for t, n in per_trace.items() if judged_first[t] == n}
    assert done and {s.sentence.trace_id for s in finished.sentences} == set(per_trace) - done, (
        "only answers with a sentence left unjudged are audited again"
    )
    total = (await build_report(candor.tracker.engine, report_window("2017-04-09", "2017-04-10", kb=handbook.name)))[
        "total"
    ]["hallucination_rate"]
    assert total["sample_size"] == len(sentences) and total["not_judged"] == 0
    assert total["n"] == sum(MARKER in s[2] for s in sentences)


def md5_order(ids: Iterable[str], seed: str) -> list[str]:
    return sorted(ids, key=lambda i: (hashlib.md5((i + seed).encode()).hexdigest(), i))


async def test_sampling_is_reproducible_with_a_seed_and_skips_answers_already_audited(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(11), DELIVERED)
    answered = sorted({s[0] for s in await delivered(candor, ids)})
    order = md5_order(answered, "alpha")
    own = build_audit_verifier(candor.settings.model_copy(update={"audit_verifier": "evidence"}), candor.embedder)

    def traces(result: Any) -> list[str]:
        return sorted({s.sentence.trace_id for s in result.sentences})

    first = await run_audit(candor.tracker.engine, own, window(11, handbook, sample=3, seed="alpha"))
    assert traces(first) == sorted(order[:3]) and first.answers == 3
    second = await run_audit(candor.tracker.engine, own, window(11, handbook, sample=3, seed="alpha"))
    assert traces(second) == sorted(order[3:6]), "answers this verifier audited are not picked again"
    repeat = await run_audit(candor.tracker.engine, own, window(11, handbook, sample=3, seed="alpha", again=True))
    assert traces(repeat) == traces(first), "--again with the same seed picks the same sample"
    other = await run_audit(candor.tracker.engine, own, window(11, handbook, sample=3, seed="beta", again=True))
    assert traces(other) == sorted(md5_order(answered, "beta")[:3])
    stored = await execute(candor, "SELECT seed, sample_size FROM audit_runs WHERE id = :id", {"id": first.run_id})
    assert stored == [{"seed": "alpha", "sample_size": 3}]
    drawn = AuditRequest(day(11), day(12))
    assert drawn.seed and drawn.seed != AuditRequest(day(11), day(12)).seed, "without --seed one is drawn and kept"


# --- one judgement per sentence, and days weighted by their traffic (May 2017) ----------------------------


def may(n: int, hour: int = 9, minute: int = 0) -> datetime:
    """A moment of May 2017 (UTC): these tests' days (nothing else in the session's database is dated there)."""
    return datetime(2017, 5, n, hour, minute, tzinfo=UTC)


def between(start: datetime, end: datetime, kb: KnowledgeBase, **more: Any) -> AuditRequest:
    return AuditRequest(start, end, knowledge_base=kb.name, **more)


async def counted(candor: Candor, ids: Sequence[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """The judgement counted for each delivered sentence, from the stored rows: among the independent
    ones, a judged row before a "not judged" one, then the newest run."""
    rows = await execute(
        candor,
        "SELECT a.trace_id::text AS trace_id, a.position, a.supported, a.independent, r.created_at, r.id AS run, "
        "r.verifier FROM audit_sentences a JOIN audit_runs r ON r.id = a.run_id "
        "WHERE r.kind = 'verifier' AND a.trace_id::text = ANY(:ids)",
        {"ids": list(ids)},
    )
    ordered = sorted(rows, key=lambda r: (r["supported"] is not None, r["created_at"], r["run"]))
    return {(r["trace_id"], r["position"]): r for r in ordered if r["independent"]}


async def days_of(candor: Candor, ids: Sequence[str]) -> dict[str, Any]:
    """Each trace's UTC day, from the stored rows."""
    sql = "SELECT id::text AS id, created_at FROM traces WHERE id::text = ANY(:ids)"
    rows = await execute(candor, sql, {"ids": list(ids)})
    return {r["id"]: r["created_at"].astimezone(UTC).date() for r in rows}


async def test_the_total_weights_each_day_by_its_traffic_not_by_how_much_of_it_was_audited(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    # 1 May: traffic nobody audited. 2 May: a busy day, one answer of it audited (the one naming MARKER,
    # so unsupported sentences). 3 May: a quiet day, every answer audited.
    ids = await seed(candor, handbook, may(1), DELIVERED[:3])
    audited = await seed(candor, handbook, may(2), [DELIVERED[5]])
    ids += audited + await seed(candor, handbook, may(2, 15), [*DELIVERED[:3], DELIVERED[4], DELIVERED[6]])
    quiet = await seed(candor, handbook, may(3), DELIVERED[:3])
    ids += quiet
    async with FakeOpenAI() as fake:
        fake.responder = audit_judge
        for start in (may(2), may(3)):
            request = between(start, start + timedelta(hours=1), handbook, seed="days")
            assert (await run_audit(candor.tracker.engine, llm_auditor(candor, fake), request)).complete

    sentences, day = await delivered(candor, ids), await days_of(candor, ids)
    judgements = await counted(candor, ids)
    days = sorted(set(day.values()))
    per_day = [
        (
            sum(day[t] == d for t, _, _ in sentences),
            sum(day[t] == d and r["supported"] is not None for (t, _), r in judgements.items()),
            sum(day[t] == d and r["supported"] is False for (t, _), r in judgements.items()),
        )
        for d in days
    ]
    (d1, j1, _), (d2, j2, u2), (d3, j3, u3) = per_day
    assert j1 == 0 and j3 == d3 and 0 < j2 < d2, "unaudited, sparsely audited, fully audited"
    assert u2 / j2 > u3 / j3, "the busy day's sample is worse than the quiet day's"
    rate, interval = weighted(per_day)
    pooled = round((u2 + u3) / (j2 + j3), 4)
    assert rate != pooled, "the test can tell a weighted total from a pooled one"

    window = report_window("2017-05-01", "2017-05-04", kb=handbook.name)
    measure = (await build_report(candor.tracker.engine, window))["total"]["hallucination_rate"]
    assert (measure["rate"], measure["interval"]) == (rate, interval)
    assert (measure["n"], measure["sample_size"]) == (u2 + u3, j2 + j3), "the raw counts beside it"
    assert measure["coverage"] == {"n": d2 + d3, "of": d1 + d2 + d3, "rate": round((d2 + d3) / (d1 + d2 + d3), 4)}
    assert measure["method"] == STRATIFIED

    by_day_report = await build_report(
        candor.tracker.engine, report_window("2017-05-01", "2017-05-04", by="day", kb=handbook.name)
    )
    first, second, third = (p["hallucination_rate"] for p in by_day_report["periods"])
    assert first["status"] == "not_measured"
    assert (second["rate"], third["rate"]) == (round(u2 / j2, 4), round(u3 / j3, 4)), "a day is its own stratum"
    by_week = await build_report(
        candor.tracker.engine, report_window("2017-05-01", "2017-05-04", by="week", kb=handbook.name)
    )
    assert [p["hallucination_rate"] for p in by_week["periods"]] == [measure], "a week weights its days too"


async def test_a_sentence_judged_by_several_independent_verifiers_counts_once(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, may(9), [*DELIVERED[:3], DELIVERED[5]])
    sentences = await delivered(candor, ids)
    marked = may(9, 9, 3)  # the fourth answer, the one naming MARKER
    async with FakeOpenAI() as fake:
        fake.responder = audit_judge
        first = await run_audit(candor.tracker.engine, llm_auditor(candor, fake), between(may(9), may(10), handbook))
        assert first.complete and len(first.judged) == len(sentences)
        once = (await build_report(candor.tracker.engine, report_window("2017-05-09", "2017-05-10", kb=handbook.name)))[
            "total"
        ]["hallucination_rate"]
        assert once["n"] > 0 and once["sample_size"] == len(sentences)

        # Another model that cannot judge them: its "not judged" rows do not displace the judgements.
        fake.responder = lambda request: "I would rather not say."
        mute = llm_auditor(candor, fake, audit_verifier="openai:mute-model")
        silent = await run_audit(candor.tracker.engine, mute, between(marked, marked + timedelta(minutes=1), handbook))
        assert silent.sentences and not silent.judged
        # A stronger model re-checks the answer naming MARKER (it may pick what another verifier judged).
        fake.responder = judges()
        second = llm_auditor(candor, fake, audit_verifier="openai:second-model")
        again = await run_audit(candor.tracker.engine, second, between(marked, marked + timedelta(minutes=1), handbook))
        assert again.judged and {s.sentence.trace_id for s in again.sentences} <= set(ids)

    stored = await execute(
        candor, "SELECT count(*) AS n FROM audit_sentences WHERE trace_id::text = ANY(:ids)", {"ids": ids}
    )
    assert stored[0]["n"] > len(sentences), "some sentences have several judgements"
    judgements = await counted(candor, ids)
    report = await build_report(candor.tracker.engine, report_window("2017-05-09", "2017-05-10", kb=handbook.name))
    measure = report["total"]["hallucination_rate"]
    assert measure["sample_size"] == len(sentences) == len(judgements), "each delivered sentence once"
    assert measure["n"] == sum(r["supported"] is False for r in judgements.values())
    assert measure["n"] < once["n"], "the newer judgement of the re-checked answer replaced the older"
    assert measure["not_judged"] == 0, "a judgement wins over a later 'not judged'"
    assert measure["verifier"] == sorted({r["verifier"] for r in judgements.values()})
    assert measure["verifier"] == ["llm-judge:audit-model", "llm-judge:second-model"]
    assert measure["answers"] == len(ids)


async def test_a_run_judging_some_traces_independently_counts_only_those(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    async with FakeOpenAI() as fake:
        fake.responder = Models(writer=lambda r: {}, judge=judges())
        gated = core(candor, fake, writer="extractive", judge="openai:gate-judge", llm_attempts=1)
        own = await seed(gated, handbook, may(11), DELIVERED[:2])
        others = await seed(candor, handbook, may(11, 12), [DELIVERED[2], DELIVERED[5]])
        fake.responder = audit_judge
        auditor = llm_auditor(candor, fake, audit_verifier="openai:gate-judge")
        result = await run_audit(candor.tracker.engine, auditor, between(may(11), may(12), handbook))
    rows = await audit_rows(candor, result.run_id)
    independent = {r["trace_id"]: r["independent"] for r in rows}
    assert independent == {**dict.fromkeys(own, False), **dict.fromkeys(others, True)}, "one run, both kinds"
    counted_rows = [r for r in rows if r["independent"] and r["supported"] is not None]

    report = await build_report(candor.tracker.engine, report_window("2017-05-11", "2017-05-12", kb=handbook.name))
    measure = report["total"]["hallucination_rate"]
    assert measure["status"] == "measured" and measure["verifier"] == "llm-judge:gate-judge"
    assert measure["sample_size"] == len(counted_rows) == len(await delivered(candor, others))
    assert measure["n"] == sum(r["supported"] is False for r in counted_rows) > 0
    assert measure["answers"] == len(others)
    own_sentences = len(await delivered(candor, own))
    assert measure["coverage"]["of"] == measure["coverage"]["n"] == own_sentences + measure["sample_size"], (
        "the gate-judged answers still weigh their day: they were delivered"
    )


async def test_abstentions_and_unanswered_parts_are_rechecked_by_relaxed_retrieval(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(13), [*ABSTAINED, DELIVERED[-1], DELIVERED[0]])
    traces = await execute(
        candor,
        "SELECT id::text AS id, route, question, rewritten_question, scope, answer FROM traces "
        "WHERE id::text = ANY(:ids)",
        {"ids": ids},
    )
    items = {
        (t["id"], None if t["route"] == "abstained" else part): (t["rewritten_question"] or t["question"])
        if t["route"] == "abstained"
        else part
        for t in traces
        for part in (t["answer"]["unanswered_parts"] if t["route"] != "abstained" else [None])
    }
    assert len(items) == 3, items  # two abstentions, one unanswered part
    own = build_audit_verifier(candor.settings.model_copy(update={"audit_verifier": "evidence"}), candor.embedder)
    rechecker = relaxed_rechecker(candor, shortlist=candor.settings.shortlist)
    result = await run_audit(candor.tracker.engine, own, window(13, handbook, seed="gaps"), rechecker=rechecker)

    stored = await execute(
        candor,
        "SELECT trace_id::text AS trace_id, part, label, score, evidence FROM audit_abstentions WHERE run_id = :id",
        {"id": result.run_id},
    )
    assert {(r["trace_id"], r["part"]) for r in stored} == set(items)
    scope = AccessScope(frozenset(), frozenset([handbook.name]))
    for row in stored:
        expected = await recheck(candor, items[(row["trace_id"], row["part"])], scope, k=3 * candor.settings.shortlist)
        assert (row["label"], row["evidence"]) == (expected.label, expected.as_json())
    possible = sum(r["label"] == "possibly_answerable" for r in stored)
    print({items[(r["trace_id"], r["part"])]: (r["label"], round(r["score"], 3)) for r in stored})

    report = await build_report(candor.tracker.engine, report_window("2017-04-13", "2017-04-14", kb=handbook.name))
    alarms = false_alarms()
    assert report["total"]["wrong_abstention"] == {
        "status": "measured",
        "kind": "upper_estimate",
        "rate": round(possible / len(stored), 4),
        "n": possible,
        "sample_size": len(stored),
        "method": "relaxed retrieval",
        "false_alarms": alarms,
        "reason": None,
    }, "no interval: an upper estimate's sampling error would read as precision"
    line = next(x for x in render_report(report).splitlines() if x.startswith("Abstentions that relaxed"))
    assert line == (
        f"Abstentions that relaxed retrieval finds possibly answerable (upper estimate: flags {alarms['n']}/"
        f"{alarms['of']} correct abstentions on sample/golden.yaml): {possible}/{len(stored)} re-checked "
        f"({100 * possible / len(stored):.1f}%), no interval."
    )
    again = await run_audit(candor.tracker.engine, own, window(13, handbook, seed="gaps"), rechecker=rechecker)
    assert again.abstentions == (), "abstentions already re-checked are not re-checked again"


class Unreachable:
    """A `rag.insights.relaxed.Ranking` whose database has gone away: every relaxed re-check fails."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def rerank(self, text: str, scope: AccessScope, *, k: int | None = None) -> list[Ranked]:
        self.asked.append(text)
        raise StoreError("could not search the passages: connection refused")


async def test_a_failing_recheck_keeps_the_verdicts_and_marks_the_run_incomplete(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    ids = await seed(candor, handbook, day(17), [*DELIVERED[:3], *ABSTAINED])
    sentences = await delivered(candor, ids)
    routes = await execute(candor, "SELECT id::text AS id, route FROM traces WHERE id::text = ANY(:ids)", {"ids": ids})
    abstained = {r["id"] for r in routes if r["route"] == "abstained"}
    assert len(abstained) == len(ABSTAINED) and sentences
    own = build_audit_verifier(candor.settings.model_copy(update={"audit_verifier": "evidence"}), candor.embedder)
    gone = Unreachable()
    shortlist = candor.settings.shortlist

    broken = await run_audit(
        candor.tracker.engine,
        own,
        window(17, handbook, seed="down"),
        rechecker=relaxed_rechecker(gone, shortlist=shortlist),
    )
    assert not broken.complete and broken.abstentions == ()
    assert {n.abstention.trace_id for n in broken.not_rechecked} >= abstained and len(gone.asked) >= len(abstained)
    assert all(n.reason.startswith("StoreError: could not search") for n in broken.not_rechecked)
    error = broken.error or ""
    assert "abstentions not re-checked (StoreError: could not search the passages" in error, error
    assert broken.summary()["not_rechecked"] == len(broken.not_rechecked)

    rows = await audit_rows(candor, broken.run_id)
    assert {(r["trace_id"], r["position"], r["text"]) for r in rows} == set(sentences), "the verdicts are stored"
    assert all(r["supported"] is not None for r in rows)
    (run,) = await execute(
        candor, "SELECT complete, error, config FROM audit_runs WHERE id = :id", {"id": broken.run_id}
    )
    assert run["complete"] is False and run["error"] == broken.error
    assert run["config"]["not_rechecked"] == [n.as_json() for n in broken.not_rechecked]
    stored = await execute(candor, "SELECT 1 FROM audit_abstentions WHERE run_id = :id", {"id": broken.run_id})
    assert stored == [], "nothing stored for what was not re-checked"

    fixed = await run_audit(
        candor.tracker.engine,
        own,
        window(17, handbook, seed="down"),
        rechecker=relaxed_rechecker(candor, shortlist=shortlist),
    )
    assert fixed.complete and fixed.sentences == (), "the sentences judged are not judged again"
    assert {a.abstention.trace_id for a in fixed.abstentions} == {n.abstention.trace_id for n in broken.not_rechecked}


async def test_a_part_left_unanswered_twice_is_one_item_rechecked_and_labelled_once(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    (trace,) = await seed(candor, handbook, day(19), [DELIVERED[-1]])
    (row,) = await execute(
        candor, "SELECT answer -> 'unanswered_parts' AS parts FROM traces WHERE id = CAST(:id AS uuid)", {"id": trace}
    )
    (part,) = row["parts"]
    await execute(
        candor,
        "UPDATE traces SET answer = jsonb_set(answer, '{unanswered_parts}', "
        "(answer -> 'unanswered_parts') || (answer -> 'unanswered_parts')) WHERE id = CAST(:id AS uuid)",
        {"id": trace},
    )
    own = build_audit_verifier(candor.settings.model_copy(update={"audit_verifier": "evidence"}), candor.embedder)
    rechecker = relaxed_rechecker(candor, shortlist=candor.settings.shortlist)
    first = await run_audit(candor.tracker.engine, own, window(19, handbook, seed="twice"), rechecker=rechecker)
    assert [(a.abstention.trace_id, a.abstention.part) for a in first.abstentions] == [(trace, part)]
    again = await run_audit(candor.tracker.engine, own, window(19, handbook, seed="twice"), rechecker=rechecker)
    assert again.abstentions == (), "re-checked once is re-checked: the trace is not picked again"

    sheet = tmp_path / "labels.csv"

    async def abstention_rows() -> list[dict[str, str]]:
        await export_labels(candor.tracker.engine, window(19, handbook, seed="twice"), sheet, None)
        rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8-sig"))))
        return [r for r in rows if r["kind"] == "abstention"]

    (item,) = await abstention_rows()
    assert (item["trace_id"], item["part"]) == (trace, part)
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(item))
        writer.writeheader()
        writer.writerow({**item, "label": "wrong_abstention", "labeller": "ana"})
    assert (await import_labels(candor.tracker.engine, sheet)).stored == 1
    assert await abstention_rows() == [], "labelled once is labelled: not exported again"


# --- the real command ------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_candor_audit_answers_exits_non_zero_when_the_judge_goes_away_and_a_rerun_completes(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    ids = await seed(candor, handbook, day(15), [*DELIVERED[:4], ABSTAINED[0]])
    sentences = await delivered(candor, ids)
    args = ("audit", "answers", "--since", "2017-04-15", "--until", "2017-04-16", "--kb", handbook.name)
    with ThreadedFakeOpenAI() as fake:
        env = {
            "CANDOR_AUDIT_VERIFIER": "openai:audit-model",
            "CANDOR_AUDIT_BASE_URL": fake.base_url,
            "CANDOR_LLM_ATTEMPTS": "1",
        }
        fake.responder = failing_after(2)
        broken = run_cli(candor, tmp_path, *args, "--seed", "cli", **env)
        assert broken.returncode == 1, broken.stderr
        assert "the audit stopped before the end" in broken.stderr and "incomplete" in broken.stderr
        assert "Traceback" not in broken.stderr
        assert "INCOMPLETE" in broken.stdout and "verifier: llm-judge:audit-model, independent" in broken.stdout
        assert "upper estimate: flags " in broken.stdout and "correct abstentions on sample/golden" in broken.stdout
        fake.responder = judges(unless=[MARKER])
        fixed = run_cli(candor, tmp_path, *args, "--seed", "cli", **env)
    assert fixed.returncode == 0, fixed.stderr
    assert "abstentions re-checked: 0" in fixed.stdout, "the first run re-checked the abstention already"
    report = await build_report(candor.tracker.engine, report_window("2017-04-15", "2017-04-16", kb=handbook.name))
    measure = report["total"]["hallucination_rate"]
    assert (measure["status"], measure["sample_size"], measure["not_judged"]) == ("measured", len(sentences), 0)
    assert report["total"]["wrong_abstention"]["sample_size"] == 1

    bad = run_cli(candor, tmp_path, "audit", "answers", "--since", "last week")
    assert bad.returncode == 2 and "last week" in bad.stderr
