"""`rag.text.copies`: two sources' copies of one sentence with another answer filled in are found;
codes, sentences with little in common and identical ones are not."""

from __future__ import annotations

from rag.text.copies import filled_differently


def test_two_copies_of_a_sentence_differing_in_one_stretch_are_found() -> None:
    assert filled_differently(
        "Airways International was an airline based in Anchorage, Alaska.",
        "Airways International was an airline based in Miami, Florida.",
    ) == ("Anchorage, Alaska", "Miami, Florida")
    # the same fill wherever they differ
    assert filled_differently(
        "War Music (Jay-Z album) War Music is the street album by American rapper Jay-Z, hosted by DJ Whoo Kid.",
        "War Music (Slim the Mobster album) War Music is the street album by American rapper Slim the Mobster, hosted"
        " by DJ Whoo Kid.",
    ) == ("Jay-Z", "Slim the Mobster")
    # a code is itself: two differing stretches, not one
    assert filled_differently("The RT-9 battery lasts up to 5 hours.", "The RT-9i battery lasts up to 8 hours.") is None
    # too little in common
    assert filled_differently("Support is based in Dublin.", "Sales are based in Austin.") is None
    assert (
        filled_differently("The same sentence twice, word for word.", "The same sentence twice, word for word.") is None
    )
