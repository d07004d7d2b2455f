"""Two sources answering the question with different values, however each is worded.

`answer_value` reads the value a sentence gives for what the question asks (the kind asked, in the
clause sharing most of the question's words, a table cell with its row); `differing_answers`
compares two sources' values for it, and `differing_fills` finds one sentence with another answer
filled in (rag/text/copies.py). rag/pipeline/contradictions.py asks them after its own same-fact
checks, for the pairs whose wording differs.
"""

from __future__ import annotations

import re

from rag.model.evidence import ScoredSentence
from rag.pipeline.relevance import FROM_EVENT, states
from rag.pipeline.understand import answer_type
from rag.text.claims import sibling_names, without
from rag.text.copies import filled_differently
from rag.text.facts import (
    CURRENCY_CODES,
    Value,
    clauses,
    content_words,
    is_year,
    numbers,
    same_amount,
    same_dimension,
    values,
    variant_qualifiers,
)
from rag.text.measures import DURATION, answers_measure, asked_measure, measure_of
from rag.text.names import codes, fold, mentions, names
from rag.text.switches import off
from rag.text.words import is_name


def differing_answers(a: ScoredSentence, b: ScoredSentence, question: str) -> tuple[Value, Value] | None:
    """Two sources answering the same question with different values, however each is worded:
    "Staff get 20 days of holiday a year" against a policy table's "Annual leave: 26 days", "within
    two weeks" against "30 days", "49 EUR" against "€59". Each sentence's answer is the value, of
    the kind the question asks for, in its clause that shares most of the question's words (a table
    cell read with its row and header). Not a conflict: values for another variant (annual where
    monthly is asked), a sibling ("Beacon Pro" for "Beacon"), or another subject (a region, plan or
    product each names that the other does not). Known gap: a side that alone names a region or plan
    ("In Germany, the fee is €59" against "The fee is €49") is still compared."""
    if off("answers"):
        return None
    if not question:
        return None
    first, second = answer_value(a.text, question), answer_value(b.text, question)
    if first is None or second is None:
        return None
    (x, clause_a), (y, clause_b) = first, second
    if not _comparable(x, clause_a, y, clause_b) or _same(x, y):
        return None
    asked = names(question) | codes(question)
    where_a, where_b = where(a), where(b)
    if not all(mentions(where_a, n) and mentions(where_b, n) for n in asked):
        return None
    own_a, own_b = _own_names(clause_a, question), _own_names(clause_b, question)
    if any(not mentions(where_b, n) for n in own_a) and any(not mentions(where_a, n) for n in own_b):
        return None  # each names something the other does not: two subjects
    return x, y


def differing_fills(a: ScoredSentence, b: ScoredSentence, question: str) -> tuple[Value, Value] | None:
    """One sentence with another answer filled in: "Airways International was an airline based in
    Miami, Florida." against "... based in Anchorage, Alaska." (rag/text/copies.py,
    `filled_differently`), when what differs is the kind of answer the question asks for (a date
    for "when", an amount for "how much"; for other questions a name or a value on each side) and
    not the question's own subject ("RT-9" against "RT-9i" is two products). A yes/no question is
    left to `differing_polarity`."""
    if off("fills"):
        return None
    if not question or answer_type(question) == "yesno":
        return None
    found = filled_differently(a.text, b.text)
    if found is None:
        return None
    x, y = found
    asked = names(question) | codes(question)
    if any(mentions(side, n) for side in found for n in asked):
        return None
    wanted = answer_type(question)
    if wanted in ("quantity", "date", "address"):
        if not (states(wanted, x, question) and states(wanted, y, question)):
            return None
    elif not all(is_name(side) or values(side) for side in found):
        return None
    if numbers(x) and sorted(numbers(x)) == sorted(numbers(y)):
        return None  # "costs $20" and "$20.00": the same amount
    return Value("answer", x, x), Value("answer", y, y)


def _comparable(x: Value, clause_x: str, y: Value, clause_y: str) -> bool:
    """Values of one dimension, or a table's bare number against a counted one when its clause
    names what is counted ("Requests per minute: 300" against "200 requests/min")."""
    if same_dimension(x, y):
        return True
    if x.kind == "number" and y.kind != "number":
        return y.kind in content_words(clause_x)
    if y.kind == "number" and x.kind != "number":
        return x.kind in content_words(clause_y)
    return False


def _same(x: Value, y: Value) -> bool:
    return same_amount(x, y) if same_dimension(x, y) else x.amount == y.amount


_ASIDE = re.compile(r"\([^()]*\d[^()]*\)")
"""A parenthesis holding values: other regions' or currencies' figures beside the one stated."""


def _own_names(clause: str, question: str) -> set[str]:
    """The names and codes a clause states its value for, beyond the question's: not those in an
    aside ("€59 (UK £52, US $64)") and not a currency code ("49 EUR" names no subject)."""
    text = _ASIDE.sub(" ", clause)
    found = names(text) | codes(text)
    return {n for n in found if not mentions(question, n) and n.upper() not in CURRENCY_CODES}


def answer_value(sentence: str, question: str) -> tuple[Value, str] | None:
    """The value `sentence` gives for what `question` asks, with its clause (rag/text/facts.py,
    `clauses`): of the kind asked, in the clause sharing most of the question's words (at least
    one word; for a bare number two, or one and the asked name in its row), not in a clause for
    another variant (annual when monthly is asked) or naming a sibling of what is asked ("CAM-3
    Outdoor" when the "CAM-3" is asked)."""
    wanted = answer_type(question)
    asked = names(question) | codes(question)
    asked_words = content_words(question) - content_words(" ".join(asked))
    asked_variants = variant_qualifiers(question)
    measure = asked_measure(question)
    best: tuple[int, Value, str] | None = None
    parts = clauses(sentence)
    key = sentence.split(";")[0].strip()
    row_key = f"{key} - " if parts and parts[0].startswith(f"{key} - ") else ""
    for clause in parts:
        variants = variant_qualifiers(clause)
        if asked_variants and variants and not variants & asked_variants:
            continue
        siblings = sibling_names(clause, asked, question) | _sibling_codes(clause, asked)
        rest = without(clause, siblings)
        if siblings and not all(mentions(rest, n) for n in asked):
            continue  # about a sibling ("Beacon Pro" when "Beacon" is asked), not also about the asked
        body = rest[len(row_key) :] if row_key and rest.startswith(row_key) else rest  # a row's label gives no value
        in_codes = " ".join(codes(body))
        stated = [
            v
            for v in values(body)
            if (_answers_kind(wanted, v) or _from_event(wanted, v, body))
            and v.surface not in in_codes
            and _measures(wanted, measure, v, body)
        ]
        if not stated:
            continue
        value = _nearest(stated, body, asked)
        words = len(content_words(clause) & asked_words)
        named = sum(mentions(clause, n) for n in asked)
        if words < 1 or words + named < (2 if value.kind == "number" else 1):
            continue  # a bare number needs two: a word and the asked name in its row will do
        overlap = words + 2 * named
        if best is None or overlap > best[0]:
            best = (overlap, value, clause)
    return (best[1], best[2]) if best is not None else None


def _nearest(stated: list[Value], text: str, asked: set[str]) -> Value:
    """The value closest to where the text names what is asked ("the NX-6 Pro costs $499 and the
    NX-6 costs $399": $399 for the NX-6); without a name, the first value with a unit."""
    folded = fold(text)
    anchors = [m.start() for n in asked for m in re.finditer(re.escape(fold(n)), folded)]
    if not anchors:
        return sorted(stated, key=lambda v: v.kind == "number")[0]

    def distance(v: Value) -> int:
        at = text.find(v.surface)
        return min(abs(at - a) for a in anchors) if at >= 0 else len(text)

    return min(stated, key=lambda v: (distance(v), v.kind == "number"))


def _sibling_codes(clause: str, asked: set[str]) -> set[str]:
    """Codes in `clause` that extend an asked one: "CAM-3 Outdoor" or "RT-9i" for "CAM-3" or "RT-9"."""
    return {c for c in codes(clause) for a in asked if c != a and c.startswith(a)}


def _answers_kind(wanted: str, value: Value) -> bool:
    """Values that can answer the question: a date for "when", an amount, count or duration for
    "how many / how much / how long", a version or an address for other questions (yes/no
    questions have no value to compare)."""
    if wanted == "date":  # a bare year is a date: "In 1974, he was elected"
        return value.kind == "date" or (value.kind == "number" and is_year(value.amount))
    if wanted == "quantity":
        return value.kind not in ("date", "time", "version", "address")
    if wanted in ("other", "address"):
        return value.kind in ("version", "address") if wanted == "other" else value.kind == "address"
    return False


def _from_event(wanted: str, value: Value, text: str) -> bool:
    """A deadline's answer: a time counted from an event ("within 28 days of the journey")."""
    return wanted == "date" and measure_of(value, text) == DURATION and FROM_EVENT.search(text) is not None


def _measures(wanted: str, measure: frozenset[str] | None, value: Value, text: str) -> bool:
    """An amount of the measure asked, and no year ("built in 2019" counts no wheelchair spaces):
    rag/text/measures.py."""
    return wanted != "quantity" or answers_measure(measure, value, text)


def where(sentence: ScoredSentence) -> str:
    """A sentence with its passage's title and heading: where a name it leaves out may be said."""
    return f"{sentence.text} {sentence.passage.title} {sentence.passage.heading}"
