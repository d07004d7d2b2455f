"""`rag.pipeline.contradictions`: which sentence pairs from different documents disagree, and which one is preferred."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import numpy as np
import pytest

from rag.model.evidence import ScoredSentence
from rag.model.types import Passage
from rag.pipeline.answer_values import answer_value
from rag.pipeline.contradictions import find_conflicts, prefer
from rag.pipeline.rerank import coverage, term_weights
from rag.text.facts import qualifiers, variant_qualifiers
from rag.text.names import codes, names
from rag.text.switches import rules_off

TEAM_2026 = "The Team plan costs $15 per user per month on monthly billing."
TEAM_2025 = "The Team plan costs $12 per user per month when billed monthly."
CARRY_OVER = "Employees may carry over up to 5 days of unused annual leave into the next calendar year."
ALLOWANCE = "Full-time employees receive 20 days of paid annual leave per calendar year."


def unit(axis: int) -> np.ndarray:
    vector = np.zeros(8, dtype=np.float32)
    vector[axis] = 1.0
    return vector


SAME_MEANING = unit(0)


def sentence(
    text: str,
    document_id: int,
    *,
    effective: date | None = None,
    authority: int = 0,
    terms: float = 0.8,
    vector: np.ndarray = SAME_MEANING,
    position: int = 0,
) -> ScoredSentence:
    passage = Passage(
        chunk_id=100 * document_id + position,
        document_id=document_id,
        document=f"doc-{document_id}.md",
        title=f"Document {document_id}",
        heading="",
        text=text,
        score=0.5,
        dense_score=0.6,
        lexical_score=None,
        effective_date=effective,
        authority=authority,
    )
    return ScoredSentence(passage, position, text, 0.6, 0.7, terms, 1.0, vector)


# ---------------------------------------------------------------- conflicts found


def test_two_prices_for_the_same_plan_conflict_and_the_newer_is_preferred() -> None:
    chosen = sentence(TEAM_2026, 1, effective=date(2026, 1, 1))
    stale = sentence(TEAM_2025, 2, effective=date(2025, 4, 1))
    [found] = find_conflicts(chosen, [chosen, stale])
    assert found.other is stale
    assert (found.chosen_value.surface, found.other_value.surface) == ("$15", "$12")
    assert found.preferred == "chosen"
    assert "newer effective date" in found.reason
    assert "2026-01-01" in found.reason


def test_the_other_sentence_is_preferred_when_it_is_newer() -> None:
    chosen = sentence(TEAM_2025, 2, effective=date(2025, 4, 1))
    newer = sentence(TEAM_2026, 1, effective=date(2026, 1, 1))
    [found] = find_conflicts(chosen, [newer])
    assert (found.chosen_value.surface, found.other_value.surface) == ("$12", "$15")
    assert found.preferred == "other"
    assert "2026-01-01" in found.reason


@pytest.mark.parametrize("effective", [date(2026, 1, 1), None])
def test_with_equal_dates_the_higher_authority_is_preferred(effective: date | None) -> None:
    chosen = sentence(TEAM_2026, 1, effective=effective, authority=1)
    official = sentence(TEAM_2025, 2, effective=effective, authority=3)
    [found] = find_conflicts(chosen, [official])
    assert found.preferred == "other"
    assert "authority" in found.reason
    [reverse] = find_conflicts(official, [chosen])
    assert reverse.preferred == "chosen"


def test_with_one_date_missing_authority_decides() -> None:
    chosen = sentence(TEAM_2026, 1, effective=date(2026, 1, 1), authority=0)
    undated = sentence(TEAM_2025, 2, effective=None, authority=2)
    assert prefer(chosen, undated) == ("other", "higher authority")


def test_when_neither_date_nor_authority_decides_nothing_is_preferred() -> None:
    chosen = sentence(TEAM_2026, 1, effective=date(2026, 1, 1), authority=1)
    other = sentence(TEAM_2025, 2, effective=date(2026, 1, 1), authority=1)
    [found] = find_conflicts(chosen, [other])
    assert found.preferred is None
    assert "neither" in found.reason


def test_one_conflict_per_other_document() -> None:
    chosen = sentence(TEAM_2026, 1)
    first = sentence(TEAM_2025, 2, position=0)
    again = sentence("The Team plan costs $10 per user per month when billed monthly.", 2, position=1)
    third = sentence("The Team plan costs $11 per user per month on monthly billing.", 3)
    found = find_conflicts(chosen, [first, again, third])
    assert [(f.other.passage.document_id, f.other_value.surface) for f in found] == [(2, "$12"), (3, "$11")]


# ---------------------------------------------------------------- look-alikes left alone


def test_monthly_and_annual_prices_are_not_a_conflict() -> None:
    monthly = sentence(TEAM_2026, 1, effective=date(2026, 1, 1))
    annual = sentence("The Team plan costs $12 per user per month when billed annually.", 2)
    assert qualifiers(monthly.text) == {"monthly"}
    assert qualifiers(annual.text) == {"annual"}
    assert find_conflicts(monthly, [annual]) == []


def test_a_different_product_name_is_not_a_conflict() -> None:
    beacon = sentence("Beacon keeps check results and response-time metrics for 30 days.", 1)
    pro = sentence("Beacon Pro keeps check results and response-time metrics for 365 days.", 2)
    assert find_conflicts(beacon, [pro]) == []
    assert find_conflicts(pro, [beacon]) == []


def test_a_different_product_code_is_not_a_conflict() -> None:
    small = sentence("The NW-200 collector supports up to 250 hosts.", 1)
    large = sentence("The NW-200X collector supports up to 2,000 hosts.", 2)
    assert find_conflicts(small, [large]) == []


def test_sentences_of_the_same_document_never_conflict() -> None:
    chosen = sentence(TEAM_2026, 1)
    same_document = sentence(TEAM_2025, 1, position=3)
    assert find_conflicts(chosen, [same_document]) == []


def test_the_same_value_is_not_a_conflict() -> None:
    chosen = sentence(TEAM_2026, 1)
    agrees = sentence("The Team plan costs $15 per user per month when billed monthly.", 2)
    assert find_conflicts(chosen, [agrees]) == []


def test_different_meaning_is_not_a_conflict() -> None:
    chosen = sentence(TEAM_2026, 1)
    unrelated = sentence(TEAM_2025, 2, vector=unit(1))
    assert find_conflicts(chosen, [unrelated]) == []


def test_a_sentence_covering_far_fewer_question_terms_is_another_fact() -> None:
    chosen = sentence(TEAM_2026, 1, terms=0.9)
    weaker = sentence(TEAM_2025, 2, terms=0.7)  # 0.7 < 0.8 × 0.9
    assert find_conflicts(chosen, [weaker]) == []
    close = sentence(TEAM_2025, 2, terms=0.75)  # 0.75 ≥ 0.72
    assert len(find_conflicts(chosen, [close])) == 1


def test_a_step_saying_few_of_the_words_conflicts_only_about_a_named_subject() -> None:
    """0.55 of the chosen sentence's term coverage: enough when both name the NX-6 Pro asked about."""
    question = "How long do I hold the reset button on an NX-6 Pro?"
    manual = answering("Press and hold the RESET button for 15 seconds.", 1, date(2025, 9, 1), terms=0.4)
    forum = answering("Keep holding for ten seconds.", 2, date(2023, 5, 1), terms=0.22)
    assert find_conflicts(manual, [manual, forum], question=question) == []  # neither page names it
    named = [replace(s, passage=replace(s.passage, title="NX-6 / NX-6 Pro factory reset")) for s in (manual, forum)]
    [found] = find_conflicts(named[0], named, question=question)
    assert (found.chosen_value.surface, found.other_value.surface, found.preferred) == (
        "15 seconds",
        "ten seconds",
        "chosen",
    )
    unnamed = "How long do I hold the reset button?"
    assert find_conflicts(named[0], named, question=unnamed) == []  # no name: 0.55 is another fact


def test_carry_over_days_do_not_conflict_with_the_annual_allowance() -> None:
    # Key terms of "How many unused annual leave days can I carry over into next year?", weighted by
    # how rare they are in a handbook; lexemes as Postgres' English stemmer gives them.
    weights = term_weights(
        {"unus": 0.02, "carri": 0.02, "annual": 0.15, "leav": 0.1, "day": 0.4, "next": 0.2, "year": 0.35}
    )
    carry_lexemes = frozenset({"employe", "may", "carri", "unus", "day", "annual", "leav", "next", "calendar", "year"})
    allowance_lexemes = frozenset({"full-tim", "full", "time", "employe", "receiv", "day", "paid", "annual", "leav"})
    allowance_lexemes |= {"per", "calendar", "year"}
    carry_terms = coverage(weights, carry_lexemes)
    allowance_terms = coverage(weights, allowance_lexemes)
    assert carry_terms == pytest.approx(1.0)
    assert allowance_terms < 0.5

    chosen = sentence(CARRY_OVER, 1, effective=date(2026, 1, 1), terms=carry_terms)
    other = sentence(ALLOWANCE, 2, effective=date(2024, 1, 1), terms=allowance_terms)
    assert find_conflicts(chosen, [other]) == []


# ---------------------------------------------------------------- qualifiers


def test_variant_qualifiers_leave_out_bounds() -> None:
    text = "The minimum monthly fee for the first additional seat."
    assert qualifiers(text) == {"minimum", "monthly", "first", "additional"}
    assert variant_qualifiers(text) == {"monthly"}
    assert qualifiers("Contractors and interns are paid yearly.") == {"contractor", "intern", "annual"}


def _named(text: str, document: int, vector: np.ndarray) -> ScoredSentence:
    passage = Passage(document, document, f"doc{document}.md", f"Doc {document}", "", text, 0.9, 0.9, 0.0)
    return ScoredSentence(passage, 0, text, 0.9, 0.9, 0.5, 1.0, vector)


def test_a_named_value_that_differs_is_a_conflict_but_a_sibling_product_is_not() -> None:
    same = np.ones(4, dtype=np.float32) / 2
    a = _named("The Kate Chopin House is located in New Orleans, Louisiana.", 1, same)
    b = _named("The Kate Chopin House is located in Cloutierville, Louisiana.", 2, same)
    found = find_conflicts(a, [b])
    assert [(c.chosen_value.surface, c.other_value.surface) for c in found] == [("New Orleans", "Cloutierville")]
    assert found[0].preferred is None  # same date, same authority

    beacon = _named("Beacon keeps check results for 30 days.", 3, same)
    pro = _named("Beacon Pro keeps check results for 365 days.", 4, same)
    assert find_conflicts(beacon, [pro]) == []
    unrelated = _named("The Kate Chopin House museum opened to visitors in Natchitoches.", 5, same)
    assert find_conflicts(a, [unrelated]) == []


def test_a_yes_and_a_no_for_the_same_fact_conflict_and_name_both_answers() -> None:
    yes = sentence("Single sign-on is available on the Team plan.", 1, effective=date(2026, 1, 1))
    no = sentence("Single sign-on is not available on the Team plan.", 2, effective=date(2025, 1, 1))
    found = find_conflicts(yes, [no])
    assert [(c.chosen_value.surface, c.other_value.surface) for c in found] == [("available", "not available")]
    assert found[0].preferred == "chosen"
    assert [(c.chosen_value.amount, c.other_value.amount) for c in find_conflicts(no, [yes])] == [("no", "yes")]


@pytest.mark.parametrize(
    "other",
    [
        "Single sign-on is not available on the Starter plan.",  # another tier: a look-alike
        "Single sign-on is available on the Team plan.",  # the same answer
        "Phone support is not available on the Team plan.",  # another feature
    ],
)
def test_yes_no_look_alikes_are_not_conflicts(other: str) -> None:
    chosen = sentence("Single sign-on is available on the Team plan.", 1)
    assert find_conflicts(chosen, [sentence(other, 2)]) == []


# ---------------------------------------------------------------- the same answer, worded differently


def answering(text: str, document_id: int, effective: date, *, terms: float = 0.6, heading: str = "") -> ScoredSentence:
    found = sentence(text, document_id, effective=effective, terms=terms, vector=unit(document_id % 8))
    return ScoredSentence(
        replace(found.passage, heading=heading) if heading else found.passage,
        0,
        text,
        0.6,
        0.5,
        terms,
        1.0,
        found.vector,
    )


@pytest.mark.parametrize(
    ("question", "old", "new", "values"),
    [
        (
            "How many days of holiday do staff get?",
            "Staff get 20 days of holiday a year.",
            "Employees are entitled to 26 days of paid vacation per calendar year.",
            ("20 days", "26 days"),
        ),
        (
            "How long do I have to return a product?",
            "You can return it within two weeks of delivery.",
            "Products can be returned up to 30 days from the date of delivery.",
            ("two weeks", "30 days"),
        ),
        (
            "How much is Team+ per user on monthly billing?",
            "Team+ costs $19 per user per month on monthly billing, or $16 per user per month when billed annually.",
            "Plan: Team+; Monthly billing (per seat): $24; Annual billing (per seat, per month): $20; Seats: 5-100",
            ("$19", "$24"),
        ),
        (
            "What does a year of Care+ Premium cost?",
            "Care+ Premium costs 49 EUR a year per device and includes everything in Care+ Standard.",
            "Care+ Premium: price €59 per device per year.",
            ("49 EUR", "€59"),
        ),
        (  # a table's row giving other regions' prices aside; a currency code names no subject
            "What does a year of Care+ Premium cost in euros?",
            "Care+ Premium costs 49 EUR a year per device and includes everything in Care+ Standard, plus:",
            "Price: €59 per device per year (UK £52, US $64, Canada C$86)",
            ("49 EUR", "€59"),
        ),
        (  # a bare year answers "when"
            "When was Robert Hutchinson elected to a public office?",
            "In 1974, Robert Hutchinson was elected to a public office.",
            "Robert Hutchinson was elected to a public office in 1898, as mayor of Geraldton.",
            ("1974", "1898"),
        ),
        (  # a table's bare number whose column names what it counts, against an abbreviated unit
            "How many API calls per minute is a Plus workspace allowed?",
            "Plus — 200 requests/min, up to 25,000 requests a day",
            "Plan: Plus; Requests per minute: 300; Burst (requests per second): 20; Daily request cap: 50,000",
            ("200 requests", "300"),
        ),
        (  # a deadline as a time from an event
            "What's the deadline for putting in a Delay Repay claim after a late train?",
            "Passengers must submit their Delay Repay claim within two weeks of the delayed journey.",
            "You can claim Delay Repay within 28 days of the delayed journey.",
            ("two weeks", "28 days"),
        ),
    ],
)
def test_two_answers_to_the_question_conflict_however_they_are_worded(
    question: str, old: str, new: str, values: tuple[str, str]
) -> None:
    heading = " ".join(sorted(names(question) | codes(question)))  # the page a table row is on
    stale = answering(old, 1, date(2023, 1, 1), heading=heading)
    current = answering(new, 2, date(2025, 9, 1), heading=heading)
    [found] = find_conflicts(stale, [stale, current], question=question)
    assert (found.chosen_value.surface, found.other_value.surface) == values
    assert found.preferred == "other"


@pytest.mark.parametrize(
    ("question", "first", "second"),
    [
        (  # another variant: annual where monthly is asked
            "How much is Team+ per user on monthly billing?",
            "Team+ costs $24 per user per month on monthly billing.",
            "Plan: Team+; Annual billing (per seat, per month): $20; Seats: 5-100; Regions: EU, US",
        ),
        (  # a sibling product
            "How long does Beacon keep check results?",
            "Beacon keeps check results for 30 days.",
            "Beacon Pro keeps check results for 365 days.",
        ),
        (  # a sibling code
            "What is the biggest memory card the CAM-3 takes?",
            "The CAM-3 takes microSD cards up to 128 GB.",
            "Fixes microSD cards larger than 256 GB not being recognised on the CAM-3 Outdoor.",
        ),
        (  # another plan
            "How much is Team+ per user on monthly billing?",
            "Team+ costs $24 per user per month on monthly billing.",
            "Plan: Team; Monthly billing (per seat): $16; Annual billing (per seat, per month): $13; Seats: 3-25",
        ),
        (  # the same amount in other units
            "How long is the trial?",
            "The trial lasts 30 days.",
            "Every trial runs for one month.",
        ),
        (  # a bare number whose column counts something else
            "How many API calls per minute is a Plus workspace allowed?",
            "Plus — 200 requests/min, up to 25,000 requests a day",
            "Plan: Plus; Concurrent export jobs per minute: 2",
        ),
        (  # a class number and a year count no wheelchair spaces
            "How many wheelchair spaces are there on an RE-7 Express train?",
            "RE-7 Express trains are Class 48 units, built in 2019, with four wheelchair spaces.",
            "Each RE-7 Express train has space for 6 bikes.",
        ),
        (  # a yes/no question has no value to compare
            "Do remote employees get help with their internet bill?",
            "Remote employees receive an internet allowance of $40 per month.",
            "Remote employees get a one-off $300 home office budget.",
        ),
    ],
)
def test_answers_about_something_else_do_not_conflict(question: str, first: str, second: str) -> None:
    chosen = answering(first, 1, date(2025, 1, 1))
    other = answering(second, 2, date(2023, 1, 1))
    assert find_conflicts(chosen, [chosen, other], question=question) == []


@pytest.mark.parametrize(
    ("sentence", "question", "value"),
    [  # found by review: the value that answers, not the first in the clause
        ("The NX-6 Pro costs $499 and the NX-6 costs $399.", "How much does the NX-6 cost?", "$399"),
        (
            "Plan: Team+; Monthly billing (per seat): $24; Annual billing (per seat, per month): $20; Seats: 5-100",
            "How much is Team+ per user on monthly billing?",
            "$24",
        ),
        (
            "Standard shipping: 5 days; Express shipping: 2 days; Overnight: 1 day",
            "How long is express shipping?",
            "2 days",
        ),
    ],
)
def test_the_answer_value_is_the_one_nearest_what_is_asked(sentence: str, question: str, value: str) -> None:
    found = answer_value(sentence, question)
    assert found is not None and found[0].surface == value


def test_the_same_amount_written_differently_is_no_conflict() -> None:
    chosen = answering("The Team plan costs $20 per user per month.", 1, date(2025, 1, 1))
    other = answering("Team plan: $20.00 per user per month.", 2, date(2023, 1, 1))
    assert find_conflicts(chosen, [other], question="How much does the Team plan cost per month?") == []


@pytest.mark.parametrize(
    ("question", "chosen", "other", "values"),
    [
        (
            "Where was Airways International based?",
            "Airways International was an airline based in Anchorage, Alaska.",
            "Airways International Airways International was an airline based in Miami, Florida.",  # a title before it
            ("Anchorage, Alaska", "Miami, Florida"),
        ),
        (
            "19 Mayıs Stadium is the home venue of which sports team?",
            "The Ankara 19 Mayıs Stadium was the home venue of Bursaspor.",
            "The Ankara 19 Mayıs Stadium was the home venue of Ankara's Gençlerbirliği.",
            ("Bursaspor", "Gençlerbirliği"),  # the team's name, now that accented names are names
        ),
        (
            "When was Joseph Lafontaine born?",
            "Joseph Lafontaine (March 15, 1870 – July 25, 1920) was a farmer and political figure in Quebec.",
            "Joseph Lafontaine (November 25, 1865 – July 25, 1920) was a farmer and political figure in Quebec.",
            ("March 15, 1870", "November 25, 1865"),
        ),
    ],
)
def test_one_sentence_with_another_answer_filled_in_is_a_conflict(
    question: str, chosen: str, other: str, values: tuple[str, str]
) -> None:
    [found] = find_conflicts(sentence(chosen, 1), [sentence(other, 2)], question=question)
    assert (found.chosen_value.surface, found.other_value.surface) == values
    assert found.preferred is None  # same date and authority


@pytest.mark.parametrize(
    ("question", "chosen", "other"),
    [
        # the question's subject differs: two products
        (
            "How long does the battery last?",
            "The RT-9 battery lasts up to 5 hours.",
            "The RT-9i battery lasts up to 8 hours.",
        ),
        # two things differ: another plan at another price
        (
            "What does a seat cost?",
            "The Team plan costs $15 per seat per month.",
            "The Pro plan costs $25 per seat per month.",
        ),
        # what differs is not the kind of answer asked ("when"), it is where
        (
            "When does the office open on weekdays?",
            "The Leeds office opens at 8:00 on weekdays for all staff.",
            "The York office opens at 8:00 on weekdays for all staff.",
        ),
        # yes/no is left to the polarity check
        (
            "Is the Leeds office open on Sundays for visitors?",
            "The Leeds office is open on Sundays for visitors.",
            "The Leeds office is closed on Sundays for visitors.",
        ),
    ],
)
def test_look_alikes_filled_differently_are_not_conflicts(question: str, chosen: str, other: str) -> None:
    found = find_conflicts(sentence(chosen, 1), [sentence(other, 2, vector=unit(1))], question=question)
    assert [(f.chosen_value.kind, f.other_value.kind) for f in found if f.chosen_value.kind == "answer"] == []


def test_a_file_time_does_not_outdate_a_stated_date() -> None:
    """A copy or a checkout gives an undated press release today's date: authority decides instead."""
    policy = sentence("Claims are accepted within 28 days.", 1, effective=date(2025, 4, 1), authority=4)
    press = sentence("Claims are accepted within 14 days.", 2, effective=date(2026, 12, 2), authority=2)
    copied = replace(press, passage=replace(press.passage, dated_by="file_time"))
    assert prefer(policy, press) == ("other", "newer effective date (2026-12-02)")
    assert prefer(policy, copied) == ("chosen", "higher authority")
    both = replace(policy, passage=replace(policy.passage, dated_by="file_time"))
    assert prefer(both, copied)[0] == "other"  # two file times: the newer file still decides


def test_the_answer_families_switched_off_find_no_conflict_and_come_back_after() -> None:
    """`CANDOR_RULES_OFF='["answers"]'` / `'["fills"]'` (rag/text/switches.py, issue 40's ablation)."""
    holiday = "How many days of holiday do staff get?"
    stale = answering("Staff get 20 days of holiday a year.", 1, date(2023, 1, 1))
    current = answering("Employees are entitled to 26 days of paid vacation per calendar year.", 2, date(2025, 9, 1))
    based = "Where was Airways International based?"
    anchorage = sentence("Airways International was an airline based in Anchorage, Alaska.", 1)
    miami = sentence("Airways International was an airline based in Miami, Florida.", 2)

    def found() -> tuple[int, int]:
        return len(find_conflicts(stale, [stale, current], question=holiday)), len(
            find_conflicts(anchorage, [miami], question=based)
        )

    assert found() == (1, 1)
    with rules_off(frozenset({"answers"})):
        assert found() == (0, 1)
    with rules_off(frozenset({"fills"})):
        assert found() == (1, 0)
    assert found() == (1, 1)
