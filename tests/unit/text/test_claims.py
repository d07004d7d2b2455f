"""Sentence-level claim checks: a value moved to another subject, a flipped negation, a widened scope."""

from __future__ import annotations

import pytest

from rag.text.claims import (
    added_qualifiers,
    misattributed,
    negated,
    row_cells,
    same_subject,
    sibling_names,
    swapped_names,
    wider_scope,
)

LEAVE = [
    "The primary carer receives 16 weeks of fully paid parental leave.",
    "The secondary carer receives 4 weeks of fully paid parental leave.",
]
BEACON = [
    "Beacon keeps check results and response-time metrics for 30 days.",
    "Beacon Pro keeps check results and response-time metrics for 365 days.",
]


@pytest.mark.parametrize(
    ("claim", "wrong"),
    [
        ("The secondary carer receives 16 weeks of fully paid parental leave.", ["16 weeks"]),
        ("The primary carer receives 16 weeks of paid parental leave.", []),
        ("Primary carers get 16 weeks of parental leave.", []),
        ("The secondary carer gets 4 weeks.", []),
    ],
)
def test_a_value_must_be_stated_for_the_same_variant(claim: str, wrong: list[str]) -> None:
    assert misattributed(claim, LEAVE) == wrong


def test_a_value_must_not_belong_to_a_sibling_product() -> None:
    assert misattributed("Beacon keeps check results for 365 days.", BEACON) == ["365 days"]
    assert misattributed("Beacon Pro keeps check results for 30 days.", BEACON) == ["30 days"]
    assert misattributed("Beacon Pro keeps check results for 365 days.", BEACON) == []
    assert sibling_names(BEACON[1], {"Beacon"}, "How long does Beacon keep results?") == {"Beacon Pro"}


def test_plans_are_subjects_too() -> None:
    prices = ["The Business plan costs $29 per user per month on monthly billing."]
    assert misattributed("The Team plan costs $29 per user per month on monthly billing.", prices) == ["$29"]
    assert same_subject("The Business plan costs $29 a month.", prices[0])
    # a value nobody states is not a misattribution (the exact-facts check reports it as missing)
    assert misattributed("The Business plan costs $31 per user per month.", prices) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Business class flights are not reimbursed.", True),
        ("Alcohol isn't reimbursed.", True),
        ("No credit card is required.", True),
        ("Business class flights are reimbursed.", False),
        ("Notice periods are one month.", False),
    ],
)
def test_negation(text: str, expected: bool) -> None:
    assert negated(text) is expected


def test_scope() -> None:
    evidence = "The Business plan includes audit logs and invoice billing."
    assert wider_scope("All plans include audit logs.", evidence)
    assert wider_scope("Every plan includes audit logs.", evidence)
    assert not wider_scope("The Business plan includes audit logs.", evidence)
    assert not wider_scope("Every plan starts with a 14-day free trial.", "Every plan starts with a 14-day free trial.")


def test_a_rate_worded_for_every_unit_is_the_same_rate_and_no_scope() -> None:
    mileage = ["Business travel in a private car is reimbursed at $0.67 per mile."]
    assert misattributed("I get $0.67 for every mile I drive my private car.", mileage) == []
    assert misattributed("I get $0.67 for every day I drive my private car.", mileage) == ["$0.67"]
    assert not wider_scope("A private car is reimbursed at $0.67 for each mile.", mileage[0])
    assert wider_scope("Each private car is reimbursed at $0.67 per mile.", mileage[0])
    assert wider_scope("A private car gets $0.67 for all trips.", mileage[0])  # "all" after a value is a scope


def test_swapped_names_against_the_closest_sentence() -> None:
    evidence = "Priya Raman is the Chief Executive Officer of Northwind Labs."
    assert swapped_names("Tomasz Nowak is the Chief Executive Officer of Northwind Labs.", evidence) == {"Tomasz Nowak"}
    assert swapped_names("Priya Raman is the Chief Executive Officer.", evidence) == set()
    assert swapped_names("Beacon checks websites and APIs.", "Beacon Pro checks websites and APIs.") == {"Beacon Pro"}
    swapped = swapped_names("Severity P2 gets a response in 1 hour.", "Severity P1 gets a response in 1 hour.")
    assert any("P2" in name for name in swapped)


def test_a_rate_is_part_of_the_value() -> None:
    evidence = ["Trip type: Domestic travel; Daily meal allowance: $60 per day."]
    assert misattributed("The domestic meal allowance is $60 per week.", evidence) == ["$60"]
    assert misattributed("The domestic meal allowance is $60 per day.", evidence) == []


def test_scope_is_compared_noun_by_noun_and_no_fewer_than_is_not_a_negation() -> None:
    evidence = "Downgrading is possible at the end of any billing period."
    assert wider_scope("Every plan can downgrade at the end of a billing period.", evidence)
    assert not wider_scope("Downgrading is possible at the end of any billing period.", evidence)
    assert not negated("Flights should be booked no fewer than 14 days before travel.")
    assert negated("There is no setup fee.")


def test_a_verbatim_quote_is_recognised_despite_markdown_and_spacing() -> None:
    from rag.text.exact_checks import quoted

    evidence = ["- The **primary** carer receives 16 weeks\nof fully paid parental leave. The secondary carer ..."]
    assert quoted("The primary carer receives 16 weeks of fully paid parental leave.", evidence)
    assert not quoted("The secondary carer receives 16 weeks of fully paid parental leave.", evidence)
    assert not quoted("Leave.", evidence)  # too short to count as a quote


ROW = "Severity: P1 (Critical); Starter: 1 business day; Team: 4 business hours; Business: 1 hour, 24/7"


def test_a_table_row_is_read_cell_by_cell() -> None:
    assert row_cells(ROW) == [
        "Severity: P1 (Critical); Starter: 1 business day",
        "Severity: P1 (Critical); Team: 4 business hours",
        "Severity: P1 (Critical); Business: 1 hour, 24/7",
    ]
    assert row_cells("Note: see below.") == ["Note: see below."]
    assert row_cells("Prices: monthly; annual") == ["Prices: monthly; annual"]


def test_a_value_of_one_column_is_not_stated_for_another_columns_subject() -> None:
    swapped = "Starter plan customers receive a first response to P1 incidents within 1 hour, 24 hours a day."
    assert misattributed(swapped, [ROW]) == ["1 hour"]
    right = "Business plan customers receive a first response to P1 incidents within 1 hour."
    assert misattributed(right, [ROW]) == []


@pytest.mark.parametrize(
    ("claim", "added"),
    [
        ("Parental leave is unlimited for managers.", {"unlimited"}),
        ("Only managers may approve expenses.", {"only"}),
        ("The laptop is replaced free every three years.", {"free"}),
        ("The primary carer receives 16 weeks of fully paid parental leave.", set()),
    ],
)
def test_strong_qualifiers_the_evidence_does_not_use_are_added(claim: str, added: set[str]) -> None:
    evidence = "The primary carer receives 16 weeks of fully paid parental leave. Managers approve expenses."
    assert added_qualifiers(claim, evidence) == added
    assert added_qualifiers("It is free.", "It is free of charge.") == set()
