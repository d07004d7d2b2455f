"""What a sentence states, read off its surface: values (amounts, durations, counts, dates),
qualifiers (monthly/annual, primary/secondary) and content words; whether it reads as an
instruction to the bot; and how to make a stored sentence readable on its own (no list markers, no
Markdown, no heading debris). Names, codes and mentions are in `rag/text/names.py`.

Shared by the writer (which sentences are readable), the critic (which tokens must match exactly)
and the contradiction check (which values two sources give).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
MONTH_NAMES = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
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
    text = _ANSWER_LABEL.sub("", " ".join(text.split()))
    if text and text[-1] not in ".!?\"')":
        text += "."
    return text


_QUESTION_LABEL = re.compile(r"^(?:Q|Question)\s*[:.]\s*", re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"^(?:A|Answer)\s*:\s*", re.IGNORECASE)


def asks(text: str) -> bool:
    """A question, not a statement: an FAQ's "Q: ..." line, a question heading, any sentence ending
    in "?". Context for what follows it, never evidence of its own: its words are the reader's."""
    stripped = clean_sentence(text)
    return stripped.endswith("?") or bool(_QUESTION_LABEL.match(stripped))


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
