"""Names in text: product, plan and people names, codes and acronyms, and whether a text mentions one.

The premise gate, the reranker's name penalty, the critic's claim checks and the contradiction
check all ask these questions; the answers are cached by text (the same sentences come back for
every question about them).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rag.text.facts import STOP_WORDS
from rag.text.switches import off

_SUFFIX_WORDS = "Pro|Max|Plus|Mini|Ultra|Lite|Air|Outdoor|Indoor|Premium|Standard|Basic|Advanced|Home|XL|SE"
"""Words that finish a product code when they follow it: "NX-6 Pro" is not the "NX-6"."""
_UNITS = "(?:GB|MB|TB|KB|AM|PM|MS|HZ|GHZ|MHZ|KM|KG|MBPS|GBPS|MAH|KW|KWH|FPS|DPI|MP|GBIT|MBIT)"
"""Sizes and times written without a space ("512GB", "9AM") are not model codes."""
_CODE = re.compile(
    rf"(?<![\w-])(?:[A-Z]{{1,5}}-?[A-Z]{{0,3}}\d+[A-Za-z]*|[A-Z]+\d+[A-Z0-9-]*|\d+(?!{_UNITS}\b)[A-Z]{{2,}})\b"
    rf"(?:\+|\s(?:{_SUFFIX_WORDS})\b\+?)?"
)
_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽ"
"""Capital letters of the Latin scripts: "Kraków", "Zürich", "Łódź" and "Malmö" are names too."""
_NAME_WORD = rf"(?:[{_UPPER}][^\W_]+|\d+-[{_UPPER}][^\W_]+)(?:(?:\+[{_UPPER}\d][^\W_]*)+|\+|\b)"
_NAME = re.compile(rf"(?<![\w-]){_NAME_WORD}(?:[ -]{_NAME_WORD})*")
"""Capitalised words in a run; a count joined to a capitalised word belongs to the name
("FlexPass 10-Trip", not "FlexPass" and "Trip"), and so does a key joined by "+" ("Ctrl+K",
"Ctrl+Shift+P": one name, not "Ctrl+")."""


_NOT_PEOPLE = frozenset(
    [
        "team",
        "teams",
        "officer",
        "office",
        "department",
        "departments",
        "policy",
        "plan",
        "plans",
        "labs",
        "inc",
        "ltd",
        "llc",
        "company",
        "group",
        "product",
        "manager",
        "managers",
        "director",
        "head",
        "chief",
        "security",
        "engineering",
        "people",
        "operations",
        "sales",
        "support",
        "success",
        "customer",
        "board",
        "committee",
        "council",
        "university",
        "school",
        "government",
        "ministry",
        "agency",
        "bank",
        "church",
        "party",
        "agreement",
        "desk",
        "centre",
        "center",
        "portal",
        "page",
        "guide",
        "store",
        "programme",
        "program",
    ]
)


def people(text: str) -> set[str]:
    """Names that can be a person's: a first and a last name ("Hannah Lindqvist"), capitalised
    words without organisation or role words. A single word is a plan, a product or a company as
    often as a person ("Enterprise", "Brightloom"); an acronym ("CEO") is a role."""
    return {
        name
        for name in names(text)
        if _PERSON_NAME.fullmatch(name) and not {word.lower() for word in name.split()} & _NOT_PEOPLE
    }


_PERSON_NAME = re.compile(r"[A-Z][a-z'’-]+(?:\s+(?:[A-Z]\.|[A-Z][a-z'’-]+|van|de|von|der|da|di|le|la)){1,3}")


_OPENING_VERB = re.compile(r"\s*[A-Za-z]+\s+(?:on|in|to|into|onto|the|a|an|your|up|out|through)\b")
"""An instruction's opening verb is no name: "Click on Developer", "Log in to", "Enter a name"."""


def new_names(text: str, known: str) -> set[str]:
    """Names in `text` (its first word too, when capitalised and not a common word) absent from `known`."""
    found = names(text)
    first = re.match(rf"\s*([{_UPPER}][^\W_]+)(?=[\s,.;:!?]|$)", text)
    if first and first.group(1).lower() not in STOP_WORDS and not _OPENING_VERB.match(text):
        found.add(first.group(1))
    lowered = fold(known)
    return {n for n in found if fold(n) not in lowered}


def codes(text: str) -> set[str]:
    """Product codes and identifiers: NW-200X, SOC2, 4357 is a number, not a code."""
    if off("codes"):
        return set()
    return set(_codes(text))


@lru_cache(maxsize=8192)
def _codes(text: str) -> frozenset[str]:
    return frozenset(m.group(0) for m in _CODE.finditer(text) if not m.group(0).isdigit())


_IMPERATIVES = frozenset(
    [
        "ask",
        "tell",
        "list",
        "show",
        "give",
        "explain",
        "describe",
        "summarise",
        "summarize",
        "compare",
        "find",
        "contact",
        "email",
        "call",
        "see",
        "use",
        "check",
        "visit",
        "read",
        "open",
        "send",
        "book",
    ]
)


def names(text: str) -> set[str]:
    """Capitalised terms: plan, product and people names (a sentence's first word only as part of one)."""
    return set(_names(text))


@lru_cache(maxsize=8192)
def _names(text: str) -> frozenset[str]:
    found = set()
    for m in _NAME.finditer(text):
        start = m.start()
        preceding = text[:start].rstrip()
        if not preceding or preceding[-1] in ".!?:;\n(\"'":
            # At a sentence start a capital says nothing: "The Team plan" names Team, "Beacon Pro
            # keeps" names Beacon Pro, "Employees may" names nothing.
            words = m.group(0).split()
            if len(words) > 1:
                leading = words[0].lower() in STOP_WORDS or words[0].lower() in _IMPERATIVES
                found.add(" ".join(words[1:]) if leading else m.group(0))
            continue
        found.add(m.group(0))
    in_codes = " ".join(_codes(text))  # cached by text, so not by the `codes` switch: a code is no name either way
    return frozenset(name for name in found if name.lower() not in STOP_WORDS and name not in in_codes)


def acronyms(text: str) -> set[str]:
    """Initials of capitalised word runs, lower-cased: "Chief Executive Officer" → "ceo", and
    "Union of Soviet Socialist Republics" → "ussr" (small connecting words skipped), plus every
    shorter run inside a longer one ("New York City" also gives "nyc" when followed by more)."""
    return set(_acronyms(text))


@lru_cache(maxsize=8192)
def _acronyms(text: str) -> frozenset[str]:
    found = set()
    run = r"[A-Z][a-z]+(?:\s+(?:(?:of|and|for|the|de|du|la)\s+)?[A-Z][a-z]+){1,6}"
    for m in re.finditer(rf"\b{run}\b", text):
        initials = [w[0] for w in m.group(0).split() if w[0].isupper()]
        for end in range(2, len(initials) + 1):
            found.add("".join(initials[:end]).lower())
    return frozenset(found)


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lower-case without accents, for matching names: "Beyoncé" and "beyonce" are one name."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def mentions(haystack: str, term: str) -> bool:
    """Whether `haystack` names `term`: as written (accents, case and a plural ending aside) or
    as its acronym."""
    pattern = _mention_pattern(term)
    if pattern is None:
        return False
    if pattern.search(fold(haystack)):
        return True
    return term.isupper() and fold(term) in _acronyms(haystack)


@lru_cache(maxsize=4096)
def _mention_pattern(term: str) -> re.Pattern[str] | None:
    words = re.findall(r"[\w-]+\+?", fold(term))
    if not words:
        return None
    forms = [_form(w) for w in words]
    joined = r"[\s-]+".join(forms)
    # "Team" is not mentioned by "Team+", nor "NX-6" by "NX-6 Pro"'s code read as one
    return re.compile(rf"(?<![\w-]){joined}(?![\w+])")


def _form(word: str) -> str:
    """A word of a name as it may appear: a plural ending aside, a trailing plus sign kept."""
    if word.endswith("+"):
        return re.escape(word)
    word = _singular_word(word)
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":  # "Company", "Companies"
        return re.escape(word[:-1]) + r"(?:y|ies)"
    return re.escape(word) + r"(?:s|es)?"  # "Saturday", "Saturdays"; "Survey Key", "Survey Keys"


def _singular_word(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


_KIND_NOUNS = (
    "plan|plans|tier|tiers|model|models|product|products|edition|version|package|bundle|collector|device|"
    "service|licen[cs]e|subscription|add-on|module|feature|app|programme|program|card|account|level|band|grade"
)


def premise_terms(question: str) -> list[tuple[str, ...]]:
    """What the question presumes exists, each with the forms that count as a mention of it.

    Codes ("NW-900"), names of several words ("Beacon Ultra"; their last words alone also count,
    since a question's first word may have been read into the name), and single names used as a
    kind of thing ("the Platinum plan"). A lone capitalised word ("Europe", "London") is left to
    retrieval: it presumes nothing a document must define.
    """
    terms: list[tuple[str, ...]] = [(code,) for code in sorted(codes(question))]
    for name in sorted(names(question)):
        words = name.split()
        if len(words) > 1:
            terms.append((name, " ".join(words[1:])))
        elif re.search(rf"\b{re.escape(name)}\s+(?:{_KIND_NOUNS})\b", question, re.IGNORECASE):
            terms.append((name,))
    return terms
