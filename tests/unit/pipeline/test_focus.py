"""The focus check: does an answer address the words of the question, or only the topic around them?"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.backends.embeddings import build_embedder
from rag.config import load_settings
from rag.model.ports import Embedder
from rag.pipeline.focus import Focus, FocusCheck, FocusWord, asked, candidates, common_lexemes, without


def test_only_the_asking_sentences_count() -> None:
    part = "I left my work laptop on the train. How soon do I have to report it?"
    assert asked(part) == "How soon do I have to report it?"
    assert asked("Tell me about parking.") == "Tell me about parking."
    assert asked("Is there parking? Is it free?") == "Is there parking? Is it free?"


def test_candidates_are_the_question_words_the_answer_lacks() -> None:
    answer = "The Leeds office is open Monday to Friday from 08:00 to 19:00."
    assert candidates("Is there free parking at the Leeds office?", answer) == ["free", "parking"]


def test_a_word_the_answer_holds_in_another_form_is_covered() -> None:
    answer = "Staff can park for free in the car park behind the Leeds office."
    assert candidates("Is there free parking at the Leeds office?", answer) == []


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What does a year of Care+ Premium cost in euros?", "Care+ Premium costs 49 EUR a year."),
        ("What times can I phone Travel Assist?", "Travel Assist lines open 06:00 to 22:00 every day."),
        ("What percentage of trains ran on time?", "In 2025, 84.9% of trains ran on time."),
    ],
)
def test_a_word_naming_the_kind_of_value_is_covered_by_a_value_of_that_kind(question: str, answer: str) -> None:
    assert candidates(question, answer) == []


def test_a_kind_word_without_its_value_is_still_a_candidate() -> None:
    assert candidates("What times can I phone Travel Assist?", "Phone Travel Assist on 0800 414 200.") == ["times"]


def test_titles_and_headings_cover_words_too() -> None:
    covered = "Employees may carry over up to 5 days. Annual leave policy > Carry-over"
    assert "policy" not in candidates("What is the annual leave policy on carrying days over?", covered)


def test_a_modifier_of_an_answered_head_word_is_not_a_candidate() -> None:
    answer = "The IT helpdesk can be reached on internal extension 4357."
    assert candidates("What's the phone extension for the IT helpdesk?", answer) == []


def test_an_indefinite_pronoun_asks_about_nothing() -> None:
    answer = "Live chat is open on Saturdays from 10:00 to 16:00 CET."
    assert candidates("Is anyone on the chat on Saturdays?", answer) == []
    assert candidates("Can somebody help me with everything?", "Support is open daily.") == ["help"]


def test_a_word_the_corpus_uses_everywhere_is_not_a_candidate() -> None:
    answer = "Model: RT-9; End of sale: 2023-06-30."
    assert candidates("When did Tervane stop selling the RT-9?", answer) == ["tervane", "stop", "selling"]
    common = common_lexemes({"tervan": 0.4, "sell": 0.02, "stop": 0.01})
    assert common == {"tervan"}
    assert candidates("When did Tervane stop selling the RT-9?", answer, common) == ["stop", "selling"]
    assert common_lexemes({"polici": 0.25}) == {"polici"}
    assert candidates("What is the policy on pets?", "Dogs are welcome.", common_lexemes({"polici": 0.25})) == ["pets"]
    assert common_lexemes(None) == frozenset()


def test_without_removes_every_occurrence_of_the_word() -> None:
    assert without("Is Parking free? Where is the parking?", "parking") == "Is free? Where is the ?"


def test_focus_properties() -> None:
    focus = Focus((FocusWord("parking", -0.11), FocusWord("free", -0.02)), threshold=0.05)
    assert [w.word for w in focus.unaddressed] == ["parking"]
    assert not focus.addressed
    assert focus.least_shift == pytest.approx(-0.11)
    assert Focus((), threshold=0.05).least_shift == 1.0
    assert Focus((), threshold=0.05).addressed


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Embedder:
    """The default embedder, on the run's models folder."""
    home = tmp_path_factory.mktemp("focus-home")
    return build_embedder(load_settings(home=home, models_dir=models_dir, database_url=None))


@pytest.mark.parametrize(
    ("question", "answer", "missed"),
    [
        (
            "Is there free parking at the Leeds office?",
            "The Leeds office is open Monday to Friday from 08:00.",
            "parking",
        ),
        ("How do I rotate my API key?", "The API uses bearer-token authentication.", "rotate"),
    ],
)
async def test_an_answer_about_the_topic_but_not_the_question_is_unaddressed(
    embedder: Embedder, question: str, answer: str, missed: str
) -> None:
    focus = await FocusCheck(embedder, threshold=0.05).check(question, [answer], [])
    assert [w.word for w in focus.unaddressed] == [missed]
    assert focus.least_shift < -0.05


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How many days of holiday do I get?", "Employees receive 25 days of paid annual leave each year."),
        (
            "How much does the company pay towards a gym membership?",
            "The company pays up to $40 a month towards fitness classes or a gym.",
        ),
    ],
)
async def test_an_answer_in_other_words_addresses_the_question(embedder: Embedder, question: str, answer: str) -> None:
    focus = await FocusCheck(embedder, threshold=0.05).check(question, [answer], [])
    assert focus.words, "the answer lacks a question word, so there is something to check"
    assert focus.addressed, focus
