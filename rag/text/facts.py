"""What a sentence states, read off its surface: values (amounts, durations, counts, dates),
qualifiers (monthly/annual, primary/secondary) and content words; and how to make a stored
sentence readable on its own (no list markers, no Markdown, no heading debris). Names, codes and
mentions are in `rag/text/names.py`; whether a sentence may be quoted at all (a question, a
signpost, page furniture, an instruction to the bot) is in `rag/text/quotable.py`.

Shared by the writer, the critic (which tokens must match exactly) and the contradiction check
(which values two sources give).
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
    "seconds?|minutes?|hours?|days?|weeks?|months?|years?|business days|working days|business hours|working hours|"
    "users?|hosts?|monitors?|characters?|employees?|engineers?|seats?|checks?|requests?|"
    "GB|MB|TB|KB|ms|percent|%"
)
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty-five": 45,
    "fifty": 50,
    "sixty": 60,
    "ninety": 90,
    "hundred": 100,
}
"""Number words read as values only before a unit ("two weeks", "ten seconds"): "one of the ..." is none."""
_WORDS = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
CURRENCY_CODES = {"EUR": "€", "USD": "$", "GBP": "£", "AUD": "A$", "CAD": "C$", "NZD": "NZ$", "CHF": "CHF"}
"""ISO currency codes and their signs: "49 EUR" is "€49"; "EUR" is a unit, not a name."""
_CODES = "|".join(CURRENCY_CODES)
_STREETS = (
    "Street|St|Road|Rd|Avenue|Ave|Lane|Way|Drive|Boulevard|Blvd|Parkway|Place|Square|Court|Close|Crescent"
    "|Terrace|Row|Quay|Wharf|Strasse|Straße|Straat"
)
_VALUE = re.compile(
    rf"(?P<street>(?-i:\b\d{{1,5}}[A-Z]?,?\s+(?:[A-Z][\w'-]+\s+){{1,3}}(?:{_STREETS})\b))"
    rf"|(?P<ip>\b\d{{1,3}}(?:\.\d{{1,3}}){{3}}\b)"
    rf"|(?P<version>\bv\d+(?:\.\d+)+(?:-[a-z]+)?\b|\b\d+\.\d+\.\d+\b)"
    rf"|(?P<pre>\b(?:A|C|NZ|US))?(?P<cur>[$£€])\s?(?P<amt>{_NUMBER})(?:\s?(?P<mult>million|billion|bn|k|m|b)\b)?"
    rf"|(?P<code>\b(?:{_CODES}))\s?(?P<camt>{_NUMBER})\b"
    rf"|(?P<date>\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}\s+(?:{_MONTHS})\w*\s+\d{{4}}|\d{{1,2}}\s+(?:{_MONTHS})\b\w*|(?:{_MONTHS})\w*\s+\d{{1,2}}(?!\d)(?:,\s*\d{{4}})?)"
    rf"|(?P<time>\b\d{{1,2}}:\d{{2}}\b)"
    rf"|(?P<word>\b(?:{_WORDS})(?:-(?:{_WORDS}))?(?:\s+(?:hundred|thousand))?)[\s-]"
    rf"(?:(?!business|working)[a-z]+\s)?(?P<wunit>(?:{_UNIT_WORDS}))\b"
    rf"|(?P<num>\b{_NUMBER})(?:\s?(?P<after>{_CODES})\b|[\s-]?(?:(?!business|working)[a-z]+\s)?(?P<unit>(?:{_UNIT_WORDS}))\b|(?P<pct>%))?",
    re.IGNORECASE,
)
_NOT_A_VALUE = re.compile(r"\d[xX]{2}\b")
"""A class of status codes ("5xx errors") counts nothing."""
_SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)+\s+[A-Z]")


def _bare(m: re.Match[str]) -> bool:
    """A number written without a unit, a percent sign or a currency."""
    return bool(m.group("num")) and not (m.group("unit") or m.group("pct") or m.group("after"))


def _section_number(m: re.Match[str]) -> bool:
    """A section's number opening its sentence ("3.5 Cloud services for cameras ...") is no amount;
    "2.5 GB of storage" is one."""
    return _bare(m) and bool(_SECTION_NUMBER.match(m.string))


_NUMBERED = re.compile(
    r"\b(?:class|platform|route|gate|terminal|track|line|bay|stand|car|coach|room|level|floor|building|block"
    r"|unit|section|chapter|article|clause|rule|phase|stage|step|type|model|series|zone|tier|exit|door|pier"
    r"|highway|interstate|channel|no\.|number|#)\s*$",
    re.IGNORECASE,
)
"""Nouns that a number names rather than counts: "Class 48", "Platform 1", "car 2", "Route 97"."""


def _numbered(m: re.Match[str]) -> bool:
    """A number that names: after a noun it numbers ("Platform 1"), or inside a name ("FlexPass 10-Trip")."""
    if not _bare(m):
        return False
    in_name = re.match(r"-[A-Z]", m.string[m.end() : m.end() + 2]) is not None
    return in_name or _NUMBERED.search(m.string, max(0, m.start() - 12), m.start()) is not None


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•+]\s+|\d+[.)]\s+|[a-z][.)]\s+|>\s+)")
_MARKDOWN = re.compile(r"(\*\*|__|`|~~)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")

STOP_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its this "  # noqa: SIM905
    "that these those there here what which who whom whose when where why how do does did can could will "
    "would should may might must shall i me my we our you your they them their he she his her not no yes "
    "any all each every some more most than then so up out about into over under after before also only "
    "just very per however please note "
    "anyone someone anybody somebody everyone everybody anything something everything whoever whatever".split()
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


_NETWORK = re.compile(
    r"https?://[^\s<>()]+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
    r"|\b(?:[a-z0-9-]+\.){2,}[a-z]{2,}\b|\b[a-z0-9-]+\.(?:com|net|org|io|dev|app|co|eu|invalid|example|local)\b",
    re.IGNORECASE,
)
"""A URL, an email address or a host name ("us.api.example.com"); IP addresses are `values`."""


def network_addresses(text: str) -> list[str]:
    """The URLs, email addresses, host names and IP addresses a text gives, as written."""
    found = [m.group(0).rstrip(".,;:") for m in _NETWORK.finditer(text)]
    ips = [v.surface for v in values(text) if v.kind == "address" and re.fullmatch(r"[\d.]+", v.amount)]
    return found + ips


_MONTH_NUMBERS = {name: n for n, names in enumerate(_MONTHS.split("|")[:12], 1) for name in (names, names[:3])}
_MONTH_NUMBERS["sept"] = 9
_DAY_MONTH = re.compile(r"(?P<d>\d{1,2})\s+(?P<m>[a-z]+)(?:\s+(?P<y>\d{4}))?")
_MONTH_DAY = re.compile(r"(?P<m>[a-z]+)\s+(?P<d>\d{1,2})(?:,\s*(?P<y>\d{4}))?")


def _date_key(written: str) -> str:
    """A date as one key however it is written: "30 September 2026", "September 30, 2026" and
    "2026-09-30" are all "2026-09-30"; without a year, "09-30". Unreadable: its words, lower-cased."""
    text = " ".join(written.lower().split())
    m = _DAY_MONTH.fullmatch(text) or _MONTH_DAY.fullmatch(text)
    month = (_MONTH_NUMBERS.get(m["m"]) or _MONTH_NUMBERS.get(m["m"][:3])) if m else None
    if m is None or month is None or not 1 <= int(m["d"]) <= 31:
        return text
    day = f"{month:02d}-{int(m['d']):02d}"
    return f"{m['y']}-{day}" if m["y"] else day


def values(text: str) -> list[Value]:
    """Amounts, durations, counts, dates, times and percentages, in order (cached by text)."""
    return list(_values(text))


@lru_cache(maxsize=8192)
def _values(text: str) -> tuple[Value, ...]:
    found: list[Value] = []
    for m in _VALUE.finditer(text):
        if _NOT_A_VALUE.match(text, m.start()) or (m.start() == 0 and _section_number(m)) or _numbered(m):
            continue
        if m.group("street"):  # the 14 of "14 Wharf Street" is no amount
            found.append(Value("address", " ".join(m.group("street").split()), m.group(0)))
        elif m.group("ip"):
            found.append(Value("address", m.group("ip"), m.group(0)))
        elif m.group("version"):
            found.append(Value("version", m.group("version").lower().lstrip("v"), m.group(0)))
        elif m.group("cur"):
            amount = m.group("amt").replace(",", "")
            mult = (m.group("mult") or "").lower()
            mult = {"million": "m", "billion": "b", "bn": "b"}.get(mult, mult)
            currency = (m.group("pre") or "").upper().replace("US", "") + m.group("cur")
            found.append(Value(f"money{currency}", amount + mult, m.group(0)))
        elif m.group("code"):
            currency = CURRENCY_CODES[m.group("code").upper()]
            found.append(Value(f"money{currency}", m.group("camt").replace(",", ""), m.group(0)))
        elif m.group("date"):
            found.append(Value("date", _date_key(m.group("date")), m.group(0)))
        elif m.group("time"):
            found.append(Value("time", m.group("time"), m.group(0)))
        elif m.group("word"):
            found.append(_measured(_in_words(m.group("word")), m.group("wunit"), m.group(0)))
        else:
            amount = m.group("num").replace(",", "")
            if m.group("after"):
                currency = CURRENCY_CODES[m.group("after").upper()]
                found.append(Value(f"money{currency}", amount, m.group(0)))
            elif m.group("pct"):
                found.append(Value("percent", amount, m.group(0)))
            elif m.group("unit"):
                found.append(_measured(amount, m.group("unit"), m.group(0)))
            else:
                found.append(Value("number", amount, m.group(0)))
    return tuple(found)


def _in_words(words: str) -> str:
    """ "twenty-five" → "25", "two hundred" → "200"."""
    total = 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word in ("hundred", "thousand"):
            total = max(total, 1) * (100 if word == "hundred" else 1000)
        else:
            total += NUMBER_WORDS[word]
    return str(total)


def _measured(amount: str, unit: str, surface: str) -> Value:
    """A number with its unit; working days and hours are business days and hours."""
    return Value(_singular(unit).replace("working", "business"), amount, surface)


DAYS_IN = {"day": 1.0, "week": 7.0, "month": 365.25 / 12, "year": 365.25}
"""Durations in days, for comparing "two weeks" with "14 days" and "30 days" with "one month"."""


_MULTIPLIERS = {"k": 1e3, "m": 1e6, "b": 1e9}


def _number(amount: str) -> float | None:
    """ "20.00" → 20.0, "5k" → 5000.0; None for what is not a number (a date, a version)."""
    multiplier = _MULTIPLIERS.get(amount[-1:].lower(), 1.0) if amount else 1.0
    digits = amount[:-1] if multiplier != 1.0 else amount
    try:
        return float(digits) * multiplier
    except ValueError:
        return None


def numbers(text: str) -> list[float]:
    """Every number written in digits in `text` ("$1,200.50" -> 1200.5), in order."""
    return [float(n.replace(",", "")) for n in re.findall(_NUMBER, text)]


_YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")


def is_year(token: str) -> bool:
    """A year written alone: "1974", "2025" (not "450" nor "3000")."""
    return _YEAR.fullmatch(token) is not None


def same_dimension(a: Value, b: Value) -> bool:
    """Comparable values: the same kind, or two durations counted in days, weeks, months or years."""
    return a.kind == b.kind or (a.kind in DAYS_IN and b.kind in DAYS_IN)


def same_amount(a: Value, b: Value) -> bool:
    """The same amount, durations within 3% of each other ("30 days" is "one month")."""
    if a.kind == b.kind:
        x, y = _number(a.amount), _number(b.amount)
        return a.amount == b.amount if x is None or y is None else abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0)
    if a.kind in DAYS_IN and b.kind in DAYS_IN:
        try:
            x, y = float(a.amount) * DAYS_IN[a.kind], float(b.amount) * DAYS_IN[b.kind]
        except ValueError:
            return False
        return abs(x - y) <= 0.03 * max(x, y)
    return False


def _singular(unit: str) -> str:
    unit = unit.lower()
    if unit in ("%", "percent"):
        return "percent"
    if unit.endswith(("days", "hours")) and " " in unit:
        return unit[:-1]
    return unit[:-1] if unit.endswith("s") and len(unit) > 3 else unit


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry meaning, crudely stemmed (enough to compare two sentences)."""
    return {_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOP_WORDS and len(w) > 1}


_ABBREVIATED = {"min": "minute", "mins": "minute", "sec": "second", "secs": "second", "hr": "hour", "hrs": "hour"}
_ABBREVIATED |= {"wk": "week", "wks": "week", "yr": "year", "yrs": "year"}
"""Units as tables abbreviate them ("200 requests/min"): the same word as the one written out."""


def _stem(word: str) -> str:
    word = _ABBREVIATED.get(word, word)
    if len(word) > 4 and word.endswith(("ies", "ied")):
        return word[:-3] + "y"  # "policies" and "retried" are "policy" and "retry"
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    else:
        if word.endswith("ed") and len(word) >= 4:
            word = word[:-1]  # "died" is "die", "used" is "use"
    return word[:-1] if word.endswith("e") and len(word) > 3 else word  # "closed" and "close" are "clos"


@lru_cache(maxsize=16384)
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


_ANSWER_LABEL = re.compile(r"^(?:A|Answer)\s*:\s*", re.IGNORECASE)


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


_CELL = re.compile(r"^\s*([^:;]{1,80}):\s+(.+?)\s*$")
_CLAUSE_JOIN = re.compile(r",\s+(?:or|and|but|while|whereas)\s+|;\s+|\s+(?:whereas|while)\s+")


def clauses(text: str) -> list[str]:
    """The parts of a sentence that each state one thing. A table row as Candor stores it ("Plan:
    Team+; Monthly billing: $24; Annual billing: $20") gives one clause per cell, each led by the
    row's first cell ("Plan: Team+ - Monthly billing: $24"): a cell is read with its row and header.
    Prose is cut where a second statement is joined on (", or", ", and", ", but", "; ", "whereas")."""
    cells = [c.strip() for c in text.strip().rstrip(".").split(";")]
    if len(cells) >= 3 and sum(bool(_CELL.match(c)) for c in cells[1:]) >= len(cells[1:]) - 1:
        key = cells[0]
        return [f"{key} - {cell}" for cell in cells[1:] if cell]
    return [c.strip() for c in _CLAUSE_JOIN.split(text) if c and c.strip()]
