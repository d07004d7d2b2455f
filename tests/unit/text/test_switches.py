"""`CANDOR_RULES_OFF` for the text rules (rag/text/switches.py): each family's entry point, switched
off, says what it would say of text it cannot read; outside the switch, the rule is back."""

from __future__ import annotations

from typing import get_args

from rag.config.answering import AnswerSettings
from rag.text.measures import asked_measure
from rag.text.names import codes
from rag.text.polarity import reversed_polarity
from rag.text.quotable import about_the_page, readable
from rag.text.swaps import swapped
from rag.text.switches import rules_off

PRIEST = "What term was applied to any priest temporarily assigned to a church?"
CARDINAL = "The term cardinal at one time applied to any priest permanently assigned to a church."
CHROME = "Sign in to comment | Share this page | Print this page | Was this helpful?"


def fired() -> dict[str, bool]:
    return {
        "swaps": swapped(PRIEST, CARDINAL) is not None,
        "polarity": reversed_polarity("Which see does not have its own bishop?", "Each see has its own bishop."),
        "measures": asked_measure("What is the population of Broken Bow?") is not None,
        "quotable": about_the_page("This page lists the fees for every plan.") or not readable(CHROME),
        "codes": codes("How long does the battery of the KW-B3 Lite last?") == {"KW-B3 Lite"},
    }


def test_each_text_family_switched_off_alone_says_nothing_and_comes_back_after() -> None:
    """`answers` and `fills` are tested with the conflicts they find (tests/unit/pipeline/test_conflicts.py),
    the `relevance-` kinds with the parts they leave unchecked (tests/unit/pipeline/test_relevance.py)."""
    (listed,) = get_args(AnswerSettings.model_fields["rules_off"].annotation)  # the settings name the families
    elsewhere = {"bridge", "premise", "relevance", "answers", "fills"}  # step families and the conflict rules
    families = [f for f in get_args(listed) if f not in elsewhere and not f.startswith("relevance-")]
    assert fired() == dict.fromkeys(families, True)
    for family in families:
        with rules_off(frozenset({family})):
            assert fired() == {f: f != family for f in families}
    assert fired() == dict.fromkeys(families, True)
