"""`rag.text.polarity`: a negated question is not answered by a sentence negating nothing, nor by
one saying the negated word itself un-negated; exceptions, lacks, "non-" words and conditions answer it."""

from __future__ import annotations

import pytest

from rag.text.polarity import reversed_polarity


@pytest.mark.parametrize(
    ("question", "sentence", "reversed_"),
    [
        ("Which see does not have its own bishop?", "Each see has its own bishop.", True),
        ("Which see doesn't have its own bishop?", "Each see has its own bishop.", True),
        ("Which group never signed the treaty?", "The northern tribes signed the treaty in 1880.", True),
        ("Which see doesn't have its own bishop?", "Each see has its own bishop, with the exception of Ostia.", False),
        ("Which plans do not include SSO?", "SSO is not included on Starter.", False),
        (
            "Which publisher used formats that were not traditional?",
            "L'Association used non-traditional formats.",
            False,
        ),
        ("What organisms can't survive without each other?", "Obligate symbionts depend on each other.", False),
        ("What page size is used if I don't pass limit?", "Default page size: 50.", False),
        ("Which staff are not only paid but also insured?", "All staff are insured.", False),
        ("Which see has its own bishop?", "Each see has its own bishop.", False),
        (  # the question's negated word said un-negated, whatever else the sentence negates
            "What canon does not require that a cardinal be a priest?",
            "Canon 351 requires that a cardinal be a priest, and those who are not bishops must be consecrated.",
            True,
        ),
        ("Which plans do not require a card?", "Team does not require a card, though others are not free.", False),
    ],
)
def test_a_negated_question_is_not_answered_by_a_sentence_negating_nothing(
    question: str, sentence: str, reversed_: bool
) -> None:
    assert reversed_polarity(question, sentence) is reversed_
