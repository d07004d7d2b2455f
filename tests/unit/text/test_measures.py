"""`rag.text.measures`: what a question asks to be measured, and whether a number measures it.
A distance is no population, a duration no price, a coordinate no count; a bare number and a count
of named things may answer any count, and a wording that says nothing ("how long") checks nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.text.facts import values
from rag.text.measures import (
    COUNT,
    DURATION,
    LENGTH,
    MASS,
    MONEY,
    PEOPLE,
    PERCENT,
    answers_measure,
    asked_measure,
    counts_measure,
)


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What is the population of Broken Bow?", {PEOPLE}),
        ("How far is the depot from the station?", {LENGTH}),
        ("How far back does the audit log go?", None),  # how long, not how far
        ("How much does the repair cost?", {MONEY, PERCENT}),
        ("What's the restocking fee?", {MONEY, PERCENT}),
        ("How much paid parental leave does the primary carer get?", None),  # paid leave is no price
        ("How much severance pay do employees get?", None),  # "four weeks' pay"
        ("What does a year of Care+ Premium cost in euros?", {MONEY, PERCENT}),
        ("What is the number of stations on the line?", {COUNT}),
        ("What was the weight of the bell?", {MASS}),
        ("What percentage of staff work remotely?", {PERCENT}),
        ("How many unused annual leave days can I carry over?", {DURATION}),  # the head noun, not the first
        ("How many times a year do you bill?", {COUNT}),  # "a year" is not what is counted
        ("How many users can a Business plan workspace have?", {COUNT}),
        ("How many people died in the fire?", {COUNT}),
        ("How many miles is the trail?", {LENGTH}),
        ("How long have Christians made up a third of the population?", None),  # the wording first said decides
        ("How long is the free trial?", None),
        ("Who approves leave?", None),
    ],
)
def test_asked_measure(question: str, asked: set[str] | None) -> None:
    assert asked_measure(question) == (frozenset(asked) if asked is not None else None)


@pytest.mark.parametrize(
    ("asked", "sentence", "answers"),
    [
        ({PEOPLE}, "The centre lies 10 miles northwest of Broken Bow.", False),
        ({PEOPLE}, "Pinehurst is located at (30.178614, -95.696303).", False),  # no whole number
        ({PEOPLE}, "At the census, Port Vincent had a population of 472.", True),
        ({PEOPLE}, "Kensett had 1,791 people.", True),
        ({PEOPLE}, "The township has 1,234 acres of farmland.", False),  # a count of something else
        ({COUNT}, "Acme employs 500 engineers.", True),  # any named thing may be what was counted
        ({COUNT}, "The station is 3 km away.", False),
        ({MONEY, PERCENT}, "Repairs take 5 business days.", False),
        ({MONEY, PERCENT}, "A repair costs 49 euros.", True),
        ({MONEY, PERCENT}, "We keep 10% of the price paid.", True),
        ({MONEY, PERCENT}, "A repair costs $49.", True),
        ({LENGTH}, "The trail is 12 km long.", True),
        ({LENGTH}, "The walk takes 40 minutes.", False),
        ({DURATION}, "You may carry over up to 5 days.", True),
    ],
)
def test_a_number_answers_only_the_measure_asked(asked: set[str], sentence: str, answers: bool) -> None:
    assert any(answers_measure(frozenset(asked), v, sentence) for v in values(sentence)) is answers


def test_a_number_in_words_counts_by_the_noun_after_it() -> None:
    assert counts_measure(frozenset({PEOPLE}), " townships of Crawford County") is False
    assert counts_measure(frozenset({PEOPLE}), " people live there") is True
    assert counts_measure(frozenset({COUNT}), " stations on the line") is True
    assert counts_measure(frozenset({MONEY}), " miles away") is False
    assert counts_measure(None, " plans, Standard and Premium.") is False  # with nothing asked, only a measure
    assert counts_measure(None, " weeks after delivery") is True


@given(st.integers(min_value=1, max_value=10**7), st.sampled_from(["miles", "km", "kg", "hours", "days"]))
def test_a_measured_number_never_gives_a_population(number: int, unit: str) -> None:
    sentence = f"The town is {number:,} {unit} from here."
    assert not any(answers_measure(frozenset({PEOPLE}), v, sentence) for v in values(sentence))


@given(st.integers(min_value=1, max_value=10**7))
def test_a_bare_whole_number_may_give_any_count(number: int) -> None:
    sentence = f"The figure was {number:,}."
    found = values(sentence)
    assert found and all(answers_measure(frozenset({c}), v, sentence) for v in found for c in (PEOPLE, COUNT))


@pytest.mark.parametrize("sentence", ["Lisset to Lisset Park: both in Zone B, so 1 zone.", "The plan has 5 seats."])
def test_a_number_of_things_is_no_price(sentence: str) -> None:
    assert not any(answers_measure(frozenset({MONEY, PERCENT}), v, sentence) for v in values(sentence))
