"""Gate `premise` on hand-built passages: names and codes the question takes for granted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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


RELEASES = (
    passage(4, "TervaneOS v3.2.1 fixes the Wi-Fi drop; the RT-9i still runs v3.1.4.", title="Release notes"),
    passage(5, "API v2.2-beta adds the Insights endpoint. Version 2.1 is the stable version.", title="Changelog"),
)


def test_a_version_no_passage_names_is_unknown_whole_and_as_asked() -> None:
    assert unknown_names("What did the TervaneOS v3.2.2 update fix?", RELEASES) == ("v3.2.2",)
    assert unknown_names("What changed in API v2.3 compared with v2.1?", RELEASES) == ("v2.3",)
    assert unknown_names("What did TervaneOS 3.2.1 fix?", RELEASES) == ()  # without its v, still v3.2.1
    assert unknown_names("What does version 2.1 change?", RELEASES) == ()
    assert unknown_names("Is v2.2 covered by the SLA?", RELEASES) == ()  # the v2.2 there is, its beta
    assert unknown_names("What did v3.2 fix?", RELEASES) == ("v3.2",)  # not a prefix of v3.2.1
    assert unknown_names("Is the address 192.168.1.1 or 192.168.50.1?", RELEASES) == ()  # addresses
    assert unknown_names("Does the plan cost 2.5 euros?", RELEASES) == ()  # an amount is no version


@given(st.lists(st.integers(0, 40), min_size=2, max_size=3), st.lists(st.integers(0, 40), min_size=2, max_size=3))
def test_versions_are_matched_whole(asked: list[int], written: list[int]) -> None:
    question, text = "v" + ".".join(map(str, asked)), "v" + ".".join(map(str, written))
    found = unknown_names(f"What changed in {question}?", (passage(9, f"Release {text} is out."),))
    assert (found == ()) == (asked == written), (question, text, found)
