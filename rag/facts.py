"""What a sentence states, read off its surface: values (amounts, durations, counts, dates), named
terms (product codes, plan and product names) and content words; and how to make a stored
sentence readable on its own (no list markers, no Markdown, no heading debris).

Shared by the writer (which sentences are readable), the critic (which tokens must match exactly)
and the contradiction check (which values two sources give).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_UNIT_WORDS = (
    "seconds?|minutes?|hours?|days?|weeks?|months?|years?|business days|working days|"
    "users?|hosts?|monitors?|characters?|employees?|engineers?|seats?|checks?|requests?|"
    "GB|MB|TB|KB|ms|percent|%"
)
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_VALUE = re.compile(
    rf"(?P<cur>[$£€])\s?(?P<amt>{_NUMBER})(?:\s?(?P<mult>k|m|million|billion))?"
    rf"|(?P<date>\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}\s+(?:{_MONTHS})\w*\s+\d{{4}}|\d{{1,2}}\s+(?:{_MONTHS})\b\w*|(?:{_MONTHS})\w*\s+\d{{1,2}}(?:,\s*\d{{4}})?)"
    rf"|(?P<time>\b\d{{1,2}}:\d{{2}}\b)"
    rf"|(?P<num>\b{_NUMBER})(?:[\s-]?(?:(?!business|working)[a-z]+\s)?(?P<unit>(?:{_UNIT_WORDS}))\b|(?P<pct>%))?",
    re.IGNORECASE,
)
_CODE = re.compile(r"\b(?:[A-Z]{1,5}-?\d+[A-Z]*|[A-Z]+\d+[A-Z0-9-]*|\d+[A-Z]{2,})\b")
_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:[ -][A-Z][a-zA-Z0-9]+)*\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•+]\s+|\d+[.)]\s+|[a-z][.)]\s+|>\s+)")
_MARKDOWN = re.compile(r"(\*\*|__|`|~~)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "they",
        "them",
        "their",
        "he",
        "she",
        "his",
        "her",
        "not",
        "no",
        "yes",
        "any",
        "all",
        "each",
        "every",
        "some",
        "more",
        "most",
        "than",
        "then",
        "so",
        "up",
        "out",
        "about",
        "into",
        "over",
        "under",
        "after",
        "before",
        "also",
        "only",
        "just",
        "very",
        "per",
        "however",
        "please",
        "note",
    ]
)


@dataclass(frozen=True, slots=True)
class Value:
    kind: str
    """money, date, time, percent, or a unit ("days", "users", ...), or "number"."""
    amount: str
    """Normalised: digits without thousands separators, units singular and lower-case."""
    surface: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.amount)


def values(text: str) -> list[Value]:
    """Amounts, durations, counts, dates, times and percentages, in order (cached by text)."""
    return list(_values(text))


@lru_cache(maxsize=8192)
def _values(text: str) -> tuple[Value, ...]:
    found: list[Value] = []
    for m in _VALUE.finditer(text):
        if m.group("cur"):
            amount = m.group("amt").replace(",", "")
            mult = (m.group("mult") or "").lower()
            found.append(Value(f"money{m.group('cur')}", amount + mult, m.group(0)))
        elif m.group("date"):
            found.append(Value("date", " ".join(m.group("date").lower().split()), m.group(0)))
        elif m.group("time"):
            found.append(Value("time", m.group("time"), m.group(0)))
        else:
            amount = m.group("num").replace(",", "")
            if m.group("pct"):
                found.append(Value("percent", amount, m.group(0)))
            elif m.group("unit"):
                found.append(Value(_singular(m.group("unit")), amount, m.group(0)))
            else:
                found.append(Value("number", amount, m.group(0)))
    return tuple(found)


def _singular(unit: str) -> str:
    unit = unit.lower()
    if unit in ("%", "percent"):
        return "percent"
    if unit.endswith("days") and " " in unit:
        return unit[:-1]
    return unit[:-1] if unit.endswith("s") and len(unit) > 3 else unit


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
    ]
)


def people(text: str) -> set[str]:
    """Names that can be a person's: capitalised words without organisation or role words."""
    return {
        name
        for name in names(text) | new_names(text, "")
        if not {word.lower() for word in name.split()} & _NOT_PEOPLE and not codes(name)
    }


def new_names(text: str, known: str) -> set[str]:
    """Names in `text` (its first word too, when capitalised and not a common word) absent from `known`."""
    found = names(text)
    first = re.match(r"\s*([A-Z][a-zA-Z0-9]+)(?=[\s,.;:!?]|$)", text)
    if first and first.group(1).lower() not in STOP_WORDS:
        found.add(first.group(1))
    lowered = fold(known)
    return {n for n in found if fold(n) not in lowered}


def codes(text: str) -> set[str]:
    """Product codes and identifiers: NW-200X, SOC2, 4357 is a number, not a code."""
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
    in_codes = " ".join(codes(text))
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
    words = [_singular_word(w) for w in re.findall(r"[\w-]+", fold(term))]
    if not words:
        return None
    forms = [re.escape(w[:-1]) + r"(?:y|ies)" if w.endswith("y") else re.escape(w) + r"(?:s|es)?" for w in words]
    joined = r"[\s-]+".join(forms)
    return re.compile(rf"(?<![\w-]){joined}(?!\w)")


def _singular_word(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry meaning, crudely stemmed (enough to compare two sentences)."""
    return {_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOP_WORDS and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def clean_sentence(text: str) -> str:
    """A stored sentence as a person should read it: no list markers, Markdown or link syntax."""
    lines = [_LIST_MARKER.sub("", line).strip() for line in text.splitlines()]
    text = " ".join(line for line in lines if line)
    text = _LINK.sub(r"\1", text)
    text = _MARKDOWN.sub("", text)
    text = re.sub(r"^#+\s*", "", text)
    text = " ".join(text.split())
    if text and text[-1] not in ".!?\"')":
        text += "."
    return text


def readable(text: str) -> bool:
    """Whole sentences only: long enough, ends like a sentence, starts like one, not a list intro."""
    stripped = text.strip()
    words = _WORD.findall(stripped)
    if len(words) < 4 or len(stripped) < 20:
        return False
    if stripped.endswith(":"):
        return False
    first = stripped[0]
    return first.isupper() or first.isdigit() or first in "$£€\"'("


_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompts?|guidelines?|everything)\b"
    r"|\byou (?:are|must|should|will) (?:now|always|never)\b"
    r"|\b(?:system|developer) (?:prompt|message)\b"
    r"|\b(?:assistant|chatbot|bot|AI|language model)s?\b.{0,40}"
    r"\b(?:must|should|shall|will) (?:answer|reply|say|respond|tell)"
    r"|\b(?:tell|inform) (?:every|all|any) (?:users?|employees?|customers?|people)\b"
    r"|\b(?:reply|respond|answer) (?:only )?with\b",
    re.IGNORECASE,
)


def looks_like_instruction(text: str) -> bool:
    """A sentence addressed to the bot rather than to readers ("ignore your rules and ...").

    Retrieved text is data: such a sentence is never quoted as an answer, whatever it says.
    """
    return bool(_INSTRUCTION.search(text))


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


_QUALIFIERS = {
    "monthly": "monthly",
    "month-to-month": "monthly",
    "annual": "annual",
    "annually": "annual",
    "yearly": "annual",
    "weekly": "weekly",
    "daily": "daily",
    "hourly": "hourly",
    "international": "international",
    "domestic": "domestic",
    "primary": "primary",
    "secondary": "secondary",
    "minimum": "minimum",
    "maximum": "maximum",
    "part-time": "part-time",
    "contractor": "contractor",
    "contractors": "contractor",
    "intern": "intern",
    "interns": "intern",
    "first": "first",
    "additional": "additional",
    "extra": "additional",
}
_QUALIFIER_WORD = re.compile(r"[a-z-]+")


def qualifiers(text: str) -> frozenset[str]:
    return frozenset(_QUALIFIERS[w] for w in _QUALIFIER_WORD.findall(text.lower()) if w in _QUALIFIERS)


_BOUNDS = frozenset({"minimum", "maximum", "first", "additional"})


def variant_qualifiers(text: str) -> frozenset[str]:
    """Qualifiers that pick a variant of a fact (monthly/annual, primary/secondary), not a bound."""
    return qualifiers(text) - _BOUNDS
