"""Sentence-level checks of a claim against the evidence sentence that should carry it.

`missing_facts` in the critic asks whether each value occurs anywhere in the cited evidence; that
lets a value move to another subject ("16 weeks" of the primary carer claimed for the secondary
carer) and lets a "not" appear or vanish. These checks look at the sentences themselves:

- attribution: each value of the claim must be stated, in some evidence sentence, for the same
  subject: that sentence names at least one of the claim's names (when it has any), carries the
  variant qualifiers the claim names (primary/secondary, monthly/annual, ...), and is not about a sibling
  whose name extends the claim's ("Beacon Pro" when the claim says "Beacon");
- polarity: the claim and its closest evidence sentence are both negated or both not;
- scope: a claim that says "all", "every", "any" or "always" of something needs evidence that
  says so of the same thing, and one that adds "unlimited", "free", "only", "guaranteed" and the
  like needs evidence that uses the word;
- names: the claim does not put other names where its closest evidence sentence has its own
  ("Tomasz Nowak is the CEO" against "Priya Raman is the CEO"), and values keep their rate
  ("$60 per day" is not "$60 per week").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.text.facts import Value, values, variant_qualifiers
from rag.text.names import codes, mentions, names, new_names

_NEGATION = re.compile(
    r"\b(?:not|no(?! (?:fewer|less|more|later|earlier|sooner|longer) than)|never|none|nobody|nothing|cannot|without)\b"
    r"|n't\b",
    re.IGNORECASE,
)
_UNIVERSAL = re.compile(
    r"\b(?:all|every|any|each|always|everyone|everybody|everything|whole)\b(?:\s+(\w+))?", re.IGNORECASE
)
_PER_VALUE = re.compile(r"\d\S*(?:\s+\w+)?\s+(?:for\s+)?$")
"""Just before "every"/"each": a value it is a rate of ("$0.67 for every mile"), not a scope."""
_RATE = re.compile(r"\s*(?:for\s+)?(?:a|an|per|each|every)\s+(\w+)", re.IGNORECASE)


def sibling_names(text: str, asked: set[str], question: str) -> set[str]:
    """Names in `text` that extend a name of `question` without being in it: "Beacon Pro" when
    the question (or claim) said "Beacon" — a sibling product, plan or variant."""
    asked_words = {word.lower() for name in asked for word in name.split()}
    return {
        name
        for name in new_names(text, question)
        if len(name.split()) > 1 and asked_words & {word.lower() for word in name.split()}
    }


def without(text: str, removed: set[str]) -> str:
    """`text` with the `removed` names taken out, longest first ("Beacon Pro" before "Beacon")."""
    for name in sorted(removed, key=len, reverse=True):
        text = text.replace(name, " ")
    return text


def _holds(value: Value, sentence: str) -> bool:
    stated = values(sentence)
    return value.key in {v.key for v in stated} or (
        value.kind == "number" and value.amount in {v.amount for v in stated}
    )


def _rate(text: str, value: Value) -> str | None:
    """The unit of time or thing a value is given per: "$60 per day" → "day"."""
    at = text.find(value.surface)
    if at < 0:
        return None
    m = _RATE.match(text, at + len(value.surface))
    if not m:
        return None
    unit = m.group(1).lower()
    return _UNIT_WORDS.get(unit, unit.rstrip("s"))


_UNIT_WORDS = {
    **dict.fromkeys(("km", "kms", "kilometre", "kilometres", "kilometer", "kilometers"), "km"),
    **dict.fromkeys(("mi", "mile", "miles"), "mile"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "hour"),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), "minute"),
    **dict.fromkeys(("yr", "yrs", "year", "years", "annum"), "year"),
    **dict.fromkeys(("mo", "month", "months"), "month"),
    **dict.fromkeys(("wk", "wks", "week", "weeks"), "week"),
}
"""Units a rate is given per, as people abbreviate them: "€0.36 per kilometre" is "€0.36 per km"."""


def _names_of(text: str) -> set[str]:
    """Names and codes, the first word of the sentence included, without the parts of longer names."""
    found = new_names(text, "") | codes(text)
    return {n for n in found if not any(n != other and n in other.split() for other in found)}


def swapped_names(claim: str, evidence_sentence: str) -> set[str]:
    """Names the claim puts where its closest evidence sentence has others ("Tomasz Nowak is the
    CEO" against "Priya Raman is the CEO"), or a sibling the evidence sentence is really about."""
    claimed = _names_of(claim)
    only_claim = {n for n in claimed if not mentions(evidence_sentence, n)}
    only_evidence = {n for n in _names_of(evidence_sentence) if not mentions(claim, n)}
    if only_claim and only_evidence:
        return only_claim
    return sibling_names(evidence_sentence, claimed, claim)


def same_subject(claim: str, evidence_sentence: str) -> bool:
    """The evidence sentence is about what the claim is about: one of its names (its first word
    counts: "Beacon keeps ..." when the evidence names Beacon; a reworded claim's opening word, "Using
    your own car ...", is no name), no sibling of them, and every variant the claim names."""
    inside = names(claim) | codes(claim)
    claimed = {n for n in _names_of(claim) if n in inside or mentions(evidence_sentence, n)}
    if claimed and not any(mentions(evidence_sentence, name) for name in claimed):
        return False
    if sibling_names(evidence_sentence, claimed, claim):
        return False
    return variant_qualifiers(claim) <= variant_qualifiers(evidence_sentence)


_ROW_PAIR = re.compile(r"^[^:;]{1,80}: [^;]+$")


def row_cells(sentence: str) -> list[str]:
    """A table row as ingest flattens it ("Severity: P1; Starter: 1 business day; Business: 1 hour")
    as one sentence per cell, each with the row's key ("Severity: P1; Business: 1 hour"): a row names
    several subjects, and a value belongs to its own column's. Any other sentence: itself."""
    pairs = [p.strip() for p in sentence.split("; ")]
    if len(pairs) < 3 or not all(_ROW_PAIR.match(p) for p in pairs):
        return [sentence]
    return [f"{pairs[0]}; {pair}" for pair in pairs[1:]]


def misattributed(claim: str, evidence_sentences: Sequence[str]) -> list[str]:
    """Values of the claim stated in the evidence only for another subject or variant (a table row's
    values each for its own column)."""
    wrong = []
    cells = [cell for s in evidence_sentences for cell in row_cells(s)]
    for value in values(claim):
        holders = [s for s in cells if _holds(value, s)]
        rate = _rate(claim, value)
        if holders and not any(_carries(claim, s, value, rate) for s in holders):
            wrong.append(value.surface)
    return wrong


def _carries(claim: str, sentence: str, value: Value, rate: str | None) -> bool:
    """`sentence` states `value` for the claim's subject: it shares a name with the claim but names
    no other thing in the place of one of the claim's ("P1" shared, "Business" where the claim says
    "Starter": another plan's response time)."""
    if not same_subject(claim, sentence) or _rate(sentence, value) != rate:
        return False
    return not swapped_names(claim, sentence)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


_STRONG = re.compile(
    r"\b(unlimited|free|guaranteed|mandatory|compulsory|optional|automatic(?:ally)?|instant(?:ly)?|lifetime"
    r"|permanent(?:ly)?|only|exclusively|immediately|unconditional(?:ly)?)\b",
    re.IGNORECASE,
)


def added_qualifiers(claim: str, evidence: str) -> set[str]:
    """Strong qualifiers the claim adds that the evidence never uses ("unlimited", "free", "only",
    "guaranteed", ...): each changes what is promised, like a number would."""

    def found(text: str) -> set[str]:
        return {m.group(1).lower() for m in _STRONG.finditer(text)}

    return found(claim) - found(evidence)


def wider_scope(claim: str, evidence_sentence: str) -> bool:
    """The claim says "every plan" (or "all ...") where the evidence sentence does not say it of the same thing."""

    def scopes(text: str) -> set[str]:
        return {
            (m.group(1) or "").lower().rstrip("s")
            for m in _UNIVERSAL.finditer(text)
            if not (m.group(0).lower().startswith(("every", "each")) and _PER_VALUE.search(text, 0, m.start()))
        }

    return bool(scopes(claim) - scopes(evidence_sentence))
