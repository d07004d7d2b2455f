"""Gate `premise` on hand-built passages: names and codes the question takes for granted."""

from __future__ import annotations

from rag.pipeline.gates.premise import alternatives, premise_gate, unknown_names
from tests.unit.pipeline.stage_data import passage

PLANS = (
    passage(1, "The Starter plan costs $9 per user per month.", title="Pricing"),
    passage(2, "The Team plan costs $19 per user per month; the Business plan is quoted.", title="Pricing"),
)
COLLECTORS = (passage(3, "The NW-200X collector monitors up to 500 hosts; the NW-200 monitors 100."),)


def test_a_name_no_passage_mentions_is_unknown_and_the_same_kind_is_offered_instead() -> None:
    question = "How much does the Platinum plan cost?"
    unknown = unknown_names(question, PLANS)
    assert unknown == ("Platinum",)
    assert alternatives(question, unknown, PLANS) == ("the Starter plan", "the Team plan", "the Business plan")


def test_a_name_the_passages_mention_is_known() -> None:
    assert unknown_names("How much does the Team plan cost?", PLANS) == ()


def test_an_unknown_code_is_offered_the_codes_of_its_family() -> None:
    question = "How many hosts can the NW-900 collector monitor?"
    unknown = unknown_names(question, COLLECTORS)
    assert unknown == ("NW-900",)
    assert set(alternatives(question, unknown, COLLECTORS)) == {"NW-200X", "NW-200"}


def test_the_gate_fails_with_what_is_missing_and_scores_the_share_known() -> None:
    parts = ("How much does the Platinum plan cost?", "How much does the Team plan cost?")
    gate = premise_gate(parts, {0: ("Platinum",)}, 2)
    assert gate.gate == "premise" and not gate.passed and gate.attempt == 2
    assert gate.score == 0.5  # one of the two names asked about is missing
    assert gate.details["parts"] == [
        {"part": parts[0], "unknown": ["Platinum"]},
        {"part": parts[1], "unknown": []},
    ]
    assert premise_gate(parts, {}, 1).passed
    assert premise_gate(("How do I reset my password?",), {}, 1).score == 1.0  # no names asked about
