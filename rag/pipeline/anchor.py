"""Which source sentence a written sentence restates: its anchor.

A language model rewords what it cites ("€0.36 per kilometre" for "€0.36 per km", "you can work
abroad" for "employees may work from another country"). Two stages need the source sentence behind
such a sentence, which an extractive draft carries with it (`DraftSentence.origin`) and a model's
does not:

- the critic (`rag/pipeline/steps.py`): a written sentence its verifier rejects, but whose every
  value and name one cited source sentence states, is requoted: that source sentence, cited, takes
  its place, and passes or fails the same gates. A value the sources state for another thing is
  still caught by the relevance gate, which reads the quote; a value or name no cited sentence
  holds (another city's cap given for a city the policy does not list) has no anchor;
- the contradiction check (`rag/pipeline/compose.py`): the detector compares the anchor with the
  rest of the shortlist, so a stale value is found whether or not the model declared a conflict.

The anchor holds every value (amount, duration, count, date, percentage) and every code and
mid-sentence name of the written sentence; among several, the one sharing most content words. A
sentence with neither values nor codes needs a name and most of its content words in the anchor
("Hannah Lindqvist leads the security programme" for "The security programme is led by Hannah
Lindqvist"); plain prose with none of them is left to the verifier. A name the asker used
(`echoed`: "Who heads security at Brightloom?") need not be repeated in the anchor when the anchor's
passage names it (`around`): the model echoed the question's subject, the passage is about it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rag.text.facts import Value, content_words, values
from rag.text.names import codes, mentions, names

T = TypeVar("T")

MIN_PROSE_OVERLAP = 0.5
"""A sentence without values or codes: the share of its content words (names aside) its anchor says."""


def anchor_of(
    written: str,
    candidates: Sequence[tuple[str, T]],
    *,
    echoed: frozenset[str] = frozenset(),
    around: Callable[[T], str] | None = None,
) -> T | None:
    """The candidate (given with its text) that `written` restates, or None."""
    stated = values(written)
    found_codes = codes(written)
    named = found_codes | names(written)
    words = content_words(written)
    prose = not stated and not found_codes
    if prose and not named - echoed:
        return None
    plain = words - content_words(" ".join(named))
    best: tuple[int, int] | None = None
    chosen: T | None = None
    for index, (text, item) in enumerate(candidates):
        context = around(item) if around is not None else ""
        excused = {n for n in echoed if mentions(context, n)}
        if not _holds_all(text, stated) or not all(mentions(text, n) for n in named - excused):
            continue
        shared = len(words & content_words(text))
        if prose and (not plain or len(plain & content_words(text)) < MIN_PROSE_OVERLAP * len(plain)):
            continue
        rank = (shared, -index)
        if best is None or rank > best:
            best, chosen = rank, item
    return chosen


def _holds_all(text: str, stated: Sequence[Value]) -> bool:
    there = values(text)
    keys = {v.key for v in there}
    amounts = {v.amount for v in there}
    return all(v.key in keys or (v.kind == "number" and v.amount in amounts) for v in stated)
