"""What a number measures, and what a question asks to be measured.

"What is the population of Broken Bow?" asks for a count of people; "10 miles northwest of Broken
Bow" measures a distance, "one of the sixteen townships" counts townships, and "located at
(30.17, -95.69)" counts nothing: none of them gives the population. "How much does the repair
cost?" asks for money (or a share of the price), not "within 5 business days".

A number's measure is read from its unit: the value's own kind, or the word after the number
("10 miles", "3 kg", "sixteen townships"). A question's is read from its wording ("how far", "how
much does ... cost", "how many miles", "population"); the wording nearest the start decides, and
"how long" says nothing (a trial lasts, a river is long). Either may be unknown: a bare number
measures anything, and "how many" of an unlisted thing ("how many seats") asks for a whole
number that measures nothing else, whatever it counts ("40 licences" may count seats). A number
of things answers only a count: "1 zone" is no price, "5 seats" no distance.
"""

from __future__ import annotations

import re

from rag.text.facts import DAYS_IN, STOP_WORDS, Value, is_year
from rag.text.switches import off

MONEY, PERCENT, DURATION, LENGTH, MASS, DATA = "money", "percent", "duration", "length", "mass", "data"
COUNT, PEOPLE = "count", "people"
"""A whole number of things; a whole number of people (a population)."""
THING = "thing"
"""A number before some other noun: "sixteen townships"."""
YEAR = "year"
"""A year after a preposition: "built in 2019" measures nothing."""

_UNIT_MEASURES = {
    LENGTH: "miles? km kilometres? kilometers? metres? meters? m ft feet foot inch(?:es)? yards? cm mm",
    MASS: "kg kilograms? grams? g lbs? tons? tonnes?",
    DURATION: "seconds? minutes? hours? days? weeks? months? years? decades? centur(?:y|ies) ms",
    DATA: "[kmgt]b bytes? [kmgt]bps",
    MONEY: "dollars? euros? pounds? cents? pence yen francs? crowns?",
    PEOPLE: "people persons? residents? inhabitants? citizens? individuals? population",
}
_UNITS = {
    measure: re.compile(rf"\s?(?:{'|'.join(words.split())})\b", re.IGNORECASE)
    for measure, words in _UNIT_MEASURES.items()
}
_NEXT_WORD = re.compile(r"[\s-]?([A-Za-z]+)")
_WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+|\d+(?:\.\d+)?[kmb]", re.IGNORECASE)


def measure_of(value: Value, text: str) -> str | None:
    """What `value` (found in `text`) measures; None when nothing says (a bare number)."""
    if value.kind.startswith("money"):
        return MONEY
    if value.kind == "percent":
        return PERCENT
    if value.kind in DAYS_IN or value.kind.endswith(("hour", "minute", "second", "business day")) or value.kind == "ms":
        return DURATION
    if value.kind in ("gb", "mb", "tb", "kb"):
        return DATA
    if value.kind != "number":
        return THING  # "40 seats", "3 checks": a count of something named
    end = text.find(value.surface)
    if end >= 0 and is_year(value.amount) and _YEAR_BEFORE.search(text, 0, end):
        return YEAR
    return unit_measure(text[end + len(value.surface) :] if end >= 0 else "")


_YEAR_BEFORE = re.compile(r"\b(?:in|since|from|by|until|till|before|after|of|around|circa|c\.)\s+$", re.IGNORECASE)


def unit_measure(after: str) -> str | None:
    """The measure of the unit that `after` opens with ("miles northwest of ..." is a length,
    "townships of ..." a count of things); None when it opens with no noun ("in 2010", ".")."""
    for measure, unit in _UNITS.items():
        if unit.match(after):
            return measure
    word = _NEXT_WORD.match(after)
    if word and word.group(1).islower() and word.group(1) not in STOP_WORDS:
        return THING
    return None


def answers_measure(asked: frozenset[str] | None, value: Value, text: str) -> bool:
    """Whether `value` in `text` could give the measure `asked`: its measure is one asked, or a
    count answers a count. A count is a whole number; a population counts people, not townships.
    With nothing asked, any amount but a year does."""
    measure = measure_of(value, text)
    if asked is None or measure == YEAR:
        return measure != YEAR
    if measure in asked:
        return True
    whole = value.kind != "number" or _WHOLE.fullmatch(value.amount) is not None
    if PEOPLE in asked:
        return measure is None and whole
    if COUNT in asked:
        return measure in (None, THING, PEOPLE) and whole
    return measure is None  # "1 zone", "5 seats" cost nothing and last no time


def counts_measure(asked: frozenset[str] | None, after: str) -> bool:
    """Whether a number written in words ("sixteen"), followed by `after`, could give `asked`: a
    count for a count ("two plans" answers how many plans), a measure for its own; with nothing
    asked, only a measure ("two plans" is no price, duration or size)."""
    measure = unit_measure(after)
    if asked is None:
        return measure not in (None, THING, PEOPLE)
    if measure in asked:
        return True
    if PEOPLE in asked:
        return measure is None
    return measure in (None, THING, PEOPLE) if COUNT in asked else measure is None


_ASKED = (
    (  # "how far back" asks how long
        frozenset({LENGTH}),
        re.compile(
            r"\bhow far\b(?!\s+(?:back|ahead|forward|out|in advance))|\bdistance\b|\bhow (?:tall|high|deep|wide)\b"
        ),
    ),
    (frozenset({MASS}), re.compile(r"\bhow heavy\b|\bweigh(?:s|ed)?\b|\bweight\b")),
    (frozenset({PEOPLE}), re.compile(r"\bpopulation\b")),
    (frozenset({COUNT}), re.compile(r"\b(?:number|count) of\b")),
    (frozenset({PERCENT}), re.compile(r"\bwhat (?:percentage|percent|proportion)\b|\bhow many percent\b")),
    (
        # "what's the restocking fee?" is "10% of the price paid"; pay is not asked for as money
        # ("how much severance pay": "four weeks' pay"), nor is anything "paid" ("paid leave")
        frozenset({MONEY, PERCENT}),
        re.compile(
            r"\bhow much\b.*\b(?:cost|costs|charge|charged|spend|spent)\b"
            r"|\bwhat\s+(?:does|do|did|will|would)\b.*\bcost\b"
            r"|\bwhat(?:'s|\s+(?:is|was|are|were))?\s+(?:the\s+)?(?:[\w+-]+\s+){0,2}(?:price|cost|fee|salary|budget)s?\b"
        ),
    ),
)
_UNSAID = re.compile(r"\bhow (?:long|often|fast|big|large|much|old|soon|quickly)\b|\bwhen\b|\bwhat year\b")
"""Wordings of a measure that could be several ("how long": a duration or a length)."""


def asked_measure(question: str) -> frozenset[str] | None:
    """The measures that could answer `question`, or None when its wording does not say. The
    wording nearest the start decides: "How long have Christians made up a third of the
    population?" asks for a duration of some kind, not a population."""
    if off("measures"):
        return None
    text = question.lower()
    found: list[tuple[int, frozenset[str] | None]] = [(m.start(), None) for m in _UNSAID.finditer(text)]
    for measures, pattern in _ASKED:
        found += [(m.start(), measures) for m in pattern.finditer(text)]
    for m in re.finditer(r"\bhow many((?:\s+[a-z+-]+){1,4})", text):  # "how many unused annual leave days"
        words = m.group(1).split()
        head = words[: next((i for i, w in enumerate(words) if w in STOP_WORDS), len(words))]
        units = [unit_measure(" " + word) for word in head]  # "how many times a year": a count
        unit = next((u for u in units if u not in (None, THING, PEOPLE)), COUNT)
        found.append((m.start(), frozenset({unit})))
    if not found:
        return None
    return min(found, key=lambda f: (f[0], f[1] is None))[1]
