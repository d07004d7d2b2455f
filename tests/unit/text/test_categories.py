"""`rag.text.categories`: what kind of thing a definition says its subject is, for questions that ask
a profession, a sport or a genre, and two definitions naming different kinds."""

from __future__ import annotations

import pytest

from rag.text.categories import asks_category, category, differing_categories


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What is the profession of C. Mayer?", True),
        ("What is Greg Boyer's profession?", True),
        ("What sport is Lee Seung-hoon associated with?", True),
        ('What is the genre of the film "Inner Sanctum"?', True),
        ("What did Jon Hill do for a living?", True),
        ("What does the Team plan cost?", False),
        ("What type of card do I need for the trial?", False),  # "type" and "kind" are too common to ask one
        ("Who is the artist of the album?", False),
    ],
)
def test_questions_asking_a_category(question: str, asks: bool) -> None:
    assert asks_category(question) is asks


@pytest.mark.parametrize(
    ("question", "sentence", "words"),
    [
        (
            "What is Greg Boyer's profession?",
            "Greg Boyer (born September 25, 1958) is an American chef known for his techniques.",
            {"chef"},
        ),
        (
            "What is the profession of C. Mayer?",
            "Christa Mayer is a German professional basketball player.",
            {"basketball", "player"},
        ),
        (
            "What sport is Pekka Niemi known for?",
            "Pekka Niemi is a retired Finnish heavyweight weightlifter.",
            {"heavyweight", "weightlifter"},
        ),
        (
            "What sport is Lee Seung-hoon associated with?",
            "Lee Seung-hoon (Hangul: x; born 6 March 1988) is a South Korean speed skater.",
            {"speed", "skater"},
        ),
        (
            'What is the genre of "Bright Lights"?',
            "Bright Lights is a 1930 American pre-Code musical comedy film photographed in colour.",
            {"pre-code", "musical", "comedy", "film"},
        ),
        ("What is the profession of Greg Boyer?", "The hall was built in 1920 by Greg Boyer.", None),  # no definition
        ("What is the profession of Greg Boyer?", "Jane Smith is a British actor.", None),  # another subject
    ],
)
def test_the_category_a_definition_gives(question: str, sentence: str, words: set[str] | None) -> None:
    assert category(sentence, question) == (frozenset(words) if words else None)


@pytest.mark.parametrize(
    ("question", "a", "b", "differ"),
    [
        (
            "What is the profession of C. Mayer?",
            "Christa Mayer is a German professional basketball player.",
            "Christa Mayer (born 1961) is a German operatic mezzo-soprano who sings at Bayreuth.",
            ("German professional basketball player", "German operatic mezzo-soprano"),
        ),
        (
            'What is the genre of the film "Inner Sanctum"?',
            "Inner Sanctum is a 1948 American romantic comedy directed by Lew Landers.",
            "Inner Sanctum is a 1948 American film noir directed by Lew Landers.",
            ("1948 American romantic comedy", "1948 American film noir"),
        ),
        # a shared word: not told apart (a miss, never a false disagreement)
        (
            "What sport is David Hancock associated with?",
            "David Hancock is an English football player.",
            "David Hancock is an English basketball player.",
            None,
        ),
        # the same kind in other words around it
        (
            'What is the genre of "Inner Sanctum"?',
            "Inner Sanctum is a 1948 American film noir directed by Lew Landers.",
            "Inner Sanctum is a film noir mystery.",
            None,
        ),
        # the question asks no category
        (
            "Who is Christa Mayer?",
            "Christa Mayer is a German professional basketball player.",
            "Christa Mayer is a German operatic mezzo-soprano.",
            None,
        ),
    ],
)
def test_two_definitions_naming_different_kinds(question: str, a: str, b: str, differ: tuple[str, str] | None) -> None:
    assert differing_categories(a, b, question) == differ
