"""`candor eval`'s tokens and cost per answer: `rag.insights.evaluation.run.Usage` in the summary and per question, and
its lines in `bot.render.text.render_summary`, on hand-built answers (no database, no model)."""

from __future__ import annotations

from bot.render.text import render_summary
from rag.insights.evaluation.run import Scored, run_eval, score_question, summarise
from rag.model.answers import Answer, ModelCall, Question
from rag.model.types import AccessScope, Passage
from tests.unit.insights.test_golden_and_eval import LEAVE, abstained, answered, item, passage, source

WRITER = ModelCall("writer", "gpt-4o-mini", 1000, 100, 500.0, "ok", "json_schema", cost=0.0003)
JUDGE = ModelCall("judge", "gpt-4o-mini", 800, 50, 300.0, "ok", "json_schema", cost=0.0002)
RETRY = ModelCall("writer", "gpt-4o-mini", 1200, 200, 600.0, "malformed", "prompt", "unreadable", cost=0.0004)
UNPRICED = ModelCall("judge", "local-llama", 500, 20, 250.0, "ok", "json_object")


def results(*calls_per_answer: tuple[ModelCall, ...]) -> list[Scored]:
    """One answered question per entry, its answer having made those calls."""
    return [
        score_question(
            item(f"leave-{n}"),
            answered(LEAVE, source(1, "hr-leave-policy"), model_calls=calls),
            [passage("hr-leave-policy")],
            None,
        )
        for n, calls in enumerate(calls_per_answer)
    ]


def lines_after_latency(summary: dict[str, object]) -> list[str]:
    lines = render_summary(summary, []).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("latency p50 / p95"))
    return lines[start + 1 : lines.index("by tag:") - 1]


def test_an_offline_run_says_no_model_was_called_rather_than_showing_zeros() -> None:
    offline = [*results((), ()), score_question(item("pension", answerable=False), abstained(), [], None)]
    summary = summarise(offline)

    assert summary["usage"] == {
        "answers": 3,
        "model_calls": 0,
        "unpriced_calls": 0,
        "prompt_tokens": {"total": 0, "per_answer": 0.0},
        "completion_tokens": {"total": 0, "per_answer": 0.0},
        "cost": {"total": 0.0, "per_answer": 0.0},
    }
    assert [line.split("  ")[0] for line in lines_after_latency(summary)] == ["model calls"]
    assert lines_after_latency(summary)[0].endswith("  no model calls (offline stages)")
    assert "tokens in / out" not in render_summary(summary, [])


def test_tokens_and_cost_per_answer_are_means_over_the_answers_with_totals() -> None:
    scored = [*results((WRITER, JUDGE), (), (RETRY,))]
    summary = summarise(scored)

    assert summary["usage"] == {
        "answers": 3,
        "model_calls": 3,
        "unpriced_calls": 0,
        "prompt_tokens": {"total": 3000, "per_answer": 1000.0},
        "completion_tokens": {"total": 350, "per_answer": 116.7},
        "cost": {"total": 0.0009, "per_answer": 0.0003},
    }
    rows = {line.split("  ")[0]: line.rsplit("  ", 1)[-1] for line in lines_after_latency(summary)}
    assert rows == {
        "model calls": "3 for 3 answers",
        "tokens in / out per answer": "1000.0 / 116.7 (total 3000 / 350)",
        "cost per answer": "0.000300 (total 0.000900)",
    }


def test_an_unpriced_call_makes_the_cost_unknown_not_smaller() -> None:
    summary = summarise(results((WRITER,), (UNPRICED,)))

    usage = summary["usage"]
    assert (usage["model_calls"], usage["unpriced_calls"]) == (2, 1)
    assert usage["prompt_tokens"] == {"total": 1500, "per_answer": 750.0}
    assert usage["cost"] == {"total": None, "per_answer": None}
    cost_line = lines_after_latency(summary)[-1]
    assert cost_line.startswith("cost per answer")
    assert cost_line.endswith("  unknown: 1 of 2 calls to models CANDOR_LLM_COSTS does not price")


def test_each_question_reports_its_answers_calls_tokens_and_cost() -> None:
    priced, offline, unpriced = (r.as_json() for r in results((WRITER, JUDGE), (), (UNPRICED,)))

    assert {k: priced[k] for k in ("answers", "model_calls", "prompt_tokens", "completion_tokens", "cost")} == {
        "answers": 1,
        "model_calls": 2,
        "prompt_tokens": 1800,
        "completion_tokens": 150,
        "cost": 0.0005,
    }
    assert (offline["model_calls"], offline["prompt_tokens"], offline["cost"]) == (0, 0, 0.0)
    assert (unpriced["model_calls"], unpriced["cost"]) == (1, None)
    assert priced["route"] == "answered" and priced["keywords_ok"] is True, "the other fields are unchanged"


async def test_a_restricted_question_counts_both_of_its_answers() -> None:
    """Asked with its group (scored) and without (the leak check): both answers' calls are paid for."""
    restricted = item("salary", tags=("restricted",), required_access=("hr-confidential",))

    async def ask(question: Question) -> Answer:
        assert question.scope is not None
        if question.scope.groups:
            return answered(LEAVE, source(1, "hr-leave-policy"), model_calls=(WRITER, JUDGE))
        return Answer("q?", "abstained", "I don't know.", timings_ms={"total": 10.0}, model_calls=(UNPRICED,))

    async def search(text: str, scope: AccessScope) -> list[Passage]:
        return [passage("hr-leave-policy")]

    [scored] = await run_eval([restricted], ask, search, kb=None)

    assert scored.leak is False
    assert scored.as_json()["answers"] == 2
    assert (scored.usage.calls, scored.usage.prompt_tokens, scored.usage.completion_tokens) == (3, 2300, 170)
    assert scored.as_json()["cost"] is None, "the leak check's answer called an unpriced model"
    usage = summarise([scored])["usage"]
    assert usage["answers"] == 2
    assert usage["prompt_tokens"] == {"total": 2300, "per_answer": 1150.0}
