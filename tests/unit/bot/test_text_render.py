"""`bot.render.text`: the terminal renderings of an answer and of an eval summary, asserted on the returned text."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from bot.render.text import render_summary, render_text
from rag.insights.evaluation.golden import GoldenItem
from rag.insights.evaluation.run import score_question, summarise
from rag.model.answers import DEFAULT_REFUSAL, Answer, AnswerSentence, Source

TRACE = "3f2a9c1e-7d4b-4b8e-9a51-0c6d2e8f1a77"
TEXT = "Full-time employees receive 24 days of paid annual leave [1]. Up to 5 days carry over [2]."


def leave_answer(**kw: object) -> Answer:
    sources = (
        Source(
            1,
            "/data/handbook/hr-leave-policy.md",
            "Leave policy",
            "Annual leave",
            "Full-time employees receive 24 days.",
            0.81,
            url="https://intranet.example/leave",
            effective_date=date(2026, 1, 1),
        ),
        Source(2, "/data/handbook/employee-faq-2024.md", "Employee FAQ", "Employee FAQ", "Carry over.", 0.55),
    )
    fields: dict[str, object] = {
        "sentences": (AnswerSentence("Full-time employees receive 24 days.", (1,)),),
        "sources": sources,
        "trace_id": TRACE,
        "timings_ms": {"total": 412.6},
    }
    fields.update(kw)
    return Answer("How many days of leave?", "answered", TEXT, **fields)  # type: ignore[arg-type]


def test_render_text_starts_with_the_answer() -> None:
    assert render_text(leave_answer()).splitlines()[0] == TEXT


def test_render_text_lists_sources_with_numbers_dates_and_locations() -> None:
    lines = render_text(leave_answer()).splitlines()
    start = lines.index("Sources:")
    assert lines[start + 1] == "  [1] Leave policy > Annual leave, effective 2026-01-01"
    assert lines[start + 2] == "      https://intranet.example/leave"  # the URL, not the path
    assert lines[start + 3] == "  [2] Employee FAQ"  # a heading equal to the title is not repeated; no date
    assert lines[start + 4] == "      /data/handbook/employee-faq-2024.md"
    assert "/data/handbook/hr-leave-policy.md" not in render_text(leave_answer())


def test_render_text_route_line() -> None:
    last = render_text(leave_answer()).splitlines()[-1]
    assert last == f"route: answered · 413 ms · trace {TRACE}"
    low = render_text(replace(leave_answer(), route="low_confidence")).splitlines()[-1]
    assert low.startswith("route: LOW CONFIDENCE · ")


def test_render_text_shows_how_a_rewritten_question_was_read() -> None:
    rewritten = leave_answer(rewritten_question="How much does the Business plan cost per month?")
    assert "(read as: How much does the Business plan cost per month?)" in render_text(rewritten).splitlines()
    assert "read as" not in render_text(leave_answer())


def test_render_text_of_an_abstention_has_no_sources_block() -> None:
    answer = Answer("Pension?", "abstained", DEFAULT_REFUSAL, trace_id=TRACE)
    rendered = render_text(answer)
    assert rendered.splitlines()[0] == DEFAULT_REFUSAL
    assert "Sources:" not in rendered
    assert rendered.splitlines()[-1] == f"route: abstained · 0 ms · trace {TRACE}"


def golden(id: str, answerable: bool, tags: tuple[str, ...], keywords: tuple[str, ...] = ()) -> GoldenItem:
    return GoldenItem(id, f"{id}?", answerable, None, ("hr-leave-policy",), keywords, tags)


def eval_run() -> tuple[dict[str, object], list[dict[str, object]]]:
    results = [
        score_question(golden("leave", True, ("answerable",), ("24 days",)), leave_answer(), [], None),
        score_question(
            golden("carry", True, ("answerable",), ("31 March",)),
            leave_answer(timings_ms={"total": 900.0}),
            [],
            None,
        ),
        score_question(golden("pension", False, ("unanswerable",)), leave_answer(), [], None),
        score_question(
            golden("bonus", True, ("answerable",)),
            Answer("Bonus?", "abstained", DEFAULT_REFUSAL, timings_ms={"total": 100.0}),
            [],
            None,
        ),
    ]
    return summarise(results), [r.as_json() for r in results]


def test_render_summary_headline_and_rates() -> None:
    summary, per_question = eval_run()
    lines = render_summary(summary, per_question).splitlines()
    assert lines[0] == "4 questions: answered 3/4 (75%), low_confidence 0/4 (0%), abstained 1/4 (25%)"
    rows = {line.split("  ")[0]: line.rsplit("  ", 1)[-1] for line in lines[2:14]}
    assert rows["abstained on unanswerable"] == "0/1 (0%)"
    assert rows["wrong abstention on answerable"] == "1/3 (33%)"
    assert rows["keywords present (answered, answerable)"] == "1/2 (50%)"
    assert rows["multi-part split and answered right"] == "n/a"
    assert any(line.startswith("latency p50 / p95") and line.endswith(" ms") for line in lines)


def test_render_summary_by_tag_and_misses() -> None:
    summary, per_question = eval_run()
    rendered = render_summary(summary, per_question)
    lines = rendered.splitlines()
    answerable = next(line for line in lines if line.strip().startswith("answerable "))
    assert "3 q · answered 2 · low 0 · abstained 1 · keywords 1/2 (50%)" in answerable
    misses = lines[lines.index("to look at:") + 1 :]
    assert "  carry: keywords missing" in misses
    assert "  pension: answered an unanswerable question" in misses
    assert "  bonus: abstained on an answerable question" in misses
    assert not any(line.startswith("  leave:") for line in misses)


def test_render_summary_without_misses_has_no_section() -> None:
    summary, per_question = eval_run()
    good = [q for q in per_question if q["id"] == "leave"]
    assert "to look at:" not in render_summary(summary, good)
