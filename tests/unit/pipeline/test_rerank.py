"""`rag.pipeline.rerank`'s pure parts: what fits the asked type."""

from __future__ import annotations

import pytest

from rag.pipeline.rerank import only_siblings, type_match
from rag.pipeline.understand import answer_type


@pytest.mark.parametrize(
    ("wanted", "sentence", "fits"),
    [
        ("person", "Report it to Hannah Lindqvist, our Head of Security.", 1.0),
        ("person", "Report vulnerabilities to psirt@tervane.invalid.", 0.0),  # who heads it is a person
        ("person", "Security updates are delivered for years.", 0.0),
        ("person", "Tip: if you are evaluating Brightloom, skim the Service Level Agreement.", 0.0),
        ("quantity", "3.5 Cloud services continue for as long as updates.", 0.0),  # a section's number
        ("quantity", "Cloud Clips costs €3.99 a month.", 1.0),
        ("quantity", "A 99.5% monthly uptime commitment.", 0.0),  # the question's own figure
    ],
)
def test_type_match(wanted: str, sentence: str, fits: float) -> None:
    assert type_match(wanted, sentence, "Who heads up security at Brightloom? Uptime was 99.5%.") == fits


def test_an_address_answers_whom_to_tell() -> None:
    contact = "Report vulnerabilities to psirt@tervane.invalid."
    assert type_match("person", contact, "Who do I tell if I found a security hole?") == 1.0
    assert type_match("person", contact, "Who heads up security?") == 0.0


def test_a_sibling_alone_is_penalised_but_a_row_naming_both_is_not() -> None:
    question = "How much is a FlexPass 10-Trip for two zones?"
    asked = {"FlexPass 10-Trip"}
    assert only_siblings("The FlexPass 10-Trip Off-Peak costs €31.00.", asked, question)
    row = "Zones covered: 2 zones; FlexPass 10-Trip (Adult): €39.00; FlexPass 10-Trip Off-Peak (Adult): €31.00"
    assert not only_siblings(row, asked, question)
    assert not only_siblings("The FlexPass 10-Trip costs €39.00.", asked, question)


@pytest.mark.parametrize(
    ("question", "sentence", "fits"),
    [
        (
            "What times can I phone Travel Assist?",
            "By phone on 0800 414 200, lines open 06:00 to 22:00 every day.",
            1.0,
        ),
        ("What's the deadline for a Delay Repay claim?", "Claim within 28 days of the delayed journey.", 1.0),
        ("When was Delay Repay launched?", "Delay Repay was approved on 24 May 2022.", 1.0),
        ("When will the lift be working again?", "Buses run hourly Mon-Sat; no Sunday service.", 0.0),
        ("What is the population of Broken Bow?", "The centre lies 10 miles northwest of Broken Bow.", 0.0),
        ("What is the population of Port Vincent?", "Port Vincent had a population of 472.", 1.0),
    ],
)
def test_a_date_or_an_amount_ranks_as_the_type_asked_the_way_the_gate_reads_it(
    question: str, sentence: str, fits: float
) -> None:
    assert type_match(answer_type(question), sentence, question) == fits
