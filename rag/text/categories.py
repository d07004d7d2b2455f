"""What kind of thing a sentence says its subject is, for questions that ask exactly that.

"What is the profession of C. Mayer?", "What sport is Lee Seung-hoon associated with?", "What is the
genre of the film?" ask for a category, not a value: the answer is the noun phrase a definition
gives its subject ("Christa Mayer is a German operatic mezzo-soprano"). Two sources defining the
same subject as two different kinds of thing ("... is a German professional basketball player")
disagree, however the rest of each sentence is worded.

A category is compared by its own words: nationalities and other names, years and the adjectives
that say nothing of the kind ("former", "professional", "famous") are left out, and two categories
differ only when they share no word ("basketball player" and "speed skater" differ; "basketball
player" and "football player" are not told apart: a miss, never a false disagreement).
"""

from __future__ import annotations

import re

from rag.text.switches import off

_ASKS = re.compile(
    r"\bwhat\b.*\b(?:profession|occupation|job|career|genre|sport|nationality|discipline|instrument)s?\b"
    r"|\bwhat (?:does|did) .{1,60} do for a living\b",
    re.IGNORECASE,
)
_DEFINITION = re.compile(
    r"^(?P<subject>[^.;:]{2,120}?)\s+(?:is|was|are|were)\s+(?:an?|the)\s+(?P<kind>[^,.;:()\"]{2,80}?)"
    r"(?=\s+(?:who|which|that|whose|known|from|in|of|for|with|by|on|at|directed|written|based|born|and|"
    r"best|famous|noted|active|playing|specialising|specializing|starring|featuring|set|[a-z]{4,}ed)\b|\s*[,.;:()\"]|\s*$)",
)
_PARENTHESIS = re.compile(r"\([^()]*\)")
"""'(born 6 March 1988)', '(Hangul: ...; ...)': read past, as the reader does."""
_PLAIN = frozenset(
    "former retired professional famous well-known noted notable prominent renowned leading acclaimed popular "  # noqa: SIM905
    "successful award-winning best-known early modern contemporary amateur active veteran young old".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def asks_category(question: str) -> bool:
    """Whether the question asks what kind of thing its subject is (a profession, a sport, a genre)."""
    return bool(_ASKS.search(question))


def category(sentence: str, question: str) -> frozenset[str] | None:
    """The words of the kind the sentence's definition gives its subject ("Greg Boyer (born 1958) is
    an American chef known for ..." gives {"chef"}), when its subject shares a name word with the
    question; None when it defines nothing, or something else."""
    found = _kind(sentence, question)
    return found[0] if found else None


def differing_categories(a: str, b: str, question: str) -> tuple[str, str] | None:
    """Two sentences defining the question's subject as different kinds of thing (no word shared),
    as each words it; None when the question asks no category or either defines nothing."""
    if off("categories"):
        return None
    if not asks_category(question):
        return None
    kind_a, kind_b = _kind(a, question), _kind(b, question)
    if kind_a is None or kind_b is None or kind_a[0] & kind_b[0]:
        return None
    return kind_a[1], kind_b[1]


def _kind(sentence: str, question: str) -> tuple[frozenset[str], str] | None:
    """The kind's words (`category`) and the noun phrase as the sentence words it."""
    found = _DEFINITION.match(" ".join(_PARENTHESIS.sub(" ", sentence).split()))
    if found is None:
        return None
    asked = {w.lower() for w in _WORD.findall(question) if w[0].isupper()}
    subject = {w.lower() for w in _WORD.findall(found.group("subject")) if w[0].isupper()}
    if not asked & subject:
        return None
    kind = found.group("kind").strip()
    words = frozenset(w.lower() for w in _WORD.findall(kind) if not w[0].isupper() and w.lower() not in _PLAIN)
    return (words, kind) if words else None
