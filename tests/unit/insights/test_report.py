"""`candor report` without a database: the window's parsing, `rag.insights.report.build.assemble` on hand-written
measure rows (as the queries return them), and `bot.render.report_text.render_report` on the result."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from bot.render.report_text import NO_ANSWERS, render_report
from rag.insights.report import audit_measures
from rag.insights.report.audit_measures import Stratum, coverage, stratified, stratified_interval
from rag.insights.report.build import TOP_DOCUMENTS, Window, assemble, parse_moment, report_window
from tests.conftest import REPO

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WEEK = Window(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 15, tzinfo=UTC), "week", None)
MONDAY, NEXT_MONDAY = datetime(2026, 11, 2), datetime(2026, 11, 9)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7d", datetime(2026, 11, 23, 12, 0, tzinfo=UTC)),
        ("12h", datetime(2026, 11, 30, 0, 0, tzinfo=UTC)),
        ("30D", datetime(2026, 10, 31, 12, 0, tzinfo=UTC)),
        ("2w", datetime(2026, 11, 16, 12, 0, tzinfo=UTC)),
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("2026-11-01T08:30", datetime(2026, 11, 1, 8, 30, tzinfo=UTC)),
        ("2026-11-01T08:30:00+01:00", datetime(2026, 11, 1, 7, 30, tzinfo=UTC)),
    ],
)
def test_since_reads_durations_and_iso_dates(value: str, expected: datetime) -> None:
    assert parse_moment(value, NOW) == expected


@pytest.mark.parametrize(
    "value",
    [
        *("last tuesday", "7", "d", "-3d", "2026-13-01", ""),
        *("99999999999999999999d", "3000000d", pytest.param("9" * 5000 + "h", id="5000-digits")),  # overflows
    ],
)
def test_anything_else_is_refused_with_the_forms_that_work(value: str) -> None:
    with pytest.raises(ValueError, match="7d, 12h"):
        parse_moment(value, NOW)


def test_the_window_ends_now_unless_told_and_may_not_be_empty() -> None:
    window = report_window("30d", by="day", kb="handbook", now=NOW)
    assert (window.since, window.until, window.by, window.knowledge_base) == (
        datetime(2026, 10, 31, 12, 0, tzinfo=UTC),
        NOW,
        "day",
        "handbook",
    )
    assert report_window("2026-11-01", "2026-11-08", now=NOW).until == datetime(2026, 11, 8, tzinfo=UTC)
    with pytest.raises(ValueError, match="empty"):
        report_window("2026-11-08", "2026-11-01", now=NOW)


def row(period: datetime | None, **values: Any) -> dict[str, Any]:
    return {"is_total": period is None, "period": period, **values}


def measured(**overrides: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Two weeks of answers as the measure queries return them (counts as the driver gives them)."""
    rows: dict[str, list[dict[str, Any]]] = {
        "routes": [
            row(MONDAY, questions=4, answered=3, low_confidence=0, abstained=1, conflicted=1),
            row(NEXT_MONDAY, questions=2, answered=1, low_confidence=1, abstained=0, conflicted=0),
            row(None, questions=6, answered=4, low_confidence=1, abstained=1, conflicted=1),
        ],
        "gates": [
            row(MONDAY, judged=4, rejected=1, retried=1, resolved=1, drafted=Decimal(6), dropped=Decimal(2)),
            row(NEXT_MONDAY, judged=2, rejected=1, retried=1, resolved=0, drafted=Decimal(5), dropped=Decimal(3)),
            row(None, judged=6, rejected=2, retried=2, resolved=1, drafted=Decimal(11), dropped=Decimal(5)),
        ],
        "feedback": [
            row(MONDAY, route="abstained", rated=1, votes=2, up=0, down=2),
            row(None, route="abstained", rated=1, votes=2, up=0, down=2),
        ],
        "latency": [
            row(None, stage="total", n=6, p50=120.04, p95=880.0),
            row(None, stage="retrieve", n=6, p50=30.0, p95=61.26),
            row(None, stage="zz-custom", n=1, p50=None, p95=None),
        ],
        "usage": [
            row(
                None,
                answers=6,
                not_recorded=0,
                prompt_tokens=Decimal(0),
                completion_tokens=Decimal(0),
                unpriced_answers=0,
                priced_cost=0.0,
                model_calls=Decimal(0),
                unpriced_calls=Decimal(0),
            ),
        ],
        "platforms": [
            row(MONDAY, platform="slack", n=3),
            row(MONDAY, platform="unknown", n=1),
            row(NEXT_MONDAY, platform="teams", n=2),
            row(None, platform="slack", n=3),
            row(None, platform="teams", n=2),
            row(None, platform="unknown", n=1),
        ],
        "documents": [
            row(None, document=f"doc-{n:02}.md", knowledge_base="kb", title=f"Doc {n}", answers=n % 3)
            for n in range(TOP_DOCUMENTS + 3)
        ],
        "eval_runs": [],
    }
    rows.update(overrides)
    return rows


def test_rows_become_periods_and_a_total_with_counts_beside_every_rate() -> None:
    report = assemble(WEEK, measured())
    assert [(p["start"], p["end"]) for p in report["periods"]] == [
        ("2026-11-02", "2026-11-09"),
        ("2026-11-09", "2026-11-16"),
    ]
    first, total = report["periods"][0], report["total"]
    assert first["routes"]["abstained"] == {"n": 1, "of": 4, "rate": 0.25}
    assert first["conflicts"] == {"n": 1, "of": 3, "rate": 0.3333}
    assert first["first_pass"] == {
        "rejected": {"n": 1, "of": 4, "rate": 0.25},
        "retried": 1,
        "resolved": {"n": 1, "of": 1, "rate": 1.0},
    }
    assert total["gate_dropped_sentences"] == {"n": 5, "of": 11, "rate": 0.4545}
    assert total["feedback"]["abstained"] == {
        "answers": 1,
        "rated": {"n": 1, "of": 1, "rate": 1.0},
        "votes": 2,
        "up": {"n": 0, "of": 2, "rate": 0.0},
        "down": {"n": 2, "of": 2, "rate": 1.0},
    }
    assert total["feedback"]["answered"]["up"] == {"n": 0, "of": 0, "rate": None}
    assert list(total["latency_ms"]) == ["retrieve", "total", "zz-custom"], "pipeline order, then by name"
    assert total["latency_ms"]["total"] == {"n": 6, "p50": 120.0, "p95": 880.0}
    assert total["latency_ms"]["zz-custom"] == {"n": 1, "p50": None, "p95": None}
    assert list(total["platforms"]) == ["slack", "teams", "web", "cli", "eval", "unknown"]
    assert total["platforms"]["unknown"] == {"n": 1, "of": 6, "rate": 0.1667}
    assert [d["answers"] for d in total["top_documents"]] == [2, 2, 2, 2, 1, 1, 1, 1, 0, 0]
    assert total["top_documents"][0]["document"] == "doc-02.md", "ties by document"
    assert report["periods"][1]["top_documents"] == [] and report["periods"][1]["usage"]["answers"] == 0
    assert total["hallucination_rate"]["status"] == "not_measured" and total["hallucination_rate"]["rate"] is None


def test_without_grouping_only_the_total_is_reported() -> None:
    ungrouped = measured(routes=[row(None, questions=6, answered=4, low_confidence=1, abstained=1, conflicted=1)])
    ungrouped["routes"].insert(0, {"is_total": False, "period": None, "questions": 6})
    report = assemble(Window(WEEK.since, WEEK.until), ungrouped)
    assert report["periods"] == [] and report["total"]["questions"] == 6
    assert report["window"]["by"] is None


def test_cost_is_unknown_when_an_answer_had_an_unpriced_call_and_totals_skip_unrecorded_traces() -> None:
    usage = row(
        None,
        answers=4,
        not_recorded=1,
        prompt_tokens=Decimal(3000),
        completion_tokens=Decimal(300),
        unpriced_answers=1,
        priced_cost=0.0006,
        model_calls=Decimal(4),
        unpriced_calls=Decimal(1),
    )
    total = assemble(WEEK, measured(usage=[usage]))["total"]["usage"]
    assert total == {
        "answers": 4,
        "not_recorded": 1,
        "model_calls": 4,
        "unpriced_calls": 1,
        "prompt_tokens": {"total": 3000, "per_answer": 1000.0},
        "completion_tokens": {"total": 300, "per_answer": 100.0},
        "cost": {"total": None, "per_answer": None},
    }
    priced = assemble(WEEK, measured(usage=[{**usage, "unpriced_answers": 0, "unpriced_calls": 0}]))
    assert priced["total"]["usage"]["cost"] == {"total": 0.0006, "per_answer": 0.0002}


def test_eval_runs_keep_their_key_metrics_and_tolerate_older_summaries() -> None:
    rate = {"n": 1, "of": 2, "rate": 0.5}
    runs = [
        {"id": 3, "created_at": datetime(2026, 11, 3, tzinfo=UTC), "golden": "golden.yaml", "knowledge_base": "kb",
         "summary": {"questions": 2, "routes": {"answered": rate}, "keyword_accuracy": rate,
                     "latency_ms": {"p50": 80.5}, "usage": {"cost": {"per_answer": None}}}},
        {"id": 4, "created_at": datetime(2026, 11, 4, tzinfo=UTC), "golden": "old.yaml", "knowledge_base": None,
         "summary": []},
    ]  # fmt: skip
    first, second = assemble(WEEK, measured(eval_runs=runs))["eval_runs"]
    assert first["answered"] == rate and first["keyword_accuracy"] == rate and first["latency_p50_ms"] == 80.5
    assert first["created_at"] == "2026-11-03T00:00:00+00:00" and first["restricted_leaks"] is None
    assert second["questions"] is None and second["answered"] is None


def test_the_text_has_a_row_per_period_and_a_total_and_says_what_is_not_measured() -> None:
    text = render_report(assemble(WEEK, measured()))
    lines = text.splitlines()
    assert lines[0] == "Candor report: 2026-11-01 00:00 to 2026-11-15 00:00 UTC, all knowledge bases, by week"
    start = lines.index("Answers")
    assert [line.split("  ")[0] for line in lines[start + 2 : start + 5]] == [
        "week of 2026-11-02",
        "week of 2026-11-09",
        "total",
    ]
    assert "1/4 (25%)" in lines[start + 2]
    assert any(line.startswith("Hallucination rate (sampled re-verification): not measured (") for line in lines)
    assert "Model usage: no model calls (offline stages)" in lines
    assert "0 up, 2 down (100% down)" in text
    assert "Stored eval runs: none in this window" in lines


def test_an_empty_window_says_there_were_no_answers() -> None:
    empty = {name: [] for name in measured()}
    text = render_report(assemble(WEEK, empty))
    assert NO_ANSWERS in text and "Answers" not in text and text.endswith("\n")


def test_unpriced_and_unrecorded_usage_is_said_in_words() -> None:
    usage = [
        row(MONDAY, answers=4, not_recorded=0, prompt_tokens=400, completion_tokens=40, unpriced_answers=0,
            priced_cost=0.0004, model_calls=2, unpriced_calls=0),
        row(NEXT_MONDAY, answers=2, not_recorded=1, prompt_tokens=0, completion_tokens=0, unpriced_answers=0,
            priced_cost=0.0, model_calls=0, unpriced_calls=0),
        row(None, answers=6, not_recorded=1, prompt_tokens=400, completion_tokens=40, unpriced_answers=1,
            priced_cost=0.0004, model_calls=3, unpriced_calls=1),
    ]  # fmt: skip
    lines = render_report(assemble(WEEK, measured(usage=usage))).splitlines()
    start = lines.index("Model usage")
    assert lines[start + 1].split()[-2:] == ["not", "recorded"]
    assert "0.000100" in lines[start + 2] and "100.0 / 10.0" in lines[start + 2]
    assert "no model calls" in lines[start + 3]
    assert "unknown (unpriced calls)" in lines[start + 4]


def test_periods_are_keyed_by_their_utc_day() -> None:
    report = assemble(
        Window(WEEK.since, WEEK.until, "day"),
        measured(routes=[row(datetime(2026, 11, 3), questions=1, answered=1, low_confidence=0, abstained=0)]),
    )
    assert [p["start"] for p in report["periods"]] == [date(2026, 11, 3).isoformat()]
    assert report["periods"][0]["end"] == "2026-11-04"


# --- the sampled measures: stratified by day, and the relaxed re-check as an upper estimate ---------------


def test_the_stratified_rate_and_its_interval_match_a_hand_computation() -> None:
    # Day A: 1,000 sentences delivered, 10 judged, 2 unsupported; day B: 100 delivered, 90 judged, none
    # unsupported; day C: 400 delivered, nothing judged (left out, and counted as not covered).
    days = [Stratum(1000, 10, 2), Stratum(100, 90, 0), Stratum(400, 0, 0)]
    # W_A = 1000/1100, W_B = 100/1100: 0.9091 × 2/10 + 0.0909 × 0/90 = 0.1818 (the pooled 2/100 says 2%).
    assert stratified(days) == pytest.approx(0.181818, abs=1e-6)
    # p̃_A = (2+2)/(10+4) = 0.285714, p̃_B = (0+2)/(90+4) = 0.021277;
    # centre = 0.9091 × 0.285714 + 0.0909 × 0.021277 = 0.261674;
    # variance = 0.9091² × 0.285714 × 0.714286 / 14 + 0.0909² × 0.021277 × 0.978723 / 94 = 0.0120492;
    # half = 1.959964 × √0.0120492 = 0.215143: [0.0465, 0.4768].
    assert stratified_interval(days) == {
        "low": 0.0465,
        "high": 0.4768,
        "confidence": 0.95,
        "method": "stratified agresti-coull",
    }
    assert coverage(days) == {"n": 1100, "of": 1500, "rate": 0.7333}
    # 0 unsupported still has an upper bound: (0+2)/(40+4) = 0.04545 ± 1.96 × √(0.04545 × 0.95455 / 44).
    assert stratified_interval([Stratum(50, 40, 0)]) == {
        "low": 0.0,
        "high": 0.107,
        "confidence": 0.95,
        "method": "stratified agresti-coull",
    }
    assert stratified([Stratum(400, 0, 0)]) is None and stratified_interval([]) is None


def test_when_every_judged_sentence_is_in_one_day_the_rate_is_the_plain_share() -> None:
    assert stratified([Stratum(500, 40, 2), Stratum(300, 0, 0)]) == 2 / 40
    measure = audit_measures.hallucination_rate(
        [{"utc_day": date(2026, 11, 3), "independent": True, "judged": 40, "unsupported": 2, "answers": 9,
          "verifiers": ["llm-judge:audit"]}],
        {date(2026, 11, 3): 500, date(2026, 11, 4): 300},
    )  # fmt: skip
    assert (measure["rate"], measure["n"], measure["sample_size"]) == (0.05, 2, 40)
    assert measure["coverage"] == {"n": 500, "of": 800, "rate": 0.625}
    assert measure["method"] == "stratified by day, weighted by delivered sentences"


def sentences(day: datetime, week: datetime, judged: int, unsupported: int, **more: Any) -> dict[str, Any]:
    return {"period": week, "utc_day": day.date(), "independent": True, "judged": judged,
            "unsupported": unsupported, "not_judged": 0, "answers": 1, **more}  # fmt: skip


def delivered(day: datetime, week: datetime, n: int) -> dict[str, Any]:
    return {"period": week, "utc_day": day.date(), "delivered": n}


def test_each_period_and_the_total_weight_their_days_by_the_sentences_delivered() -> None:
    monday, tuesday, next_day = MONDAY, datetime(2026, 11, 3), datetime(2026, 11, 10)
    daily = measured(
        delivered=[
            delivered(monday, MONDAY, 1000),
            delivered(tuesday, MONDAY, 100),
            delivered(next_day, NEXT_MONDAY, 50),
        ],
        audit_sentences=[
            sentences(monday, MONDAY, 10, 2, verifiers=["a"], tried=["a"]),
            sentences(tuesday, MONDAY, 90, 0, verifiers=["b"], tried=["b"]),
            sentences(next_day, NEXT_MONDAY, 5, 1, verifiers=["a"], tried=["a"]),
        ],
        human_labels=[
            {"period": MONDAY, "utc_day": monday.date(), "sentences": 4, "unsupported": 1, "labelled_answers": 1,
             "abstentions": 2, "wrong": 1},
            {"period": MONDAY, "utc_day": tuesday.date(), "sentences": 20, "unsupported": 0, "labelled_answers": 3,
             "abstentions": 0, "wrong": 0},
        ],
    )  # fmt: skip
    report = assemble(WEEK, daily)
    first, second = (p["hallucination_rate"] for p in report["periods"])
    assert (first["rate"], first["n"], first["sample_size"]) == (0.1818, 2, 100)
    assert first["interval"] == stratified_interval([Stratum(1000, 10, 2), Stratum(100, 90, 0)])
    assert first["verifier"] == ["a", "b"] and first["answers"] == 2
    assert (second["rate"], second["n"], second["sample_size"]) == (0.2, 1, 5), "a lone day: its plain share"
    total = report["total"]["hallucination_rate"]
    assert total["rate"] == round((1000 * 2 / 10 + 100 * 0 / 90 + 50 * 1 / 5) / 1150, 4)
    assert (total["n"], total["sample_size"]) == (3, 105), "the raw counts stay beside the weighted rate"
    assert total["coverage"] == {"n": 1150, "of": 1150, "rate": 1.0}
    people = report["periods"][0]["human"]
    assert people["hallucination_rate"]["rate"] == round(1000 / 1100 * 1 / 4, 4)
    assert people["hallucination_rate"]["coverage"] == {"n": 1100, "of": 1100, "rate": 1.0}
    assert people["wrong_abstention"]["rate"] == 0.5 and people["wrong_abstention"]["interval"]["method"] == "wilson"
    assert report["periods"][1]["human"]["hallucination_rate"]["status"] == "not_measured"


def test_the_relaxed_recheck_is_an_upper_estimate_with_its_false_alarms_and_no_interval() -> None:
    calibration = json.loads((REPO / "rag" / "calibration.json").read_text(encoding="utf-8"))
    golden = calibration["relaxed_recheck"]["report_check"]["golden"]
    flagged = golden["unanswerable"] - golden["unanswerable_true_gap"]
    assert golden["unanswerable"] == 9 and 0 <= flagged <= 9, "the report set's figures at the chosen threshold"
    parts = calibration["relaxed_recheck"]["report_check"]["golden_parts"]
    parts_flagged = parts["unanswerable"] - parts["unanswerable_true_gap"]
    report = assemble(WEEK, measured(audit_abstentions=[row(None, checked=12, possibly_answerable=3)]))
    measure = report["total"]["wrong_abstention"]
    assert "interval" not in measure
    assert measure["kind"] == "upper_estimate" and (measure["n"], measure["sample_size"]) == (3, 12)
    assert measure["false_alarms"] == {
        "n": flagged,
        "of": 9,
        "rate": round(flagged / 9, 4),
        "set": "sample/golden.yaml",
        "threshold": calibration["relaxed_threshold"],
        "date": calibration["relaxed_recheck"]["date"],
        "parts": {
            "n": parts_flagged,
            "of": parts["unanswerable"],
            "rate": round(parts_flagged / parts["unanswerable"], 4),
        },
    }
    assert report["periods"][0]["wrong_abstention"]["status"] == "not_measured"
    assert report["periods"][0]["wrong_abstention"]["false_alarms"] == measure["false_alarms"]
    assert audit_measures.false_alarms({}, 0.45) is None, "before the benchmark has run"

    lines = render_report(report).splitlines()
    relaxed = next(i for i, line in enumerate(lines) if line.startswith("Abstentions that relaxed retrieval"))
    assert lines[relaxed] == (
        f"Abstentions that relaxed retrieval finds possibly answerable (upper estimate: flags {flagged}/9 correct "
        "abstentions on sample/golden.yaml): 3/12 re-checked (25.0%), no interval."
    )
    assert lines[relaxed + 1] == "Wrong abstentions (human labels): not measured (no labels imported)."
    assert "CI" not in lines[relaxed]


def test_the_peoples_wrong_abstention_rate_is_the_headline_when_there_are_labels() -> None:
    labels = [{"period": MONDAY, "utc_day": MONDAY.date(), "sentences": 0, "abstentions": 5, "wrong": 1}]
    report = assemble(
        WEEK, measured(audit_abstentions=[row(None, checked=12, possibly_answerable=3)], human_labels=labels)
    )
    lines = render_report(report).splitlines()
    people = next(i for i, line in enumerate(lines) if line.startswith("Wrong abstentions"))
    assert lines[people].startswith("Wrong abstentions (human labels): 1/5 abstentions (20.0%, 95% CI ")
    assert lines[people + 1].startswith("Abstentions that relaxed retrieval finds possibly answerable (upper ")
