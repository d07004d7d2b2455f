"""A model's reworded sentence and the source sentence it restates (rag/pipeline/anchor.py): found
when one source sentence states every value and name, never for a value or name it does not."""

from __future__ import annotations

import pytest

from rag.pipeline.anchor import anchor_of

MILEAGE = "Mileage for business use of a private car is reimbursed at €0.36 per km."
MEALS = "Meals are capped at €40 per day."
HOTELS = "Hotel caps per night: London GBP 180; Warsaw PLN 550; Berlin EUR 150."
ABROAD_2026 = "Employees may work from another country for a maximum of 30 working days in any calendar year."
ABROAD_2024 = "You can work abroad for up to 20 working days a year."
LEAD = "The security programme is led by Hannah Lindqvist, Chief Information Security Officer."


def found(written: str, *sources: str) -> str | None:
    return anchor_of(written, [(s, s) for s in sources])


@pytest.mark.parametrize(
    ("written", "sources", "expected"),
    [
        ("The mileage rate for using my own car is €0.36 per kilometre.", (MEALS, MILEAGE), MILEAGE),
        ("The hotel cap in Warsaw is PLN 550 per night.", (HOTELS,), HOTELS),
        ("You can work abroad for up to 30 working days per year.", (ABROAD_2024, ABROAD_2026), ABROAD_2026),
        ("You can work abroad for up to 20 working days per year.", (ABROAD_2026, ABROAD_2024), ABROAD_2024),
    ],
)
def test_a_reworded_fact_is_anchored_to_the_sentence_stating_its_values(
    written: str, sources: tuple[str, ...], expected: str
) -> None:
    assert found(written, *sources) == expected


@pytest.mark.parametrize(
    ("written", "sources"),
    [
        ("The hotel cap in Krakow is PLN 550 per night.", (HOTELS,)),  # a city the policy does not list
        ("The mileage rate is €0.40 per km.", (MILEAGE,)),  # a value no source states
        ("Mileage and meals are €0.36 per km and €40 per day.", (MILEAGE, MEALS)),  # no one sentence states both
        ("Ask your manager before you travel.", (MILEAGE, MEALS)),  # no value, code or name: left to the verifier
        ("Hannah Lindqvist leads the data protection office.", (LEAD,)),  # the name, but not what it says
        ("Tomasz Nowak leads the security programme.", (LEAD,)),  # another name
    ],
)
def test_no_anchor_without_a_sentence_stating_every_value_and_name(written: str, sources: tuple[str, ...]) -> None:
    assert found(written, *sources) is None


def test_names_in_latin_scripts_with_accents_are_names() -> None:
    from rag.pipeline.relevance import _placed
    from rag.text.names import names

    said = "The IT service desk is based in Kraków."
    assert names(said) == {"Kraków"} and _placed(said, "Kraków")
    assert names("Contact Ana Diaz in São Paulo or Zürich.") == {"Ana Diaz", "São Paulo", "Zürich"}
    assert found("The hotel cap in Malmö is SEK 1,900.", "Hotel caps: Malmö SEK 1,900; Oslo NOK 1,800.")
    assert found("The hotel cap in Łódź is PLN 400.", "Hotel caps: Malmö SEK 1,900; Oslo NOK 1,800.") is None


def test_a_hyphenated_product_code_is_one_code_and_its_documents_know_it() -> None:
    from rag.pipeline.gates.premise import unknown_names
    from rag.text.names import codes
    from tests.unit.pipeline.stage_data import passage

    assert codes("What is the battery capacity of the KW-B3 Lite?") == {"KW-B3 Lite"}
    assert codes("the NW-200X and SOC2") == {"NW-200X", "SOC2"}
    spec = passage(1, "The KW-B3 Lite has a 54 Wh battery.", title="KW-B3 Lite", heading="Battery")
    assert unknown_names("What is the battery capacity of the KW-B3 Lite?", [spec]) == ()
    assert unknown_names("What is the battery capacity of the KW-B4 Lite?", [spec]) == ("KW-B4 Lite",)


def test_a_sentence_without_values_is_anchored_by_its_names_and_most_of_its_words() -> None:
    written = "Hannah Lindqvist, the Chief Information Security Officer, leads the security programme."
    assert found(written, MEALS, LEAD) == LEAD


def test_a_name_the_asker_used_may_be_left_to_the_passage_around_the_anchor() -> None:
    written = "Hannah Lindqvist leads the security programme at Brightloom."

    def around(text: str) -> str:
        return "Security at Brightloom. " + text

    assert anchor_of(written, [(LEAD, LEAD)]) is None  # Brightloom is not in the source sentence
    assert anchor_of(written, [(LEAD, LEAD)], echoed=frozenset({"Brightloom"}), around=around) == LEAD
    # a passage that never names it: the name is not excused
    assert anchor_of(written, [(LEAD, LEAD)], echoed=frozenset({"Brightloom"}), around=str) is None


@pytest.mark.parametrize(
    ("sentence", "opening"),
    [("Click on Developer under the Settings menu.", "Click"), ("Log in to your workspace.", "Log")],
)
def test_an_instructions_opening_verb_is_no_name(sentence: str, opening: str) -> None:
    from rag.text.names import new_names

    assert opening not in new_names(sentence, "")
    assert "Beacon" in new_names("Beacon keeps data for 30 days.", "")
