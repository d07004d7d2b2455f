"""`rag.text.facts`: values, codes, names and acronyms read off a sentence; cleaning and readability."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.text.facts import clean_sentence, content_words, same_amount, same_dimension, values
from rag.text.names import acronyms, codes, fold, mentions, names, new_names, people
from rag.text.quotable import about_the_page


def keys(text: str) -> list[tuple[str, str]]:
    return [v.key for v in values(text)]


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The annual plan costs $1,560 per year.", [("money$", "1560")]),
        ("The band runs from £58,000 to £76,000.", [("money£", "58000"), ("money£", "76000")]),
        ("Full-time employees receive 24 days of paid leave.", [("day", "24")]),
        ("The primary carer gets 16 weeks of leave.", [("week", "16")]),
        ("Returns are accepted within two weeks of delivery.", [("week", "2")]),
        ("Hold the button for ten seconds.", [("second", "10")]),
        ("We keep your data for three months.", [("month", "3")]),
        ("It costs 49 EUR a year, or USD 55.", [("money€", "49"), ("money$", "55")]),
        ("The fee is A$40 in Australia and $30 in the US.", [("moneyA$", "40"), ("money$", "30")]),
        ("It raised $1.5 million.", [("money$", "1.5m")]),
        ("A first reply within 8 working hours.", [("business hour", "8")]),
        ("Open 192.168.50.1 in a browser.", [("address", "192.168.50.1")]),
        ("Update to TervaneOS v3.2.1 or 4.0.2.", [("version", "3.2.1"), ("version", "4.0.2")]),
        ("One of the plans is free.", []),
        ("Uptime is 99.9% each month.", [("percent", "99.9")]),
        ("Uptime is 99.9 percent each month.", [("percent", "99.9")]),
        ("Days must be used by 31 March of the following year.", [("date", "03-31")]),
        # a date is one key however it is written (a model writes "September 30, 2026")
        ("Requests after September 30, 2026 return 410 Gone.", [("date", "2026-09-30"), ("number", "410")]),
        ("Switched off on 30 September 2026.", [("date", "2026-09-30")]),
        ("Renewals in Dec 2024 were late.", [("number", "2024")]),  # a month and year, not "Dec 20"
        ("The policy is effective 2026-01-01.", [("date", "2026-01-01")]),
        ("Core hours are 10:00 to 15:00.", [("time", "10:00"), ("time", "15:00")]),
        ("It supports up to 2,000 monitored hosts.", [("host", "2000")]),
        ("It supports up to 2,000 hosts.", [("host", "2000")]),
        ("Expenses are paid within 10 business days.", [("business day", "10")]),
        ("The Starter plan supports 5 users.", [("user", "5")]),
        ("Passwords need 14 characters.", [("character", "14")]),
        ("Call extension 4357.", [("number", "4357")]),
        ("We are at 14 Wharf Street, Leeds.", [("address", "14 Wharf Street")]),  # no amount of 14
        ("Ship it to 221B Baker St. in London.", [("address", "221B Baker St")]),
        ("We moved 14 boxes down the road.", [("number", "14")]),  # a road, but no street's name
        ("No values here at all.", []),
        ("3.5 Cloud services continue for as long as updates.", []),  # a section's number
        ("2.5 GB of storage is included.", [("gb", "2.5")]),  # an amount opening its sentence
        ("For 5xx errors, send an Idempotency-Key.", []),  # a class of status codes
        ("Plus: 200 requests/min.", [("request", "200")]),
        ("Class 48 units run from Platform 1, two spaces in car 2.", []),  # numbers that name, not count
        ("A FlexPass 10-Trip costs €39.00 for 2-zone trips.", [("money€", "39.00"), ("number", "2")]),
        ("Total 1,234 people", [("number", "1234")]),
    ],
)
def test_values(text: str, expected: list[tuple[str, str]]) -> None:
    assert keys(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("30 days", "one month", True),
        ("30 days", "three months", False),
        ("12 months", "one year", True),
        ("two weeks", "14 days", True),
        ("€59", "59 EUR", True),
        ("€59", "49 EUR", False),
    ],
)
def test_amounts_compare_across_units_of_one_dimension(a: str, b: str, same: bool) -> None:
    [x], [y] = values(a), values(b)
    assert same_dimension(x, y)
    assert same_amount(x, y) is same


def test_abbreviated_units_are_the_words_written_out() -> None:
    assert content_words("200 requests/min") == content_words("200 request per minute")
    assert content_words("24 hrs") == content_words("24 hours")


def test_a_verb_and_its_past_tense_share_a_stem() -> None:
    assert content_words("When did he die?") == content_words("When he died")
    assert content_words("use closes issue") == content_words("used closed issued")
    assert content_words("pages") == content_words("page")
    assert content_words("retried policies") == content_words("retry policy")


def test_values_of_different_dimensions_do_not_compare() -> None:
    [days], [money] = values("30 days"), values("$30")
    assert not same_dimension(days, money)
    assert not same_amount(days, money)


def test_values_keep_the_surface_as_written() -> None:
    [value] = values("It costs $1,560 per year.")
    assert value.surface == "$1,560"
    assert value.amount == "1560"


def test_values_of_one_fact_match_across_spellings() -> None:
    assert keys("24 days") == keys("24 Days") == keys("24-day")
    assert keys("$1,560") == keys("$1560")
    assert keys("24 days") != keys("20 days")
    assert keys("$15") != keys("£15")


# ---------------------------------------------------------------- codes


def test_codes() -> None:
    assert codes("The NW-200X and NW-900 collectors") == {"NW-200X", "NW-900"}
    assert codes("We are SOC2 compliant and P1 incidents page on-call.") == {"SOC2", "P1"}


@pytest.mark.parametrize("text", ["Call 4357 today.", "Founded in 2017 with 120 engineers.", "It costs $15."])
def test_plain_numbers_are_not_codes(text: str) -> None:
    assert codes(text) == set()


# ---------------------------------------------------------------- names


def test_names_are_capitalised_terms_not_at_the_start() -> None:
    assert names("What is the minimum check interval in Beacon Pro?") == {"Beacon Pro"}
    assert names("The Team plan includes Beacon Pro.") == {"Team", "Beacon Pro"}
    assert names("Our CEO is Priya Raman.") == {"CEO", "Priya Raman"}
    assert names("Is a FlexPass 10-Trip valid on buses?") == {"FlexPass 10-Trip"}  # a count joined to a word
    assert names("Connect to Wi-Fi with Care+ Premium.") == {"Wi-Fi", "Care+ Premium"}
    # a key combination is one name: "Ctrl+" alone made "Ctrl+K" look like a swap for "Ctrl+F"
    assert names("The shortcut for search on Windows is Ctrl+K.") == {"Windows", "Ctrl+K"}
    assert names("It opens with Ctrl+Shift+P on Linux.") == {"Ctrl+Shift+P", "Linux"}


def test_the_first_word_of_a_sentence_is_not_a_name() -> None:
    assert names("Beacon keeps check results for 30 days.") == set()
    assert names("Employees may carry over 5 days. Managers approve it.") == set()
    assert names("Ask HR. Then Finance approves.") == {"HR", "Finance"}


def test_a_sentence_initial_name_keeps_all_its_words_but_not_a_leading_stop_word() -> None:
    # "The Business" → "Business"; "Northwind Labs" and "Beacon Pro" are whole names.
    assert names("The Business plan costs $29.") == {"Business"}
    assert names("Northwind Labs was founded in 2017.") == {"Northwind Labs"}
    assert (
        names("Beacon Pro keeps results for 365 days.") == names("In Beacon Pro, results are kept.") == {"Beacon Pro"}
    )


def test_names_skip_codes_and_stop_words() -> None:
    assert names("The collector is the NW-200X.") == set()
    assert "It" not in names("Yes. It works.")


def test_new_names() -> None:
    assert new_names("What does the Zeta plan cost?", "Team plan and Business plan") == {"Zeta"}
    assert new_names("Beacon Pro keeps data for 365 days.", "Beacon keeps data") == {"Beacon Pro"}
    assert new_names("Acme sells Widgets.", "acme sells widgets") == set()
    assert new_names("Beyoncé sings.", "beyonce") == set()


def test_new_names_count_the_first_word_unless_it_is_a_common_word() -> None:
    assert new_names("Zeta is fast.", "") == {"Zeta"}
    assert new_names("What is the refund policy?", "") == set()


# ---------------------------------------------------------------- acronyms and mentions


def test_acronyms() -> None:
    assert "ceo" in acronyms("Priya Raman is the Chief Executive Officer.")
    assert acronyms("no capitalised runs here") == set()
    assert acronyms("Only One") == {"oo"}


def test_fold() -> None:
    assert fold("Beyoncé") == fold("BEYONCE") == "beyonce"


@pytest.mark.parametrize(
    ("haystack", "term", "expected"),
    [
        ("Beyoncé sings.", "Beyonce", True),
        ("Beyonce sings.", "Beyoncé", True),
        ("the beacon pro spec", "Beacon Pro", True),
        ("Priya Raman is the Chief Executive Officer.", "CEO", True),
        ("Priya Raman is the Chief Executive Officer.", "CFO", False),
        ("The NW-200X collector supports 2,000 hosts.", "NW-200", False),
        ("The NW-200 collector supports 250 hosts.", "NW-200", True),
        ("Beaconing is a word.", "Beacon", False),
        ("Team plans differ.", "Business", False),
        ("Chat is open on Saturdays from 10:00.", "Saturdays", True),  # a vowel before the y: "-ys"
        ("Chat is open on Saturday.", "Saturdays", True),
        ("Both Acme Companies merged.", "Acme Company", True),  # a consonant before the y: "-ies"
        ("Acme Company", "Acme Companies", True),
    ],
)
def test_mentions(haystack: str, term: str, expected: bool) -> None:
    assert mentions(haystack, term) is expected


def test_mentions_acronyms_only_for_upper_case_terms() -> None:
    assert not mentions("Priya Raman is the Chief Executive Officer.", "ceo")


# ---------------------------------------------------------------- clean_sentence


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("- Employees get 24 days of leave", "Employees get 24 days of leave."),
        ("* Employees get 24 days of leave", "Employees get 24 days of leave."),
        ("1. Submit the claim within 30 days", "Submit the claim within 30 days."),
        ("2) Attach a receipt", "Attach a receipt."),
        ("The **Team** plan costs __$15__", "The Team plan costs $15."),
        ("Read [the policy](https://x.example/p) first", "Read the policy first."),
        ("Use `candor ask` to try it", "Use candor ask to try it."),
        ("## Annual leave", "Annual leave."),
        ("- Line one\n- line two", "Line one line two."),
        ("Is it covered?", "Is it covered?"),
        ("It is covered!", "It is covered!"),
        ("Already ends.", "Already ends."),
        ("", ""),
    ],
)
def test_clean_sentence(raw: str, clean: str) -> None:
    assert clean_sentence(raw) == clean


# ---------------------------------------------------------------- codes and names matched whole


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The NX-6 Pro handles 128 devices.", {"NX-6 Pro"}),
        ("Update the RT-9i first.", {"RT-9i"}),
        ("The CAM-3 Outdoor is weatherproof.", {"CAM-3 Outdoor"}),
        ("Collectors: NW-200 and NW-200X.", {"NW-200", "NW-200X"}),
        ("The AX7+ ships in May.", {"AX7+"}),
    ],
)
def test_codes_are_read_whole_with_their_suffix(text: str, found: set[str]) -> None:
    assert codes(text) == found


def test_a_plus_sign_is_part_of_a_name() -> None:
    assert names("How much is Team+ per user?") == {"Team+"}
    assert names("What does Care+ Premium cost?") == {"Care+ Premium"}
    assert mentions("Plan: Team+; Monthly billing: $24", "Team+")
    assert not mentions("Plan: Team; Monthly billing: $16", "Team+")
    assert not mentions("Team+ costs $24.", "Team")


_PREFIX = st.text(alphabet="ABCDEFGHJKMNPRSTVWXZ", min_size=1, max_size=4)
_CODE = st.builds(
    lambda prefix, dash, number, letter, suffix: f"{prefix}{dash}{number}{letter}{suffix}",
    _PREFIX,
    st.sampled_from(["", "-"]),
    st.integers(min_value=1, max_value=9999),
    st.sampled_from(["", "i", "X", "s"]),
    st.sampled_from(["", " Pro", " Max", " Outdoor", "+"]),
)


@given(code=_CODE)
def test_a_generated_code_is_found_whole_and_mentioned_whole(code: str) -> None:
    text = f"Support for the {code} ends next year."
    assert code in codes(text)
    assert mentions(text, code)
    assert not mentions(text, f"{code}9")  # another model number


@given(code=_CODE.filter(lambda c: not c.endswith(("Pro", "Max", "Outdoor", "+"))))
def test_a_code_with_a_suffix_word_is_not_the_code_without_it(code: str) -> None:
    sibling = f"{code} Pro"
    assert codes(f"The {sibling} is new.") == {sibling}
    assert not mentions(f"The {code} is old.", sibling)


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # found by review
        ("It includes twenty-five users.", [("user", "25")]),
        ("Up to two hundred users.", [("user", "200")]),
        ("Revenue passed $5b, then $2bn.", [("money$", "5b"), ("money$", "2b")]),
    ],
)
def test_compound_number_words_and_multipliers(text: str, expected: list[tuple[str, str]]) -> None:
    assert keys(text) == expected


def test_amounts_compare_as_numbers() -> None:
    assert same_amount(values("$20")[0], values("$20.00")[0])
    assert same_amount(values("$5k")[0], values("$5,000")[0])
    assert not same_amount(values("$5k")[0], values("$500")[0])


def test_sizes_and_times_are_not_model_codes() -> None:
    assert codes("Every model ships with 512GB of storage and opens at 9AM.") == set()
    assert not about_the_page("Note: Refunds are processed within 5 business days.")
    assert not about_the_page("Employees must sign this document before travel is booked.")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Our security programme is led by Hannah Lindqvist, who reports to the CEO.", {"Hannah Lindqvist"}),
        ("Head of Support Operations (Marta Kowalczyk)", {"Marta Kowalczyk"}),
        ("Tip: skim the Service Level Agreement first.", set()),  # a label and a document, no one
        ("Ask Marta in HR.", set()),  # one word: a plan or a product as often as a person
        ("Customers on the Team+ and Enterprise plans.", set()),
        ("Contact the IT Service Desk.", set()),
    ],
)
def test_people_are_names_that_can_be_a_persons(text: str, found: set[str]) -> None:
    assert people(text) == found
