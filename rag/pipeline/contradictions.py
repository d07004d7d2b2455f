"""Contradictions: two sources giving different values for the same fact the answer uses.

Checked over every sentence of the reranked shortlist, not only the cited passages (the outdated
document is usually retrieved but not cited). Two sentences state the same fact when they come
from different documents, name the same things (plan and product names, codes), carry the same
qualifiers (monthly vs annual, primary vs secondary carer, ...), say mostly the same words and
mean much the same; they conflict when they then give different values of one kind (two dollar
amounts, two durations in days). Look-alikes differ in a name or qualifier and are left alone.

The newer effective date is preferred, then the higher authority; when neither decides, nothing
is preferred and the answer says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rag.model.evidence import ScoredSentence
from rag.pipeline.relevance import states
from rag.pipeline.understand import answer_type
from rag.text.claims import negated, sibling_names
from rag.text.facts import (
    CURRENCY_CODES,
    MONTH_NAMES,
    Value,
    clauses,
    content_words,
    qualifiers,
    same_amount,
    same_dimension,
    values,
    variant_qualifiers,
)
from rag.text.names import codes, fold, mentions, names
from rag.text.swaps import filled_differently, is_name

MIN_OVERLAP = 0.4
MIN_COSINE = 0.7
TERMS_RATIO = 0.8
"""The other sentence must cover the question's key terms nearly as well: else it is another fact."""
ANSWER_TERMS_RATIO = 0.6
"""Looser for two answers to the question compared value to value (`differing_answers`): a table
row covers the question's words less well than the prose it contradicts."""
NAMED_ANSWER_TERMS_RATIO = 0.5
"""Looser still when the question names its subject (a product code, a plan) and both passages name
it: a step read without the one before it ("Keep holding for ten seconds.") says few of the
question's words, and the name keeps it on the subject. Without a name, "report within 1 hour" (a
security incident) would answer "How soon do I report a lost laptop?"."""


@dataclass(frozen=True, slots=True)
class FoundConflict:
    chosen: ScoredSentence
    other: ScoredSentence
    chosen_value: Value
    other_value: Value
    preferred: str | None
    """"chosen", "other" or None."""
    reason: str


class ContradictionDetector(Protocol):
    name: str

    def find(
        self, chosen: ScoredSentence, shortlist: Sequence[ScoredSentence], *, question: str = ""
    ) -> list[FoundConflict]: ...


class ValueConflicts:
    """The offline default: different values of one kind for the same fact (module docstring)."""

    name = "value-conflicts-v1"

    def find(
        self, chosen: ScoredSentence, shortlist: Sequence[ScoredSentence], *, question: str = ""
    ) -> list[FoundConflict]:
        return find_conflicts(chosen, shortlist, question=question)


def find_conflicts(
    chosen: ScoredSentence, shortlist: Sequence[ScoredSentence], *, question: str = ""
) -> list[FoundConflict]:
    """Sentences in `shortlist` from other documents that give another value for `chosen`'s fact,
    or (with the `question`) another value for what the question asks, however it is worded."""
    found: list[FoundConflict] = []
    seen_documents: set[int] = set()
    for other in shortlist:
        document = other.passage.document_id
        if document == chosen.passage.document_id or document in seen_documents:
            continue
        ratio = NAMED_ANSWER_TERMS_RATIO if _both_name_the_subject(chosen, other, question) else ANSWER_TERMS_RATIO
        if other.terms < ratio * chosen.terms:
            continue
        pair = None
        if other.terms >= TERMS_RATIO * chosen.terms:
            pair = (
                differing_values(chosen, other) or differing_names(chosen, other) or differing_polarity(chosen, other)
            )
        pair = pair or differing_answers(chosen, other, question) or differing_fills(chosen, other, question)
        if pair is None:
            continue
        seen_documents.add(document)
        preferred, reason = prefer(chosen, other)
        found.append(FoundConflict(chosen, other, pair[0], pair[1], preferred, reason))
    return found


def _both_name_the_subject(a: ScoredSentence, b: ScoredSentence, question: str) -> bool:
    asked = names(question) | codes(question)
    return bool(asked) and all(mentions(_where(s), n) for s in (a, b) for n in asked)


def differing_values(a: ScoredSentence, b: ScoredSentence) -> tuple[Value, Value] | None:
    """(a's value, b's value) when both sentences state the same fact with different values."""
    a_values, b_values = values(a.text), values(b.text)
    if not a_values or not b_values or not same_subject(a, b):
        return None
    b_keys = {v.key for v in b_values}
    a_keys = {v.key for v in a_values}
    for va in a_values:
        if va.key in b_keys or va.kind == "number":
            continue
        for vb in b_values:
            if vb.kind == va.kind and vb.key not in a_keys:
                return va, vb
    return None


MIN_NAMED_COSINE = 0.8
MIN_NAMED_OVERLAP = 0.5


def differing_names(a: ScoredSentence, b: ScoredSentence) -> tuple[Value, Value] | None:
    """A named value that differs: "The house is in New Orleans" against "... in Cloutierville".

    Both sentences share a name (the subject), say nearly the same words, mean nearly the same,
    state no values of their own that differ, and each has exactly one name the other lacks. When
    values differ too, the differing name is the subject ("Beacon" and "Beacon Pro" keep data 30 and
    365 days): two products, not a conflict.
    """
    if a.vector is None or b.vector is None or float(np.dot(a.vector, b.vector)) < MIN_NAMED_COSINE:
        return None
    if {v.key for v in values(a.text)} != {v.key for v in values(b.text)}:
        return None
    if qualifiers(a.text) != qualifiers(b.text):
        return None
    a_names, b_names = _names_but_months(a.text), _names_but_months(b.text)
    only_a = {n for n in a_names if not mentions(b.text, n)}
    only_b = {n for n in b_names if not mentions(a.text, n)}
    if len(only_a) != 1 or len(only_b) != 1 or not (a_names - only_a):
        return None
    (name_a,), (name_b,) = only_a, only_b
    if mentions(name_a, name_b) or mentions(name_b, name_a):  # "Beacon" inside "Beacon Pro": a sibling
        return None
    wa, wb = content_words(a.text.replace(name_a, " ")), content_words(b.text.replace(name_b, " "))
    if not wa or not wb or len(wa & wb) / len(wa | wb) < MIN_NAMED_OVERLAP:
        return None
    return Value("name", name_a, name_a), Value("name", name_b, name_b)


MIN_POLARITY_OVERLAP = 0.6


def differing_polarity(a: ScoredSentence, b: ScoredSentence) -> tuple[Value, Value] | None:
    """A yes/no value that differs: "SSO is available on the Team plan" against "... is not available".

    The two sentences name the same things with the same values and qualifiers, say nearly the same
    words and mean nearly the same, and exactly one of them is negated."""
    if negated(a.text) == negated(b.text):
        return None
    if a.vector is None or b.vector is None or float(np.dot(a.vector, b.vector)) < MIN_NAMED_COSINE:
        return None
    if _names_but_months(a.text) != _names_but_months(b.text) or codes(a.text) != codes(b.text):
        return None
    if {v.key for v in values(a.text)} != {v.key for v in values(b.text)} or qualifiers(a.text) != qualifiers(b.text):
        return None
    wa, wb = content_words(_NEGATION_WORDS.sub(" ", a.text)), content_words(_NEGATION_WORDS.sub(" ", b.text))
    if not wa or not wb or len(wa & wb) / len(wa | wb) < MIN_POLARITY_OVERLAP:
        return None
    return _polarity(a.text, b.text), _polarity(b.text, a.text)


_NEGATION_WORDS = re.compile(r"\b(?:not|no|never|cannot|without)\b|n't\b", re.IGNORECASE)
_NEGATED_WORD = re.compile(r"\b(?:not|never|cannot|no)\s+(?:be\s+)?([A-Za-z-]+)|n't\s+([A-Za-z-]+)", re.IGNORECASE)


def _polarity(text: str, other: str) -> Value:
    """How a sentence answers yes or no, in its own words where they can be found ("not available")."""
    found = _NEGATED_WORD.search(text if negated(text) else other)
    word = (found.group(1) or found.group(2)) if found else None
    if negated(text):
        return Value("yes/no", "no", f"not {word}" if word else "no")
    return Value("yes/no", "yes", word if word and re.search(rf"\b{re.escape(word)}\b", text) else "yes")


def differing_answers(a: ScoredSentence, b: ScoredSentence, question: str) -> tuple[Value, Value] | None:
    """Two sources answering the same question with different values, however each is worded:
    "Staff get 20 days of holiday a year" against a policy table's "Annual leave: 26 days", "within
    two weeks" against "30 days", "49 EUR" against "€59". Each sentence's answer is the value, of
    the kind the question asks for, in its clause that shares most of the question's words (a table
    cell read with its row and header). Not a conflict: values for another variant (annual where
    monthly is asked), a sibling ("Beacon Pro" for "Beacon"), or another subject (a region, plan or
    product each names that the other does not). Known gap: a side that alone names a region or plan
    ("In Germany, the fee is €59" against "The fee is €49") is still compared."""
    if not question:
        return None
    first, second = answer_value(a.text, question), answer_value(b.text, question)
    if first is None or second is None:
        return None
    (x, clause_a), (y, clause_b) = first, second
    if not _comparable(x, clause_a, y, clause_b) or _same(x, y):
        return None
    asked = names(question) | codes(question)
    where_a, where_b = _where(a), _where(b)
    if not all(mentions(where_a, n) and mentions(where_b, n) for n in asked):
        return None
    own_a, own_b = _own_names(clause_a, question), _own_names(clause_b, question)
    if any(not mentions(where_b, n) for n in own_a) and any(not mentions(where_a, n) for n in own_b):
        return None  # each names something the other does not: two subjects
    return x, y


def differing_fills(a: ScoredSentence, b: ScoredSentence, question: str) -> tuple[Value, Value] | None:
    """One sentence with another answer filled in: "Airways International was an airline based in
    Miami, Florida." against "... based in Anchorage, Alaska." (rag/text/swaps.py,
    `filled_differently`), when what differs is the kind of answer the question asks for (a date
    for "when", an amount for "how much"; for other questions a name or a value on each side) and
    not the question's own subject ("RT-9" against "RT-9i" is two products). A yes/no question is
    left to `differing_polarity`."""
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
    if _numbers(x) and _numbers(x) == _numbers(y):
        return None  # "costs $20" and "$20.00": the same amount
    return Value("answer", x, x), Value("answer", y, y)


def _numbers(text: str) -> list[float]:
    return sorted(float(n.replace(",", "")) for n in re.findall(r"\d+(?:,\d{3})*(?:\.\d+)?", text))


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
    best: tuple[int, Value, str] | None = None
    parts = clauses(sentence)
    key = sentence.split(";")[0].strip()
    row_key = f"{key} - " if parts and parts[0].startswith(f"{key} - ") else ""
    for clause in parts:
        variants = variant_qualifiers(clause)
        if asked_variants and variants and not variants & asked_variants:
            continue
        siblings = sibling_names(clause, asked, question) | _sibling_codes(clause, asked)
        rest = _without(clause, siblings)
        if siblings and not all(mentions(rest, n) for n in asked):
            continue  # about a sibling ("Beacon Pro" when "Beacon" is asked), not also about the asked
        body = rest[len(row_key) :] if row_key and rest.startswith(row_key) else rest  # a row's label gives no value
        in_codes = " ".join(codes(body))
        stated = [v for v in values(body) if _answers_kind(wanted, v) and v.surface not in in_codes]
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


def _without(text: str, removed: set[str]) -> str:
    for name in sorted(removed, key=len, reverse=True):
        text = text.replace(name, " ")
    return text


def _answers_kind(wanted: str, value: Value) -> bool:
    """Values that can answer the question: a date for "when", an amount, count or duration for
    "how many / how much / how long", a version or an address for other questions (yes/no
    questions have no value to compare)."""
    if wanted == "date":
        return value.kind == "date"
    if wanted == "quantity":
        return value.kind not in ("date", "time", "version", "address")
    if wanted in ("other", "address"):
        return value.kind in ("version", "address") if wanted == "other" else value.kind == "address"
    return False


def _where(sentence: ScoredSentence) -> str:
    return f"{sentence.text} {sentence.passage.title} {sentence.passage.heading}"


def same_subject(a: ScoredSentence, b: ScoredSentence) -> bool:
    if _names_but_months(a.text) != _names_but_months(b.text) or codes(a.text) != codes(b.text):
        return False
    if qualifiers(a.text) != qualifiers(b.text):
        return False
    wa, wb = _words_without_values(a.text), _words_without_values(b.text)
    if not wa or not wb or len(wa & wb) / len(wa | wb) < MIN_OVERLAP:
        return False
    if a.vector is not None and b.vector is not None:
        return float(np.dot(a.vector, b.vector)) >= MIN_COSINE
    return True


def _words_without_values(text: str) -> set[str]:
    for v in values(text):
        text = text.replace(v.surface, " ")
    return content_words(text)


def _names_but_months(text: str) -> set[str]:
    """Names, without month names: "born on 15 July 1905" and "born on 8 February 1900" name the same things."""
    return {n for n in names(text) if not set(n.lower().split()) <= MONTH_NAMES}


def prefer(chosen: ScoredSentence, other: ScoredSentence) -> tuple[str | None, str]:
    a, b = chosen.passage, other.passage
    if a.effective_date and b.effective_date and a.effective_date != b.effective_date:
        newer = "chosen" if a.effective_date > b.effective_date else "other"
        date = max(a.effective_date, b.effective_date).isoformat()
        return newer, f"newer effective date ({date})"
    if a.authority != b.authority:
        return ("chosen" if a.authority > b.authority else "other"), "higher authority"
    return None, "same date and authority: neither source is preferred"
