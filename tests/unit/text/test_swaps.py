"""`rag.text.swaps`: a sentence that says the same thing of another case than the question asks
about (a different number or year, an opposite, another name, two names trading places) is found;
rewordings, the answer's own slot and sentences that speak of both cases are not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.text.swaps import Swap, swapped
from rag.text.words import OPPOSITES


@pytest.mark.parametrize(
    ("question", "sentence", "swap"),
    [
        (
            "What is the term applied to any priest temporarily assigned to a church?",
            "The term cardinal at one time applied to any priest permanently assigned to a church.",
            Swap("opposite", "temporarily", "permanently"),
        ),
        (
            "What term was applied as early as the eighth century to the priests of Rome?",
            "The term was applied in this sense as early as the ninth century to the priests of Rome.",
            Swap("number", "eighth", "ninth"),
        ),
        (
            "Sanskrit has a three-way distinction in what?",
            "Sanskrit and Hindi have a four-way distinction in stops.",
            Swap("number", "three-way", "four-way"),
        ),
        (
            "As of when did Christianity have about 2.4 million adherents?",
            "As of the early 21st century, Christianity has approximately 2.4 billion adherents.",
            Swap("number", "million", "billion"),
        ),
        (
            "Who said the election was marked by very high turnout?",
            'An observatory said the election was marked by "very low" turnout.',
            Swap("opposite", "high", "low"),
        ),
        (
            "What Bantu explorer reached the mouth of the Congo in 1484?",  # "What" lines up with "The"
            "The Portuguese explorer Diogo Cão reached the mouth of the Congo in 1484.",
            Swap("name", "Bantu", "Portuguese"),
        ),
        (
            "What is the hotel cap in Europe?",
            "The hotel cap in Asia is €150 per night.",
            Swap("name", "Europe", "Asia"),
        ),
        (
            "What year were most military occupations opened to men?",  # at the question's end
            "All military occupations were open to women in 1989.",
            Swap("opposite", "men", "women"),
        ),
        (
            "Who offers the most expensive phone calls in Africa?",
            "These firms now offer the cheapest and clearest phone calls in Africa.",
            Swap("opposite", "most expensive", "cheapest and clearest"),
        ),
        (
            "What governmental organization commented on the election?",
            "A non-governmental organization commented on the election.",
            Swap("opposite", "governmental", "non-governmental"),
        ),
        (
            "When did the South African government lease land to Congolese farmers?",  # two names trade places
            "The Congolese government leased land to South African farmers in 2009.",
            Swap("role", "Congolese", "South African"),  # the shortest: the later name
        ),
        (
            "Late papermakers added alum to help in what process?",  # at the question's start
            "Early papermakers did not realize that alum was acidic.",
            Swap("opposite", "Late", "Early"),
        ),
        (  # an opposite wherever it stands; irregular forms read as their verb
            "What election did Sassou lose?",
            "Sassou also won the following presidential election in July 2009.",
            Swap("opposite", "lose", "won"),
        ),
        (
            "When did the term Nasara fall in prominence?",
            "The term Nasara rose to prominence in July 2014.",
            None,
        ),
        (  # a year the question gives, another the sentence gives
            "What company did Lew Wasserman make a deal with in 1948?",
            "In 1950 MCA agent Lew Wasserman made a deal with Universal for his client James Stewart.",
            Swap("number", "1948", "1950"),
        ),
        (  # a count of the same thing, whatever comes before it
            "Which two short-wave stations broadcast from the capital?",
            "In total, about one short-wave and ten FM stations broadcast from the capital.",
            Swap("number", "two", "one"),
        ),
        (  # the question's word said elsewhere, in another use: still a swap
            "What is becoming less prevalent when making paper?",
            "Non-acidic additives are becoming more prevalent, and stability is less of an issue.",
            Swap("opposite", "less", "more"),
        ),
        ("What follows the most inefficient route?", "Data follows the most efficient route.", None),
        ("What is the maximum credit on Team+?", "The minimum credit on Team+ is 5%.", None),
        ("What does the monthly plan cost?", "The annual plan costs $16 per seat.", None),
    ],
)
def test_a_swapped_case_is_found(question: str, sentence: str, swap: Swap | None) -> None:
    found = swapped(question, sentence)
    if swap is not None:
        assert found == swap
    else:  # the pair is found, whichever words it is read as
        assert found is not None and found.kind == "opposite"


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("Who was the first president to veto over 400 bills?", "In his first term he vetoed over four hundred bills."),
        ("Who wrote the employee handbook?", "Maria Lopez wrote the employee handbook."),  # the answer's slot
        ("How many republics made up the USSR?", "Russia became one of six republics within the USSR."),
        ("What is the notice period for staff?", "The notice period for staff is one month."),
        ("When did the Chinese hold a moment of silence?", "The public held a moment of silence on 19 May."),
        ("Which century saw the term used, the eighth?", "It was used in the ninth century, not the eighth."),
        ("What does the monthly plan cost?", "The monthly plan costs $19 per seat."),
        ("How long is the return window?", "Returns are accepted within 30 days."),
        ("What movie was based on an Edna Ferber novel?", "Edna Ferber's novel Show Boat was filmed in 1929."),
        (
            "How many died building the Congo-Ocean Railroad?",  # a dash is a hyphen
            "Building the Congo–Ocean Railroad cost at least 14,000 lives.",
        ),
        ("What does the NX-6 Pro reset?", "The NX-6 Pro resets its settings."),
        (  # a negative prefix counts only in the question's own place: here it is a reworded clause
            "Regardless of beliefs, Christians all agree that Jesus has a unique what?",
            "Whatever else they might disagree about, Christians are united in believing that Jesus has a unique"
            " significance.",
        ),
        ("Who won the election after losing in 2002?", "Sassou won the election in 2009, having lost in 2002."),
        ("What deal did Wasserman make in 1950?", "That year Wasserman made a deal with Universal."),  # no year
        ("Which two stations broadcast from the capital?", "Of the two stations, one broadcasts from the capital."),
        ("Who vetoed four hundred bills?", "Cleveland vetoed 400 bills in his first term."),
        (  # both names in both, in the same order: a list, no trade
            "Who controlled the Dutch East India Company and the Dutch West India Company?",
            "The States General controlled the Dutch East India Company and the Dutch West India Company.",
        ),
        ("What was reported in recent years in Saint Helena?", "In recent years there were reports in St Helena."),
        (  # initials
            "Where was the Royal Institute's Drawing and Archives collection moved?",
            "The RIBA Library Drawing and Archives Collections moved to the V&A.",
        ),
    ],
)
def test_rewordings_and_the_answers_slot_are_no_swap(question: str, sentence: str) -> None:
    assert swapped(question, sentence) is None


_THINGS = st.sampled_from(["units", "seats", "licences", "routers", "days of leave"])


@given(asked=st.integers(2, 5000), stated=st.integers(2, 5000), things=_THINGS)
def test_any_number_swapped_for_another_is_found_and_the_same_number_is_not(
    asked: int, stated: int, things: str
) -> None:
    question = f"What happens to the {asked} {things} in the warehouse?"
    sentence = f"The {stated} {things} in the warehouse are shipped on Monday."
    found = swapped(question, sentence)
    if asked == stated:
        assert found is None
    else:
        assert found == Swap("number", str(asked), str(stated))


@given(pair=st.sampled_from(sorted((a, b) for a, bs in OPPOSITES.items() for b in bs)))
def test_every_opposite_pair_is_read_both_ways(pair: tuple[str, str]) -> None:
    a, b = pair
    assert swapped(
        f"Which report covers the {a} figures for Leeds?", f"The annex covers the {b} figures for Leeds."
    ) == (Swap("opposite", a, b))
