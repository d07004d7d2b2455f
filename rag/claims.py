"""Sentence-level checks of a claim against the evidence sentence that should carry it.

`missing_facts` in the critic asks whether each value occurs anywhere in the cited evidence; that
lets a value move to another subject ("16 weeks" of the primary carer claimed for the secondary
carer) and lets a "not" appear or vanish. These checks look at the sentences themselves:

- attribution: each value of the claim must be stated, in some evidence sentence, for the same
  subject: that sentence names at least one of the claim's names (when it has any), carries the
  variant qualifiers the claim names (primary/secondary, monthly/annual, ...), and is not about a sibling
  whose name extends the claim's ("Beacon Pro" when the claim says "Beacon");
- polarity: the claim and its closest evidence sentence are both negated or both not;
- scope: a claim that says "all", "every", "any" or "always" needs evidence that says so too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.facts import Value, codes, mentions, new_names, values, variant_qualifiers

_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|cannot|without)\b|n't\b", re.IGNORECASE)
_UNIVERSAL = re.compile(r"\b(?:all|every|any|each|always|everyone|everybody|everything|whole)\b", re.IGNORECASE)


def sibling_names(text: str, asked: set[str], question: str) -> set[str]:
    """Names in `text` that extend a name of `question` without being in it: "Beacon Pro" when
    the question (or claim) said "Beacon" — a sibling product, plan or variant."""
    asked_words = {word.lower() for name in asked for word in name.split()}
    return {
        name
        for name in new_names(text, question)
        if len(name.split()) > 1 and asked_words & {word.lower() for word in name.split()}
    }


def _holds(value: Value, sentence: str) -> bool:
    stated = values(sentence)
    return value.key in {v.key for v in stated} or (
        value.kind == "number" and value.amount in {v.amount for v in stated}
    )


def same_subject(claim: str, evidence_sentence: str) -> bool:
    """The evidence sentence is about what the claim is about: one of its names (its first word
    counts: "Beacon keeps ..."), no sibling of them, and every variant the claim names."""
    found = new_names(claim, "") | codes(claim)
    claimed = {n for n in found if not any(n != other and n in other.split() for other in found)}
    if claimed and not any(mentions(evidence_sentence, name) for name in claimed):
        return False
    if sibling_names(evidence_sentence, claimed, claim):
        return False
    return variant_qualifiers(claim) <= variant_qualifiers(evidence_sentence)


def misattributed(claim: str, evidence_sentences: Sequence[str]) -> list[str]:
    """Values of the claim stated in the evidence only for another subject or variant."""
    wrong = []
    for value in values(claim):
        holders = [s for s in evidence_sentences if _holds(value, s)]
        if holders and not any(same_subject(claim, s) for s in holders):
            wrong.append(value.surface)
    return wrong


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def wider_scope(claim: str, evidence_sentence: str) -> bool:
    return bool(_UNIVERSAL.search(claim)) and not _UNIVERSAL.search(evidence_sentence)
