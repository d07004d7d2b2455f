"""The pure parts of `candor gaps`: gap items from trace rows, the re-check scope, the budget of
re-checks, the majority label, and the text renderer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.render.gaps_text import NO_GAPS, render_gaps
from rag.insights.gaps.find import (
    RECHECK_CAP,
    GapItem,
    examples,
    items_of,
    label_of,
    normalise,
    recheck_scope,
    to_recheck,
)
from rag.insights.gaps.queries import GapRow
from rag.insights.relaxed import Recheck
from rag.model.types import AccessScope

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def row(route: str, question: str, *, parts: tuple[str, ...] = (), scope: Any = None, minutes: int = 0) -> GapRow:
    return GapRow(f"t-{question[:8]}-{minutes}", T0 + timedelta(minutes=minutes), route, question, scope, parts)


def test_items_are_the_question_or_the_unanswered_parts() -> None:
    rows = [
        row("abstained", "<@U0BOT> When is the  Christmas party?"),
        row("low_confidence", "What is the pension match?"),
        row("answered", "How long is the trial, and is there a gym?", parts=("Is there a gym?",)),
    ]
    items = items_of(rows, None)
    assert [(i.text, i.part, i.route) for i in items] == [
        ("When is the Christmas party?", False, "abstained"),  # markup stripped, as the pipeline read it
        ("What is the pension match?", False, "low_confidence"),
        ("Is there a gym?", True, "answered"),
    ]


def test_recheck_scope_never_reads_more_than_the_asker() -> None:
    assert recheck_scope(None, None) == AccessScope.public(None)
    assert recheck_scope(None, "hr") == AccessScope.public(frozenset({"hr"}))
    stored = {"groups": ["hr-confidential"], "knowledge_bases": ["hr", "it"]}
    assert recheck_scope(stored, None) == AccessScope(frozenset({"hr-confidential"}), frozenset({"hr", "it"}))
    assert recheck_scope(stored, "hr") == AccessScope(frozenset({"hr-confidential"}), frozenset({"hr"}))
    everywhere = {"groups": [], "knowledge_bases": None}
    assert recheck_scope(everywhere, "it") == AccessScope(frozenset(), frozenset({"it"}))
    # a --kb the stored scope did not include never widens it
    assert recheck_scope(stored, "finance") == AccessScope(frozenset({"hr-confidential"}), frozenset({"hr", "it"}))


def test_normalise_joins_what_people_typed_the_same() -> None:
    assert normalise("  When is  the Christmas party? ") == normalise("when is the christmas party")


PUBLIC = AccessScope()


def item(text: str, minutes: int, scope: AccessScope = PUBLIC) -> GapItem:
    return GapItem(f"t{minutes}", T0 + timedelta(minutes=minutes), "abstained", text, False, scope)


def test_recheck_budget_medoid_first_then_newest_distinct_texts() -> None:
    items = [item("Is there a gym?", 0), item("is there a gym", 5), item("Gym perk?", 3), item("Gym discount?", 1)]
    assert to_recheck(items, [0, 1, 2, 3], 2) == [2, 1, 3]  # "is there a gym" once, its newest asking
    many = [item(f"gym question {n}", n) for n in range(RECHECK_CAP + 5)]
    picked = to_recheck(many, list(range(len(many))), 0)
    assert len(picked) == RECHECK_CAP and picked[0] == 0 and picked[1] == len(many) - 1
    other_scope = [item("Is there a gym?", 0), item("Is there a gym?", 1, AccessScope(frozenset({"hr"})))]
    assert to_recheck(other_scope, [0, 1], 0) == [0, 1]  # same words, other reader: its own re-check


def test_examples_are_distinct_newest_first_with_counts() -> None:
    items = [item("Is there a gym?", 0), item("is there a gym", 5), item("Gym perk?", 3)]
    got = examples(items, [0, 1, 2])
    assert [(e["text"], e["count"], e["trace_id"]) for e in got] == [
        ("is there a gym", 2, "t5"),
        ("Gym perk?", 1, "t3"),
    ]


def recheck(label: str) -> Recheck:
    return Recheck(label, 0.5, 0.45, ())  # type: ignore[arg-type]


def test_majority_label_and_ties_ask_a_person_to_look() -> None:
    assert label_of([recheck("true_gap")] * 2 + [recheck("possibly_answerable")]) == "true_gap"
    assert label_of([recheck("true_gap"), recheck("possibly_answerable")]) == "possibly_answerable"
    assert label_of([recheck("possibly_answerable")] * 3) == "possibly_answerable"


def gaps_json(clusters: list[dict[str, Any]], items: int) -> dict[str, Any]:
    return {
        "gaps_format": 1,
        "window": {"since": "2026-03-01T00:00:00+00:00", "until": "2026-03-16T00:00:00+00:00", "knowledge_base": "hb"},
        "traces_in_window": items,
        "traces_read": items,
        "items": items,
        "max_items": 5000,
        "capped": False,
        "clustering": {"method": "average linkage, cosine distance", "distance": 0.49, "embedder": "minilm"},
        "min_size": 2,
        "recheck": {"shortlist": 60, "per_cluster_cap": 7},
        "clusters": clusters,
        "labels": {"true_gap": 1, "possibly_answerable": 0},
        "left_out": {"items": 1, "clusters": 1},
    }


def test_text_rendering() -> None:
    example = {
        "text": "When is the Christmas party?",
        "trace_id": "abc",
        "created_at": "2026-03-04T10:00:00+00:00",
        "route": "answered",
        "part": True,
        "count": 2,
    }
    cluster = {
        "id": 1,
        "size": 3,
        "representative": example,
        "examples": [example],
        "routes": {"abstained": 1, "answered": 2},
        "unanswered_parts": 2,
        "first_seen": "2026-03-02T09:00:00+00:00",
        "last_seen": "2026-03-04T10:00:00+00:00",
        "label": "true_gap",
        "recheck": {"members_checked": 3, "possibly_answerable": 0, "texts_rechecked": 2, "threshold": 0.45},
        "evidence": {
            "question": "When is the Christmas party?",
            "score": 0.39,
            "passages": [
                {
                    "document": "overview.md",
                    "title": "Overview",
                    "heading": "Calendar",
                    "sentence": "We meet.",
                    "score": 0.39,
                }
            ],
        },
    }
    text = render_gaps(gaps_json([cluster], 4))
    assert "knowledge base hb: 4 unanswered questions and parts, 1 clusters of 2 or more (1 true gaps" in text
    assert "1. TRUE GAP: 3 asked (abstained 1, unanswered part 2); 0/3 re-checked possibly answerable" in text
    assert "   - When is the Christmas party? x2  (2026-03-04, unanswered part, part, trace abc)" in text
    assert (
        "best evidence (0.39 < threshold 0.45)" in text and "0.39 overview.md (Overview > Calendar): We meet." in text
    )
    assert "1 questions in 1 smaller clusters not shown" in text
    assert NO_GAPS in render_gaps(gaps_json([], 0))
