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
from rag.pipeline.answer_values import differing_answers, differing_fills, where
from rag.text.claims import negated
from rag.text.facts import MONTH_NAMES, Value, content_words, qualifiers, values
from rag.text.names import codes, mentions, names

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
    return bool(asked) and all(mentions(where(s), n) for s in (a, b) for n in asked)


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
    """The newer effective date, then the higher authority. A date that is only a file's time does
    not decide against a stated one: a copy or a checkout gives an old press release today's date."""
    a, b = chosen.passage, other.passage
    stated = (a.dated_by == "file_time") == (b.dated_by == "file_time")
    if stated and a.effective_date and b.effective_date and a.effective_date != b.effective_date:
        newer = "chosen" if a.effective_date > b.effective_date else "other"
        date = max(a.effective_date, b.effective_date).isoformat()
        return newer, f"newer effective date ({date})"
    if a.authority != b.authority:
        return ("chosen" if a.authority > b.authority else "other"), "higher authority"
    return None, "same date and authority: neither source is preferred"
