"""When a document took effect: dates from its front matter and from what its text says.

Ingest stamps every document with a date so answers can prefer the current version of a
policy. The date comes, most trusted first, from front matter (`parse_date_value`), from the
text itself (`find_effective_date`) or from the file's modification time; `DateSource` names
which one was used.

`find_effective_date` reads the first 3,000 characters and tries three tiers, best first:

1. a date after "effective": "Effective 1 January 2026", "Effective date: 2026-01-01",
   "effective from 1st March 2026", "comes into effect on ...", "Valid from 1 January 2023",
   "applies from ...", "in force from ...";
2. a date after another label: "last updated", "updated", "last modified", "revised",
   "reviewed", "published", "posted" (a blog's byline), "issued", "dated", "as of", "date:";
3. a dateline: one of the first ten non-blank lines holding nothing but a date, such as
   "March 2026" under the title, or a place and a date ("Corvenna, 14 June 2022", a press
   release's dateline).

Within a tier the first valid date wins; impossible dates (31 February) are skipped and the
search goes on. A month without a day means the first of that month; a year alone, a version
number or a price is never a date. "Effective immediately" states no date.

Numeric dates: year-first forms (2026-01-01, 2026/01/01, 2026-03) are always read. Day/month
forms are read only when unambiguous: one part above 12 (25/03/2026 and 03/25/2026 are both
25 March 2026) or both parts equal (03/03/2026). 03/01/2026 may be 3 January or 1 March, so it
is skipped rather than guessed.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Literal

DateSource = Literal["front_matter", "text", "file_time"]

SEARCH_WINDOW = 3000
"""How many leading characters of a document `find_effective_date` reads."""
DATELINE_LINES = 10
"""How many leading non-blank lines may hold a bare dateline."""

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_YEAR_DIGITS = 4
_MAX_MONTH = 12
_DAY = r"[0-9]{1,2}(?:st|nd|rd|th)?"
_YEAR = r"[0-9]{4}"
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\b\.?,?\s+)?"
_DATE = (
    _WEEKDAY
    + "(?:"
    + "|".join(
        (
            rf"{_YEAR}(?P<ysep>[-/.])[0-9]{{1,2}}(?P=ysep)[0-9]{{1,2}}",  # 2026-01-01
            rf"{_YEAR}-[0-9]{{2}}",  # 2026-03
            rf"[0-9]{{1,2}}(?P<dsep>[-/.])[0-9]{{1,2}}(?P=dsep){_YEAR}",  # 25/03/2026
            rf"{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}",  # 1st (of) March, 2026
            rf"{_MONTH}\s+{_DAY},?\s+{_YEAR}",  # March 1st, 2026
            rf"{_MONTH},?\s+{_YEAR}",  # March 2026
        )
    )
    + r")(?![0-9]|[-/.][0-9])"
)

# Between a label and its date: emphasis, table bars, a colon or dash, a connecting word.
_SEP = (
    r"[\s*_|]*(?:[:\-\u2013\u2014][\s*_|]*)?"
    r"(?:(?:on|from|as\s+of|as\s+from|since|starting(?:\s+on|\s+from)?|beginning(?:\s+on)?)"
    r"\b[\s:*_]*)?"
)
_EFFECTIVE_LABEL = (
    r"\b(?:effective(?:\s+date)?|(?:in|into|takes?)\s+effect"
    r"|(?:valid|applies|applicable|in\s+force)(?=\s+(?:from|as\s+of|as\s+from)\b))"
)
_OTHER_LABEL = (
    r"\b(?:(?:last\s+)?(?:updated?|modified|revised|reviewed)(?:\s+date)?"
    r"|published|posted|issued|dated|as\s+of|date(?=\s*[:\-\u2013\u2014|*]))"
)
_FLAGS = re.IGNORECASE | re.ASCII

_EFFECTIVE_RE = re.compile(_EFFECTIVE_LABEL + _SEP + f"(?P<date>{_DATE})", _FLAGS)
_LABELLED_RE = re.compile(_OTHER_LABEL + _SEP + f"(?P<date>{_DATE})", _FLAGS)
_DATELINE_RE = re.compile(r"[\s#*_>()\[\]|.,\-\u2013\u2014]*" + f"(?P<date>{_DATE})" + r"[\s*_()\[\]|.]*", _FLAGS)
_PLACE_DATELINE_RE = re.compile(
    r"(?-i:[A-Z])[A-Za-z.' -]{1,40},\s+" + f"(?P<date>{_DATE})" + r"(?:\s*[\u2013\u2014-]\s.*)?\s*", _FLAGS
)
"""A press release's dateline: the place, then the date ("Corvenna, 14 June 2022 – VRT today ...")."""
_VALUE_RE = re.compile(f"(?P<date>{_DATE})", _FLAGS)
_ISO_DATETIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ]", re.ASCII)
_SPACES_RE = re.compile(r"[^\S\r\n]")  # any Unicode space but a line break


def parse_date_value(value: object) -> date | None:
    """Parse a front-matter value into a date, or None if it is not one (never raises).

    Accepts date and datetime objects, and strings in any form `find_effective_date` reads
    ("2026-01-01", "1 March 2026", "March 2026", "2026-03") plus ISO datetimes
    ("2026-01-01T10:00:00Z"). Numbers are not dates: 2026 is a year, 1767225600 is ambiguous.
    """
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    text = _SPACES_RE.sub(" ", value).strip()
    match = _VALUE_RE.fullmatch(text)
    if match is not None:
        return _to_date(match["date"])
    if _ISO_DATETIME_RE.match(text):
        try:
            return datetime.fromisoformat(text).date()
        except ValueError:
            return None
    return None


def find_effective_date(text: str) -> date | None:
    """The effective date a document states about itself near its top, or None.

    Labelled dates beat a bare dateline, "effective" beats every other label, and within a
    tier the first valid date wins (see the module docstring for the forms read).
    """
    head = _SPACES_RE.sub(" ", text[:SEARCH_WINDOW])
    for pattern in (_EFFECTIVE_RE, _LABELLED_RE):
        for match in pattern.finditer(head):
            found = _to_date(match["date"])
            if found is not None:
                return found
    lines = [line for line in head.splitlines() if line.strip()]
    for line in lines[:DATELINE_LINES]:
        dateline = _DATELINE_RE.fullmatch(line) or _PLACE_DATELINE_RE.fullmatch(line.strip())
        if dateline is not None:
            found = _to_date(dateline["date"])
            if found is not None:
                return found
    return None


def _to_date(matched: str) -> date | None:
    """Turn text already matched by `_DATE` into a date; None if impossible or ambiguous."""
    digits = re.findall(r"[0-9]+", matched)
    numbers = [int(part) for part in digits]
    words = re.findall(r"[a-z]+", matched.lower())
    named_month = next((_MONTHS[word[:3]] for word in words if word[:3] in _MONTHS), None)
    if named_month is not None and numbers:  # 1 March 2026, March 1, 2026, March 2026
        year, month = numbers[-1], named_month
        day = numbers[0] if len(numbers) > 1 else 1
    elif len(digits) > 1 and len(digits[0]) == _YEAR_DIGITS:  # 2026-01-01, 2026-03
        year, month = numbers[0], numbers[1]
        day = numbers[2] if len(numbers) > 2 else 1
    elif len(numbers) == 3:  # 25/03/2026 or 03/25/2026: only if the order is evident
        first, second, year = numbers
        if first == second or second > _MAX_MONTH:
            month, day = first, second
        elif first > _MAX_MONTH:
            day, month = first, second
        else:
            return None
    else:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None
