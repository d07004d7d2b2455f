"""`compose`: from the last attempt to what the asker reads: route, citations, sources, conflicts,
unanswered parts, caveats and the `contradiction` gate. Hand-built attempts, the real detector."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from rag.model.answers import DEFAULT_REFUSAL
from rag.pipeline.compose import LOW_CONFIDENCE, compose
from tests.unit.pipeline.stage_data import attempt, checked, passage

LEAVE = passage(
    1,
    "Full-time employees receive 24 days of paid annual leave per calendar year.",
    title="Leave Policy",
    effective=date(2026, 1, 1),
)
OLD_LEAVE = passage(
    2,
    "Full-time employees receive 20 days of paid annual leave per calendar year.",
    title="Employee FAQ (2024)",
    effective=date(2024, 3, 15),
)
HOTEL = passage(3, "Hotel costs are reimbursed up to $200 per night.", title="Expenses")


def test_nothing_supported_abstains_with_the_refusal_and_every_part_unanswered() -> None:
    parts = ("How many days of annual leave do I get?",)
    made = attempt(parts, ((LEAVE,),), (checked(LEAVE.text, (LEAVE,), supported=False),))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "abstained" and composed.text == DEFAULT_REFUSAL
    assert composed.sentences == () and composed.sources == () and composed.unanswered_parts == parts
    assert composed.gate is None  # nothing delivered: no contradiction to check


def test_an_unknown_name_is_challenged_in_the_refusal() -> None:
    made = replace(
        attempt(("How many hosts can the NW-900 monitor?",), ((HOTEL,),), ()),
        unknown_names={0: ("NW-900",)},
        known_instead={0: ("NW-200X",)},
    )
    text = compose(made, refusal=DEFAULT_REFUSAL).text
    assert text.startswith(DEFAULT_REFUSAL + "\n")
    assert '"NW-900"' in text and "NW-200X" in text


def test_supported_sentences_are_answered_with_numbered_sources_in_citation_order() -> None:
    parts = ("What is the hotel cap?", "How many days of annual leave do I get?")
    made = attempt(
        parts,
        ((HOTEL,), (LEAVE,)),
        (checked(HOTEL.text, (HOTEL,), part=0), checked(LEAVE.text, (LEAVE,), part=1)),
    )
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "answered" and composed.caveats == () and composed.unanswered_parts == ()
    assert [(s.text, s.citations) for s in composed.sentences] == [(HOTEL.text, (1,)), (LEAVE.text, (2,))]
    assert [(s.n, s.title) for s in composed.sources] == [(1, "Expenses"), (2, "Leave Policy")]
    assert composed.gate is not None and composed.gate.gate == "contradiction" and composed.gate.passed


def test_a_row_answering_two_parts_is_written_once_and_both_are_answered() -> None:
    row = passage(4, "Model: RT-9; End of sale: 2023-06-30; End of security updates: 2024-12-31", title="Lifecycle")
    parts = ("When did the RT-9 stop selling?", "When did the RT-9 stop getting patches?")
    made = attempt(parts, ((row,), (row,)), (checked(row.text, (row,), part=0), checked(row.text, (row,), part=1)))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert [(s.text, s.citations) for s in composed.sentences] == [(row.text, (1,))]
    assert composed.unanswered_parts == () and composed.text.count(row.text) == 1


def test_a_failed_faithfulness_gate_delivers_low_confidence_with_its_caveat() -> None:
    made = attempt(("What is the hotel cap?",), ((HOTEL,),), (checked(HOTEL.text, (HOTEL,)),), faithful=False)
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "low_confidence" and composed.caveats == (LOW_CONFIDENCE,)
    assert LOW_CONFIDENCE in composed.text


def test_a_part_left_unanswered_is_listed_and_said() -> None:
    parts = ("What is the hotel cap?", "Is there a gym allowance?")
    made = attempt(parts, ((HOTEL,), (HOTEL,)), (checked(HOTEL.text, (HOTEL,), part=0),))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "answered" and composed.unanswered_parts == ("Is there a gym allowance?",)
    assert "Is there a gym allowance?" in composed.text.splitlines()[-1]


def test_sources_that_disagree_are_said_with_both_and_the_newer_preferred() -> None:
    parts = ("How many days of annual leave do full-time employees get?",)
    made = attempt(parts, ((LEAVE, OLD_LEAVE),), (checked(LEAVE.text, (LEAVE,)),))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "answered"
    (conflict,) = composed.conflicts
    assert set(conflict.values) == {"24 days", "20 days"}
    assert {composed.sources[n - 1].title for n in conflict.sources} == {"Leave Policy", "Employee FAQ (2024)"}
    assert conflict.preferred is not None and composed.sources[conflict.preferred - 1].title == "Leave Policy"
    assert composed.gate is not None and not composed.gate.passed and composed.gate.score == 1.0
    assert "Sources disagree" in composed.text


def test_sources_neither_date_nor_authority_decides_between_are_both_given_and_neither_asserted() -> None:
    """Same effective date, same authority: the answer gives each source's sentence with its own
    citation, both marked disputed, and the note prefers neither."""
    old = replace(OLD_LEAVE, effective_date=LEAVE.effective_date)
    parts = ("How many days of annual leave do full-time employees get?",)
    made = attempt(parts, ((LEAVE, old),), (checked(LEAVE.text, (LEAVE,)),))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    assert composed.route == "answered"
    (conflict,) = composed.conflicts
    assert conflict.preferred is None and "Neither is preferred" in conflict.note
    by_text = {s.text: s for s in composed.sentences}
    assert set(by_text) == {LEAVE.text, old.text}
    assert all(s.disputed for s in composed.sentences)
    cited = {composed.sources[s.citations[0] - 1].title: s.text for s in composed.sentences}
    assert cited == {"Leave Policy": LEAVE.text, "Employee FAQ (2024)": old.text}
    assert composed.sentences[0].as_json()["disputed"] is True
    assert composed.text.count("(disputed: see below)") == 2


def test_a_preferred_source_is_asserted_alone_and_not_disputed() -> None:
    parts = ("How many days of annual leave do full-time employees get?",)
    made = attempt(parts, ((OLD_LEAVE, LEAVE),), (checked(OLD_LEAVE.text, (OLD_LEAVE,)),))
    composed = compose(made, refusal=DEFAULT_REFUSAL)
    (sentence,) = composed.sentences
    assert sentence.text == LEAVE.text and not sentence.disputed
