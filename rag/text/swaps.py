"""Does a sentence say what the question asks about, or the same thing about something else?

"What term was applied to any priest *temporarily* assigned to a church?" retrieves "The term
cardinal at one time applied to any priest *permanently* assigned ... to a church.": nearly every
word matches, the rerank score is high, and quoting it answers a question nobody asked. The
sentence is about the opposite case. So is "the *eighth* century" answered from "the *ninth*
century", "a *three*-way distinction" from "a four-way distinction", "very *high* turnout" from
"very low turnout", and "the *maximum* credit" from "the minimum credit".

`swapped(question, sentence)` looks, for each short stretch of the question the sentence does not
say, for the same two words around it in the sentence (crude stems, in any order of the rest:
"Who signs off the maximum budget?" meets "The minimum budget is signed off by ..."), one of them
more than a stop word, and for what the sentence has between them instead:

- numbers that differ ("six" and "seven", "eighth" and "ninth", "2.4 million" and "2.4 billion",
  "three-way" and "four-way"), or
- opposites: a pair of `OPPOSITES` ("high"/"low", "open"/"closed", "north"/"south",
  "temporarily"/"permanently", "most expensive"/"cheapest") or a word and its negative
  ("efficient"/"inefficient", "aspirated"/"unaspirated"), or
- names: "What *Bantu* explorer reached the mouth of the Congo?" answered by "The Portuguese
  explorer Diogo Cão reached the mouth of the Congo.", the hotel cap in Europe by the one in Asia, or
- two names trading places: "the *South African* government ... to Congolese farmers" answered by
  "the Congolese government ... to South African farmers" (the one stretch the question's word may
  be elsewhere in the sentence for).

An opposite counts wherever it stands too, without the two words around it, when the question's
word is nowhere in the sentence and the sentence's opposite is nowhere in the question: "What
election did Sassou *lose*?" against "Sassou also *won* the following presidential election"
(irregular forms read as their verb: "won" is "win"). Only the listed opposites: a negative prefix
away from its place is often a reworded clause ("all agree" against "might disagree about").

So does a year the question gives when the sentence gives another and not it ("a deal in 1948"
against "in 1950 ... made a deal").

The question's word must not be in the sentence beside the same words: "the ninth century, not
the eighth" is about both. Said elsewhere it is another use of the word ("becoming *more*
prevalent, and stability is *less* of an issue" still swaps "less prevalent"), except a name.
A stretch holding the question word ("who", "how many") is the answer's slot, not a swap.

Yes/no questions are not checked by the callers: "Is the office open on Sundays?" is answered by
"The office is closed on Sundays."

Whether a negated question is answered by an un-negated sentence is rag/text/polarity.py; two
sources' copies of one sentence with another answer filled in, rag/text/copies.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.text.facts import STOP_WORDS, is_year
from rag.text.switches import off
from rag.text.words import amount, listed_opposite, named, opposite, same_name, stem, stems, tokens

_QUESTION_WORDS = frozenset(["what", "which", "who", "whom", "whose", "when", "where", "why", "how"])


_MAX_STRETCH = 3
"""Longer differing stretches are rewordings, not one word swapped for another."""


@dataclass(frozen=True, slots=True)
class Swap:
    """Where the sentence says something else than the question asks about."""

    kind: str
    """"number", "opposite", "name" or "role" (two names trading places)."""
    asked: str
    """The question's words ("temporarily")."""
    stated: str
    """The sentence's words in their place ("permanently")."""

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "asked": self.asked, "stated": self.stated}


def swapped(question: str, sentence: str) -> Swap | None:
    """The shortest stretch of the question the sentence swaps for a different number or an
    opposite, between the same two words on either side (see the module docstring), or None."""
    if off("swaps"):
        return None
    (asked, ours_stems), (stated, their_stems) = tokens(question), tokens(sentence)
    said = set(their_stems)
    found: list[tuple[int, Swap]] = []
    after: dict[str, list[int]] = {}  # a word's stem -> where the sentence goes on after it
    for j, said_stem in enumerate(their_stems[:-1]):
        after.setdefault(said_stem, []).append(j + 1)
    for i in range(len(asked)):
        for k in range(1, _MAX_STRETCH + 1):
            if i + k > len(asked):
                break
            ours = asked[i : i + k]
            if any(t.lower() in _QUESTION_WORDS for t in ours):
                break  # the answer's slot: "who" is replaced by the name that answers it
            # the sentence says the question's word beside the same words: it speaks of both ("the
            # ninth century, not the eighth"), unless two names trade places ("the South African
            # government ... to Congolese farmers"); said elsewhere, it may be another use of the
            # word ("less of an issue" is no "less prevalent"), but a name said elsewhere is there
            content = [n for n in range(i, i + k) if asked[n].lower() not in STOP_WORDS]
            beside = any(_beside(ours_stems, i, k, their_stems, ours_stems[n], said) for n in content)
            elsewhere = any(ours_stems[n] in said for n in content)
            for theirs in _between(ours_stems, i, k, their_stems, stated, after):
                kind = _traded(ours, theirs, ours_stems, their_stems) if elsewhere else None
                if kind is None and not beside:
                    kind = _kind(ours, theirs)
                    kind = None if elsewhere and kind == "name" else kind
                if kind is not None:
                    found.append((k + len(theirs), Swap(kind, " ".join(ours), " ".join(theirs))))
            if beside:
                break
    if found:
        return min(found, key=lambda f: f[0])[1]  # "eighth", not "as the eighth"
    return (
        _opposite_anywhere(asked, stated, said, set(ours_stems))
        or _another_year(asked, stated)
        or _another_count(asked, ours_stems, stated, their_stems)
    )


def _beside(ours: Sequence[str], i: int, k: int, theirs: Sequence[str], stem: str, said: set[str]) -> bool:
    """The sentence says `stem` (a word of the stretch `ours[i:i+k]`) next to a word the stretch has
    beside it in the question, or the stretch has no neighbour of more than a stop word."""
    if stem not in said:
        return False
    neighbours = {w for w in (ours[i - 1] if i > 0 else "", ours[i + k] if i + k < len(ours) else "") if w}
    if not neighbours - STOP_WORDS:
        return True
    at = [j for j, s in enumerate(theirs) if s == stem]
    return any({theirs[j - 1] if j > 0 else "", theirs[j + 1] if j + 1 < len(theirs) else ""} & neighbours for j in at)


def _number_start(tokens: Sequence[str], end: int) -> int:
    """Where the number ending before `end` starts: "four hundred", not "hundred" (`end` when none)."""
    start = end
    while start > 0 and end - start < _MAX_STRETCH and amount(tokens[start - 1 : start]) is not None:
        start -= 1
    return start


def _another_count(
    asked: Sequence[str], ours: Sequence[str], stated: Sequence[str], theirs: Sequence[str]
) -> Swap | None:
    """A count of something the question gives and the sentence gives another count of, before the
    same word, more than a stop word: "Which *two* short-wave stations ...?" against "about *one*
    short-wave and ten FM stations"."""
    for i in range(len(asked) - 1):
        first = _number_start(asked, i + 1)
        number = amount(asked[first : i + 1]) if first <= i else None
        right = ours[i + 1]
        if number is None or right in STOP_WORDS or any(t in theirs for t in ours[first : i + 1]):
            continue
        for j in range(1, len(theirs)):
            start = _number_start(stated, j)
            other = amount(stated[start:j]) if theirs[j] == right and start < j else None
            if other is not None and other != number:
                return Swap("number", asked[i], " ".join(stated[start:j]))
    return None


def _another_year(asked: Sequence[str], stated: Sequence[str]) -> Swap | None:
    """A year the question gives and the sentence does not, while the sentence gives another:
    "What deal did Wasserman make in 1948?" against "in 1950 MCA agent Lew Wasserman made a deal"."""
    ours = {t for t in asked if is_year(t)}
    theirs = [t for t in stated if is_year(t)]
    if not ours or ours & set(theirs) or not theirs:
        return None
    return Swap("number", sorted(ours)[0], theirs[0])


def _opposite_anywhere(asked: Sequence[str], stated: Sequence[str], said: set[str], ours: set[str]) -> Swap | None:
    """A word of the question the sentence says nowhere, whose opposite the sentence says and the
    question does not, wherever each stands: "What election did Sassou *lose*?" against "Sassou
    also *won* the following presidential election"."""
    for word in asked:
        low = word.lower()
        if low in STOP_WORDS or stem(word) in said:
            continue
        for other in stated:
            if stem(other) not in ours and listed_opposite(low, other.lower()):
                return Swap("opposite", word, other)
    return None


def _between(
    ours: Sequence[str], i: int, k: int, theirs: Sequence[str], stated: Sequence[str], after: dict[str, list[int]]
) -> list[Sequence[str]]:
    """What the sentence has where the question has its stretch `ours[i:i+k]`: between the same
    two words, one of them more than a stop word; at the question's end ("... opened to men?"),
    after the same two words, one of them more than a stop word; at its start ("Late papermakers
    added ...?"), before the same word, more than a stop word."""
    if i == 0:
        right = ours[k] if k < len(ours) else ""
        if not right or right in STOP_WORDS:
            return []
        return [stated[j - m : j] for j, said in enumerate(theirs) if said == right for m in range(1, min(j, k) + 1)]
    left = ours[i - 1]
    if i + k < len(ours):
        right = ours[i + k]
        if left in STOP_WORDS and right in STOP_WORDS:
            return []  # "the eighth century" is anchored by "century", "of the" anchors nothing
        return [
            stated[j : j + m]
            for j in after.get(left, ())
            for m in range(1, _MAX_STRETCH + 1)
            if j + m < len(theirs) and theirs[j + m] == right
        ]
    if i < 2 or (left in STOP_WORDS and ours[i - 2] in STOP_WORDS):
        return []
    return [stated[j : j + k] for j in after.get(left, ()) if j >= 2 and theirs[j - 2] == ours[i - 2]]


def _kind(ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    a, b = amount(ours), amount(theirs)
    if a is not None and b is not None and a != b:
        return "number"
    if any(opposite(x.lower(), y.lower()) for x in ours for y in theirs):
        return "opposite"
    if named(ours) and named(theirs) and not same_name(ours, theirs):
        return "name"
    return None


def _traded(ours: Sequence[str], theirs: Sequence[str], question: Sequence[str], sentence: Sequence[str]) -> str | None:
    """ "role" when two names trade places: the question names A before B, the sentence B before A,
    and has B where the question has A ("the South African government ... to Congolese farmers"
    against "the Congolese government ... to South African farmers")."""
    if not (named(ours) and named(theirs)) or same_name(ours, theirs):
        return None
    a, b = stems(ours)[0], stems(theirs)[0]
    if a not in question or b not in question or a not in sentence or b not in sentence:
        return None
    before_in_question = question.index(a) < question.index(b)
    before_in_sentence = sentence.index(a) < sentence.index(b)
    return "role" if before_in_question != before_in_sentence else None
