"""`rag.insights.evaluation.golden.load_golden` on the sample and on broken files;
`rag.insights.evaluation.run` scoring on hand-built answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag.errors import EvalError
from rag.insights.evaluation.golden import GoldenConflict, GoldenItem, GoldenPart, load_golden
from rag.insights.evaluation.run import Scored, score_question, summarise
from rag.model.answers import Answer, AnswerSentence, Conflict, DroppedSentence, Source
from rag.model.types import Passage

GOLDEN = Path(__file__).resolve().parents[3] / "sample" / "golden.yaml"
REFUSAL = "I don't know - the knowledge base does not cover this."


# ---------------------------------------------------------------- load_golden


def test_the_sample_golden_file_loads() -> None:
    items = load_golden(GOLDEN)
    by_id = {item.id: item for item in items}
    assert len(items) == len(by_id) == 40
    carry = by_id["leave-carryover"]
    assert carry.answerable is True
    assert carry.sources == ("hr-leave-policy",)
    assert carry.keywords == ("5 days", "31 March")
    assert carry.tags == ("answerable",)
    assert by_id["team-plan-monthly-price"].conflict == GoldenConflict(
        "$15", "$12", "price-list-2026", "announcement-team-plan-2025"
    )
    parts = by_id["business-price-and-nonprofit"].parts
    assert [p.answerable for p in parts] == [True, False]
    assert parts[0].keywords == ("$29",)
    assert by_id["l3-salary-band"].required_access == ("hr-confidential",)
    assert sum(1 for i in items if i.conflict) == 3
    assert sum(1 for i in items if i.parts) == 4
    assert any(not i.answerable for i in items)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: a\nquestion: q\n", "non-empty list"),
        ("[]\n", "non-empty list"),
        ("- just a string\n", "entry 1: each entry is a mapping"),
        ("- {id: a, question: Q, answerable: true}\n- {question: Q, answerable: true}\n", "entry 2: missing 'id'"),
        ("- {id: a, question: Q, answerable: maybe}\n", r"entry 1 \(a\): answerable must be true or false"),
        ("- {id: a, question: '  ', answerable: true}\n", r"\(a\): question must be a non-empty string"),
        ("- {id: a, question: Q, answerable: true, keywords: '5 days'}\n", r"\(a\): keywords must be a list"),
        ("- {id: a, question: Q, answerable: true}\n- {id: a, question: R, answerable: false}\n", r"duplicate.*'a'"),
        ("- {id: a, question: Q, answerable: true, conflict: {preferred: $15}}\n", r"\(a\): conflict needs"),
        ("- {id: a, question: Q, answerable: true, parts: [{answerable: true}]}\n", r"\(a\): each part needs"),
        ("- {id: a, question: [unclosed\n", "not valid YAML"),
    ],
)
def test_malformed_golden_files_name_the_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvalError, match=message):
        load_golden(path)


def test_an_unreadable_golden_file(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="cannot read"):
        load_golden(tmp_path / "missing.yaml")


# ---------------------------------------------------------------- score_question and summarise


def item(id: str, *, answerable: bool = True, tags: tuple[str, ...] = ("answerable",), **kw: object) -> GoldenItem:
    defaults: dict[str, object] = {"answer": None, "sources": ("hr-leave-policy",), "keywords": ("24 days",)}
    defaults.update(kw)
    return GoldenItem(id=id, question=f"{id}?", answerable=answerable, tags=tags, **defaults)  # type: ignore[arg-type]


def source(n: int, stem: str) -> Source:
    return Source(n, f"/data/handbook/{stem}.md", stem, "", "excerpt", 0.7)


def passage(stem: str) -> Passage:
    return Passage(1, 1, f"/data/handbook/{stem}.md", stem, "", "text", 0.1, 0.7, None)


def answered(text: str, *sources: Source, citations: tuple[int, ...] = (1,), **kw: object) -> Answer:
    return Answer(
        "q?",
        "answered",
        text,
        sentences=(AnswerSentence(text, citations),),
        sources=sources,
        timings_ms={"total": 100.0},
        **kw,  # type: ignore[arg-type]
    )


def abstained() -> Answer:
    return Answer("q?", "abstained", REFUSAL, timings_ms={"total": 50.0})


LEAVE = "Full-time employees receive 24 days of paid annual leave [1]."


def test_an_answered_answerable_question() -> None:
    scored = score_question(
        item("leave"), answered(LEAVE, source(1, "hr-leave-policy")), [passage("hr-leave-policy")], None
    )
    assert (scored.route, scored.hit1, scored.hit5, scored.keywords_ok, scored.citations_ok) == (
        "answered",
        True,
        True,
        True,
        True,
    )
    assert scored.conflict_ok is None and scored.parts_ok is None and scored.leak is None
    missing = score_question(item("leave", keywords=("24 days", "31 March")), answered(LEAVE), [], None)
    assert missing.keywords_ok is False
    assert missing.hit1 is False and missing.hit5 is False


def test_hit_at_1_and_at_5() -> None:
    ranked = [passage("employee-faq-2024")] + [passage("other")] * 3 + [passage("hr-leave-policy")]
    scored = score_question(item("leave"), abstained(), ranked, None)
    assert (scored.hit1, scored.hit5) == (False, True)
    assert score_question(item("leave"), abstained(), [*ranked, passage("x")], None).hit5 is True
    late = [passage("other")] * 5 + [passage("hr-leave-policy")]
    assert score_question(item("leave"), abstained(), late, None).hit5 is False
    assert score_question(item("x", answerable=False, sources=()), abstained(), ranked, None).hit1 is None


def test_abstentions() -> None:
    right = score_question(item("pension", answerable=False, sources=(), keywords=()), abstained(), [], None)
    assert right.route == "abstained" and right.keywords_ok is None and right.citations_ok is True
    wrong = score_question(item("leave"), abstained(), [passage("hr-leave-policy")], None)
    assert wrong.keywords_ok is None  # not delivered: counted as a wrong abstention, not a keyword miss


def conflict_answer(preferred: int | None, values: tuple[str, ...] = ("24 days", "20 days")) -> Answer:
    sources = (source(1, "hr-leave-policy"), source(2, "employee-faq-2024"))
    note = Conflict("The sources disagree.", values, (1, 2), preferred, "newer effective date (2026-01-01)")
    return answered(LEAVE, *sources, conflicts=(note,))


CONFLICT_ITEM = item(
    "annual-leave-days",
    tags=("conflict", "answerable"),
    conflict=GoldenConflict("24 days", "20 days", "hr-leave-policy", "employee-faq-2024"),
)


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        (conflict_answer(1), True),
        (conflict_answer(2), False),  # the stale source preferred
        (conflict_answer(None), False),  # flagged, nothing preferred
        (conflict_answer(1, ("24 days", "22 days")), False),  # not the golden pair of values
        (conflict_answer(1, ("20 days", "24 days")), True),  # in either order
        (conflict_answer(1, ("24 days from 1 January", "20 days")), True),  # a value with its context
        (conflict_answer(1, ("4 days", "20 days")), False),  # not within another number
        (conflict_answer(1, ("24 days",)), False),  # one value is no disagreement
        (answered(LEAVE, source(1, "hr-leave-policy")), False),  # not flagged
    ],
)
def test_conflicts(answer: Answer, ok: bool) -> None:
    scored = score_question(CONFLICT_ITEM, answer, [], None)
    assert scored.conflict_ok is ok
    assert scored.conflict_flagged is bool(answer.conflicts)


def test_a_golden_value_written_with_its_context() -> None:
    described = GoldenConflict("24 days (full-time staff)", "20 days a year", "hr-leave-policy", "employee-faq-2024")
    golden = replace(CONFLICT_ITEM, conflict=described)
    assert score_question(golden, conflict_answer(1), [], None).conflict_ok is True
    assert score_question(golden, conflict_answer(1, ("4 days", "0 days")), [], None).conflict_ok is False


def test_a_dangling_or_missing_citation_is_invalid() -> None:
    dangling = answered(LEAVE, source(1, "hr-leave-policy"), citations=(1, 3))
    assert score_question(item("leave"), dangling, [], None).citations_ok is False
    uncited = answered(LEAVE, source(1, "hr-leave-policy"), citations=())
    assert score_question(item("leave"), uncited, [], None).citations_ok is False


def test_parts() -> None:
    golden = item(
        "price-and-nonprofit",
        keywords=("$29",),
        parts=(GoldenPart("Price?", True, ("$29",)), GoldenPart("Nonprofit discount?", False, ())),
    )
    good = answered("It costs $29 [1].", source(1, "p"), parts=("Price?", "Discount?"), unanswered_parts=("Discount?",))
    assert score_question(golden, good, [], None).parts_ok is True
    unsplit = answered("It costs $29 [1].", source(1, "p"), parts=("Price and discount?",))
    assert score_question(golden, unsplit, [], None).parts_ok is False
    invented = answered("It costs $29 [1].", source(1, "p"), parts=("Price?", "Discount?"))
    assert score_question(golden, invented, [], None).parts_ok is False


def sample_results() -> list[Scored]:
    restricted = item("salary", tags=("restricted", "answerable"), required_access=("hr-confidential",))
    dropped = DroppedSentence("Unsupported.", (1,), 1, 0.1, ("no support",))
    return [
        score_question(
            item("leave"), answered(LEAVE, source(1, "hr-leave-policy")), [passage("hr-leave-policy")], None
        ),
        score_question(item("pension", answerable=False, sources=(), tags=("unanswerable",)), abstained(), [], None),
        score_question(item("leave-2"), abstained(), [passage("employee-faq-2024")], None),
        score_question(CONFLICT_ITEM, conflict_answer(1), [passage("hr-leave-policy")], None),
        score_question(restricted, answered(LEAVE, source(1, "x"), citations=(2,), dropped=(dropped,)), [], True),
    ]


def test_summary_counts() -> None:
    summary = summarise(sample_results())
    assert summary["questions"] == 5
    assert summary["routes"]["answered"] == {"n": 3, "of": 5, "rate": 0.6}
    assert summary["routes"]["low_confidence"] == {"n": 0, "of": 5, "rate": 0.0}
    assert summary["abstention_on_unanswerable"] == {"n": 1, "of": 1, "rate": 1.0}
    assert summary["wrong_abstention_on_answerable"] == {"n": 1, "of": 4, "rate": 0.25}
    assert summary["hit@1"] == {"n": 2, "of": 4, "rate": 0.5}
    assert summary["keyword_accuracy"] == {"n": 3, "of": 3, "rate": 1.0}
    assert summary["conflict_flag_recall"] == {"n": 1, "of": 1, "rate": 1.0}
    assert summary["conflict_resolved_correctly"] == {"n": 1, "of": 1, "rate": 1.0}
    assert summary["false_conflict_rate"] == {"n": 0, "of": 4, "rate": 0.0}
    assert summary["citations_valid"] == {"n": 4, "of": 5, "rate": 0.8}
    assert summary["restricted_leaks"] == {"n": 1, "of": 1, "rate": 1.0}
    assert summary["critic_dropped_share"] == {"n": 1, "of": 4, "rate": 0.25}
    assert summary["parts_correct"] == {"n": 0, "of": 0, "rate": None}
    assert summary["latency_ms"]["p50"] == 100.0


def test_summary_by_tag() -> None:
    by_tag = summarise(sample_results())["by_tag"]
    assert sorted(by_tag) == ["answerable", "conflict", "restricted", "unanswerable"]
    assert by_tag["answerable"]["questions"] == 4
    assert (by_tag["answerable"]["answered"], by_tag["answerable"]["abstained"]) == (3, 1)
    assert by_tag["answerable"]["keywords_ok"] == {"n": 3, "of": 3, "rate": 1.0}
    assert by_tag["unanswerable"] == {
        "questions": 1,
        "answered": 0,
        "low_confidence": 0,
        "abstained": 1,
        "keywords_ok": {"n": 0, "of": 0, "rate": None},
    }
