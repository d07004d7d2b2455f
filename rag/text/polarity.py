"""Does a sentence answer a negated question, or the question without its "not"?

`reversed_polarity(question, sentence)`: a question negated ("Which see does *not* have a
bishop?") and a sentence that negates nothing and makes no exception ("Each see has its own
bishop.") answers the opposite question; so does one that says the negated word itself
un-negated, whatever else it negates ("What canon does not *require* ...?" against "Canon 351
*requires* ..., and those who are not bishops ...").

Yes/no questions are not checked by the callers: "Is the office open on Sundays?" is answered by
"The office is closed on Sundays."
"""

from __future__ import annotations

import re

from rag.text.claims import negated
from rag.text.facts import STOP_WORDS
from rag.text.switches import off
from rag.text.words import stem, tokens

_QUESTION_NEGATION = re.compile(r"\b(?:not|never|no|none|nothing|nobody|without)\b|n't\b", re.I)


_CONDITION = re.compile(r"\b(?:if|unless|when|whenever|whether|once|in case)\b[^,;?]*", re.I)
"""A condition's negation is not the question's: "what page size if I don't pass limit?" asks for one."""


_EXCEPTIONS = re.compile(
    r"\b(?:except(?:ion|ions|ed)?|only|lacks?|lacking|fails?|failed|unable|absent)\b|\bnon-[a-z]", re.I
)
"""What answers a negated question without a "not": an exception, a lack, a failure, a "non-" word."""


def reversed_polarity(question: str, sentence: str) -> bool:
    """A negated question ("Which see does not have a bishop?") answered by a sentence that negates
    nothing and names no exception, lack or failure ("Each see has its own bishop."). One negation
    in the main clause only: "can't survive without" is not negated, nor is a condition's "if I
    don't"."""
    if off("polarity"):
        return False
    main_clause = _CONDITION.sub(" ", re.sub(r"(?i)\bnot only\b", " ", question))
    negations = _QUESTION_NEGATION.findall(main_clause)
    asks_negated = len(negations) == 1 and negations[0].lower() in ("not", "n't", "never")  # "can't ... without": no
    if not asks_negated or _EXCEPTIONS.search(sentence):
        return False
    return not negated(sentence) or _affirms(_negated_verb(main_clause), sentence)


_NEGATED_VERB = re.compile(
    r"(?:\bnot|\bnever|n't)\s+(?:(?:be|been|have|always|usually|necessarily)\s+)?([a-z]{3,})", re.IGNORECASE
)


def _negated_verb(question: str) -> str | None:
    """The word the question negates: "does not *require*", "wasn't *opened*"."""
    found = _NEGATED_VERB.search(question)
    return found.group(1) if found else None


def _affirms(word: str | None, sentence: str) -> bool:
    """The sentence says the negated word itself, un-negated ("canon 351 *requires* that ..."),
    whatever else it negates ("... those who are not already bishops")."""
    if word is None or word.lower() in STOP_WORDS:
        return False
    words, stems = tokens(sentence)
    negated_stem = stem(word)
    for i, s in enumerate(stems):
        before = words[max(0, i - 3) : i]
        if s == negated_stem and not any(_QUESTION_NEGATION.fullmatch(t) or t.lower().endswith("n't") for t in before):
            return True
    return False
