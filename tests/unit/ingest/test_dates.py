"""Dates from front matter and from what a document says about itself."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.ingest.dates import find_effective_date, parse_date_value

MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
ABBREVIATIONS = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sept", "Oct", "Nov", "Dec",
]  # fmt: skip
FOUR_DIGIT_YEARS = st.dates(min_value=date(1000, 1, 1))
PARAGRAPH = (
    "Our support team answers questions about billing, refunds and accounts. "
    "The company was founded in March 2019 and has offices in three countries. "
)


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "effective" labels
        ("Effective 1 January 2026", date(2026, 1, 1)),
        ("Effective: January 1, 2026", date(2026, 1, 1)),
        ("Effective date: 2026-01-01", date(2026, 1, 1)),
        ("effective from 1st March 2026", date(2026, 3, 1)),
        ("EFFECTIVE AS OF 25/03/2026", date(2026, 3, 25)),
        ("Effective as of 03/25/2026", date(2026, 3, 25)),
        ("Effective on 03/03/2026", date(2026, 3, 3)),
        ("Effective 23rd of September, 2025", date(2025, 9, 23)),
        ("**Effective:** Sept. 2, 2025", date(2025, 9, 2)),
        ("| Effective date | 2026/02/15 |", date(2026, 2, 15)),
        ("These terms come into effect on 1 April 2026.", date(2026, 4, 1)),
        ("Effective from: Monday, 2 March 2026", date(2026, 3, 2)),
        ("Effective\u00a01\u00a0June\u00a02026", date(2026, 6, 1)),
        ("Effective 2026-03", date(2026, 3, 1)),
        # other labels
        ("Last updated: 2025-11-04", date(2025, 11, 4)),
        ("Last updated on 4 November 2025", date(2025, 11, 4)),
        ("Last modified: Nov 4, 2025", date(2025, 11, 4)),
        ("Updated 2025-11-04", date(2025, 11, 4)),
        ("Refund policy (Updated February 2024)", date(2024, 2, 1)),
        ("Revised: March 2026", date(2026, 3, 1)),
        ("Date: 2026-02-15", date(2026, 2, 15)),
        ("Published 12 Jan 2026", date(2026, 1, 12)),
        ("By Jonas Verhoef, Product Marketing &middot; Posted 2 October 2024", date(2024, 10, 2)),
        ("Posted on March 3, 2025 by admin", date(2025, 3, 3)),
        ("As of March 2026, refunds take five days.", date(2026, 3, 1)),
        ("last update - 2nd Feb 2026", date(2026, 2, 2)),
        ("_Last reviewed: Tue, 4 Nov. 2025_", date(2025, 11, 4)),
        ("Issued: 2025-12-01T09:30:00Z", date(2025, 12, 1)),
        ("Dated 31 December 2025", date(2025, 12, 31)),
        ("Updated February 29, 2024", date(2024, 2, 29)),
        # bare datelines near the top
        ("# Refund policy\nMarch 2026\n\nRefunds take five days.", date(2026, 3, 1)),
        ("# Refund policy\n\n2026-03-01\n\nRefunds take five days.", date(2026, 3, 1)),
        ("Refund policy\n*1 March 2026*\n", date(2026, 3, 1)),
        ("# Changelog\n\n## March 2026\n- faster\n\n## February 2026\n", date(2026, 3, 1)),
        ("FARE SHEET\nValid from 1 January 2023 until further notice\n", date(2023, 1, 1)),
        ("Applies from 3 March 2025 to all staff.", date(2025, 3, 3)),
        ("VRT launches Delay Repay\n\nCorvenna, 14 June 2022\n\nVRT today announced ...", date(2022, 6, 14)),
        ("Press release\nNew York, March 3, 2025 \u2013 Acme today announced ...", date(2025, 3, 3)),
        # skip an impossible date and keep looking
        ("Effective 31 February 2026. Effective 1 March 2026.", date(2026, 3, 1)),
        ("Updated 2025-02-30\nLast updated 2025-03-01", date(2025, 3, 1)),
    ],
)
def test_finds_stated_date(text: str, expected: date) -> None:
    assert find_effective_date(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Effective immediately",
        "Effective immediately, until further notice.",
        "Effective as of 03/01/2026",  # 3 January or 1 March: ambiguous
        "Effective 31 February 2026",
        "Updated 2025-13-01",
        "Effective 2024",
        "Copyright 2024",
        "# Pricing\n\n2024\n",
        "Version 2026.03.1 is out.",
        "Price: $2026.03 per seat",
        "Release 2026-3",
        "Last updated: soon",
        "We updated our pricing in March 2019 after feedback.",
        "Valid until 2026-12-31",
        "# About us\n\n" + PARAGRAPH * 3,
        "# About us\n\n" + "\n\n".join([PARAGRAPH] * 12) + "\n\nMarch 2019\n",
        "x" * 3000 + "\nEffective 1 January 2026",
        "Effective 2024-25 season",
        "Call 1-800-2026 today",
        "We moved in, 3 March 2019 was the day, and stayed.",  # not at a line's start as a place
    ],
)
def test_no_date_stated(text: str) -> None:
    assert find_effective_date(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Last updated: 2025-11-04\nEffective 1 January 2026", date(2026, 1, 1)),
        ("# Policy\nMarch 2026\n\nLast updated 2025-11-04", date(2025, 11, 4)),
        ("Updated 2025-01-01. Revised 2025-06-01.", date(2025, 1, 1)),
        ("Effective 1 May 2026 (was effective 1 May 2025)", date(2026, 5, 1)),
        ("Effective immediately.\nLast updated 4 Nov 2025", date(2025, 11, 4)),
        ("Founded in March 2019.\n\nPublished 12 Jan 2026", date(2026, 1, 12)),
    ],
)
def test_priority(text: str, expected: date) -> None:
    assert find_effective_date(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (date(2026, 1, 1), date(2026, 1, 1)),
        (datetime(2026, 1, 1, 23, 59), date(2026, 1, 1)),
        (datetime(2026, 1, 1, tzinfo=UTC), date(2026, 1, 1)),
        ("2026-01-01", date(2026, 1, 1)),
        ("  2026-01-01  ", date(2026, 1, 1)),
        ("1 March 2026", date(2026, 3, 1)),
        ("March 2026", date(2026, 3, 1)),
        ("2026-03", date(2026, 3, 1)),
        ("Mar 5, 2026", date(2026, 3, 5)),
        ("2026-01-01T10:00:00Z", date(2026, 1, 1)),
        ("2026-01-01 10:00", date(2026, 1, 1)),
        ("31 February 2026", None),
        ("03/01/2026", None),
        ("2026", None),
        ("", None),
        ("soon", None),
        ("Effective 1 March 2026", None),
        (2026, None),
        (1767225600.0, None),
        (True, None),
        (None, None),
        (["2026-01-01"], None),
    ],
)
def test_parse_date_value(value: object, expected: date | None) -> None:
    assert parse_date_value(value) == expected


Render = Callable[[date], str]

RENDERINGS: st.SearchStrategy[Render] = st.sampled_from(
    [
        lambda d: d.isoformat(),
        lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
        lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
        lambda d: f"{ABBREVIATIONS[d.month - 1]} {d.day} {d.year}",
        lambda d: f"{ordinal(d.day)} {MONTHS[d.month - 1].lower()} {d.year}",
        lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    ]
)


TAILS = st.sampled_from(["", ".", ", see below", "\n"])


@given(day=FOUR_DIGIT_YEARS, render=RENDERINGS, tail=TAILS)
def test_effective_date_round_trips(day: date, render: Render, tail: str) -> None:
    assert find_effective_date(f"# Policy\nEffective {render(day)}{tail}") == day


@given(day=FOUR_DIGIT_YEARS, render=RENDERINGS)
def test_front_matter_value_round_trips(day: date, render: Render) -> None:
    assert parse_date_value(render(day)) == day


@given(day=FOUR_DIGIT_YEARS.filter(lambda d: d.day > 12), day_first=st.booleans())
def test_unambiguous_numeric_dates_are_read(day: date, day_first: bool) -> None:
    first, second = (day.day, day.month) if day_first else (day.month, day.day)
    assert find_effective_date(f"Effective {first:02d}/{second:02d}/{day.year}") == day


@given(month=st.integers(1, 12), day_of_month=st.integers(1, 12), year=st.integers(1000, 9999))
def test_ambiguous_numeric_dates_are_not_guessed(month: int, day_of_month: int, year: int) -> None:
    text = f"Effective {day_of_month:02d}/{month:02d}/{year}"
    expected = date(year, month, month) if month == day_of_month else None
    assert find_effective_date(text) == expected


@given(effective=FOUR_DIGIT_YEARS, updated=FOUR_DIGIT_YEARS, effective_last=st.booleans())
def test_effective_beats_updated(effective: date, updated: date, effective_last: bool) -> None:
    lines = [f"Last updated: {updated.isoformat()}", f"Effective {effective.isoformat()}"]
    if not effective_last:
        lines.reverse()
    assert find_effective_date("\n".join(lines)) == effective


FRAGMENTS = st.sampled_from(
    [
        "Effective", "effective date", "Last updated", "as of", "Date", "on", "from", ":",
        " ", "\n", "-", "/", ".", ",", "*", "|", "1st", "31", "02", "13", "2026", "0000",
        "March", "Sept.", "Feb", "Monday", "\u00a0", "\u2013", "2026-02-30", "99/99/9999",
    ]
)  # fmt: skip


@given(st.text() | st.lists(FRAGMENTS | st.text(max_size=3)).map("".join))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    found = find_effective_date(text)
    assert found is None or isinstance(found, date)


@given(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(),
        st.dates(), st.datetimes(), st.lists(st.integers()),
        st.lists(FRAGMENTS).map("".join),
    )
)  # fmt: skip
def test_parse_date_value_never_raises(value: object) -> None:
    found = parse_date_value(value)
    assert found is None or isinstance(found, date)
