"""`rag.pipeline.understand`: markup stripping, follow-up rewriting, multi-part splitting, answer types."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import QuestionError
from rag.model.answers import Feedback, Question, Turn
from rag.model.types import clean_text
from rag.pipeline.parts import reads_as_question, split_parts
from rag.pipeline.understand import (
    MAX_HISTORY_TURNS,
    MAX_PARTS,
    MAX_QUESTION_CHARS,
    answer_type,
    is_follow_up,
    rewrite_follow_up,
    strip_markup,
    understand,
)
from rag.tracking.records import feedback_record

TEAM_PRICE = "How much does the Team plan cost per month?"
SLACK_TOKEN = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>|<#[A-Z0-9]+(?:\|[^>]*)?>|<!(?:here|channel|everyone)[^>]*>")


# ---------------------------------------------------------------- strip_markup


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("<@U123> how many leave days?", "how many leave days?"),
        ("<@U123|priya> how many leave days?", "how many leave days?"),
        ("ask in <#C123|general> please", "ask in #general please"),
        ("see <https://x.example|the policy> now", "see the policy now"),
        ("see <https://x.example> now", "see https://x.example now"),
        ("<mailto:hr@x.example|HR> knows", "HR knows"),
        ("<!here> who is the CEO?", "who is the CEO?"),
        ("<!channel> <!everyone> hi there", "hi there"),
        ("R&amp;D &lt;team&gt; budget", "R&D <team> budget"),
        ("<at>Candor</at> what is the refund policy?", "what is the refund policy?"),
        ("<AT>Candor</AT> hi", "hi"),
        ("<p>What is <b>SSO</b>?</p>", "What is SSO?"),
        ("  lots   of\n\tspace  ", "lots of space"),
        ("is a < b > c true?", "is a < b > c true?"),
    ],
)
def test_strip_markup(raw: str, plain: str) -> None:
    assert strip_markup(raw) == plain


def test_strip_markup_decodes_entities_exactly_once() -> None:
    # Slack sends a typed "&lt;" as "&amp;lt;": decoding twice would change what the person wrote.
    assert strip_markup("type &amp;lt; for less-than") == "type &lt; for less-than"


_plain = st.text(alphabet=st.characters(exclude_characters="<>&|", exclude_categories=["Cs"]), max_size=30)
_ids = st.from_regex(r"[A-Z0-9]{1,10}", fullmatch=True)
_labels = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABCDEFXYZ0123456789.-_@#", max_size=15)
_tokens = st.one_of(
    _plain,
    _ids.map(lambda i: f"<@{i}>"),
    st.tuples(_ids, _labels).map(lambda t: f"<@{t[0]}|{t[1]}>"),
    st.tuples(_ids, _labels).map(lambda t: f"<#{t[0]}|{t[1]}>"),
    st.sampled_from(["<!here>", "<!channel>", "<!everyone>", "<at>Candor</at>"]),
    st.tuples(st.sampled_from(["https://x.example", "http://y.example/a?b=1"]), _labels).map(
        lambda t: f"<{t[0]}|{t[1]}>" if t[1] else f"<{t[0]}>"
    ),
)
_messages = st.lists(_tokens, max_size=8).map(" ".join)


@given(st.text(max_size=200))
def test_strip_markup_never_raises_and_collapses_whitespace(text: str) -> None:
    out = strip_markup(text)
    assert out == " ".join(out.split())


@given(_messages)
def test_strip_markup_removes_every_mention_of_a_well_formed_message(message: str) -> None:
    out = strip_markup(message)
    assert "<@" not in out
    assert SLACK_TOKEN.search(out) is None
    assert "<at>" not in out.lower()


@given(_messages)
def test_strip_markup_is_idempotent_on_its_own_output(message: str) -> None:
    once = strip_markup(message)
    assert strip_markup(once) == once


# ---------------------------------------------------------------- understand


@pytest.mark.parametrize("text", ["", "   ", "<@U123>", "<@U123|bob> <!here>", "<at>Candor</at>"])
def test_understand_rejects_a_question_that_is_empty_after_markup(text: str) -> None:
    with pytest.raises(QuestionError, match="empty"):
        understand(Question(text))


def test_understand_rejects_an_overlong_question_but_accepts_the_limit() -> None:
    with pytest.raises(QuestionError, match="too long"):
        understand(Question("a" * (MAX_QUESTION_CHARS + 1)))
    assert understand(Question("a" * MAX_QUESTION_CHARS)).text == "a" * MAX_QUESTION_CHARS
    assert understand(Question("<@U123> " + "a" * MAX_QUESTION_CHARS)).text == "a" * MAX_QUESTION_CHARS


def test_a_follow_up_rewritten_past_the_limit_is_read_as_typed() -> None:
    long_earlier = "How much does the Team plan cost per month " + "and per seat " * 330 + "?"
    assert len(long_earlier) > MAX_QUESTION_CHARS - 20
    understood = understand(Question("and for it?", history=(Turn(long_earlier),)))
    assert (understood.text, understood.rewritten) == ("and for it?", False)


def test_only_the_latest_turns_of_a_thread_are_read() -> None:
    older = (Turn(TEAM_PRICE),)
    filler = tuple(Turn("The Team plan costs $10 per seat.", from_bot=True) for _ in range(MAX_HISTORY_TURNS))
    assert understand(Question("and for the Business plan?", history=older + filler[:2])).rewritten
    # the question twenty turns back is out of reach: the follow-up reads as typed
    understood = understand(Question("and for the Business plan?", history=older + filler))
    assert understood.text == "and for the Business plan?"


def test_a_message_with_too_many_questions_is_refused_clearly() -> None:
    many = " ".join(f"What is the price of the plan number {n}?" for n in range(MAX_PARTS + 1))
    with pytest.raises(QuestionError, match=f"asks {MAX_PARTS + 1} questions at once; ask at most {MAX_PARTS}"):
        understand(Question(many))
    allowed = " ".join(f"What is the price of the plan number {n}?" for n in range(MAX_PARTS))
    assert len(understand(Question(allowed)).parts) == MAX_PARTS


def test_understand_keeps_the_original_and_reports_no_rewrite() -> None:
    understood = understand(Question("<@U1> When was Northwind Labs founded, and who is the CEO?"))
    assert understood.original == "<@U1> When was Northwind Labs founded, and who is the CEO?"
    assert understood.text == "When was Northwind Labs founded, and who is the CEO?"
    assert understood.parts == ("When was Northwind Labs founded?", "Who is the CEO?")
    assert understood.rewritten is False


def test_understand_marks_a_follow_up_as_rewritten() -> None:
    understood = understand(Question("and for the Business plan?", history=(Turn(TEAM_PRICE),)))
    assert (understood.text, understood.rewritten) == ("How much does the Business plan cost per month?", True)


# ---------------------------------------------------------------- split_parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "What is the daily meal allowance for international travel, "
            "and how quickly are approved expenses paid back?",
            (
                "What is the daily meal allowance for international travel?",
                "How quickly are approved expenses paid back?",
            ),
        ),
        (
            "When was Northwind Labs founded, and who is the CEO?",
            ("When was Northwind Labs founded?", "Who is the CEO?"),
        ),
        (
            "What is the refund policy? How do I cancel my plan?",
            ("What is the refund policy?", "How do I cancel my plan?"),
        ),
        ("Who is the CEO; also where is the head office?", ("Who is the CEO?", "Where is the head office?")),
        (
            "How much do the Team and Business plans cost per month?",
            ("How much does the Team plan cost per month?", "How much does the Business plan cost per month?"),
        ),
        (
            "Do the Starter, Team and Business plans include SSO?",
            (
                "Does the Starter plan include SSO?",
                "Does the Team plan include SSO?",
                "Does the Business plan include SSO?",
            ),
        ),
        (
            "What are the opening hours of the London and Leeds offices?",
            ("What are the opening hours of the London office?", "What are the opening hours of the Leeds office?"),
        ),
        (
            "What are the price, user limit and data retention of the Team plan?",
            (
                "What is the price of the Team plan?",
                "What is the user limit of the Team plan?",
                "What is the data retention of the Team plan?",
            ),
        ),
        (
            "What is the price and the user limit of the Team plan?",
            ("What is the price of the Team plan?", "What is the user limit of the Team plan?"),
        ),
        (
            "What is the Business plan price and the nonprofit discount?",
            ("What is the Business plan price?", "What is the nonprofit discount?"),
        ),
        (  # a second ask opening with a preposition; "it" is the plan, not the place
            "How much is Care+ Standard in the US, and for how many years can it cover defects?",
            ("How much is Care+ Standard in the US?", "For how many years can Care+ Standard cover defects?"),
        ),
        (
            "What does Beacon cost in Germany, and how long does it keep data?",
            ("What does Beacon cost in Germany?", "How long does Beacon keep data?"),
        ),
        (  # what is said before the questions is said to each of them
            "We're on Team+ in the EU. Which base URL should we call, and how many requests a minute do we get?",
            (
                "We're on Team+ in the EU. Which base URL should we call?",
                "We're on Team+ in the EU. How many requests a minute do we get?",
            ),
        ),
    ],
)
def test_split_parts_splits_independent_questions(question: str, parts: tuple[str, ...]) -> None:
    assert split_parts(question) == parts
    assert all(p.endswith("?") for p in parts)


@pytest.mark.parametrize(
    "question",
    [
        "How long is the free trial, and do I need a credit card to start it?",  # "it" names nothing by name
        "What are the terms and conditions?",  # "and" not followed by a question word
        "How do I reset my password?",
        "Hi. What is the policy?",  # a greeting is too short to be a part
        "What does Beacon and Compass cost?",  # one product with "and" in its name: no shared head noun
        "What are the terms and conditions of the Team plan?",  # one determiner: one thing
        "What is the difference between the Team and Business plans?",  # a comparison is one question
        "How many SMS alerts are included with Beacon Pro and Beacon?",
        "Which laptops can new employees choose from?",
        "I'm in Leeds, so how long does the repair take and how much will it cost?",  # "it" is no place
        "How much does the RT-9 cost and how do I contact IT about it?",  # IT is a team
        "We're on Team+. What is the fee?",  # one question after what is said
        "What is the population of Sandusky Township, Ohio?",  # a place and its region: one name
    ],
)
def test_split_parts_keeps_one_question_whole(question: str) -> None:
    assert split_parts(question) == (question,)


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "From when will the RE-7 stop at Brennick Junction, and how many parking spaces does that station have?",
            (
                "From when will the RE-7 stop at Brennick Junction?",
                "How many parking spaces does Brennick Junction have?",
            ),
        ),
        (
            "How much is the Team plan, and how many seats does that plan include?",
            ("How much is the Team plan?", "How many seats does Team plan include?"),
        ),
        (  # two places: which one "that office" is cannot be told
            "What is the fee in Leeds and in Perth, and what does that office do?",
            ("What is the fee in Leeds and in Perth?", "What does that office do?"),
        ),
    ],
)
def test_a_later_part_saying_that_station_says_the_one_the_first_part_names(
    question: str, parts: tuple[str, ...]
) -> None:
    assert split_parts(question) == parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "How big is the battery in the RT-9i and how many hours will it run on a charge?",
            ("How big is the battery in the RT-9i?", "How many hours will RT-9i run on a charge?"),
        ),
        (
            "When did Acme stop selling the RT-9, and when did it stop getting security patches?",
            ("When did Acme stop selling the RT-9?", "When did RT-9 stop getting security patches?"),
        ),
        (
            "What is the NX-6 Pro's price and what is its WAN speed?",
            ("What is the NX-6 Pro's price?", "What is NX-6 Pro's WAN speed?"),
        ),
        (  # a noun the first part gave a name to keeps the name
            "How long do I have to claim an SLA credit, and what's the maximum credit I can get?",
            ("How long do I have to claim an SLA credit?", "What's the maximum SLA credit I can get?"),
        ),
        (
            "What is the Team plan price and what is the plan limit?",
            ("What is the Team plan price?", "What is the Team plan limit?"),
        ),
        (  # another name of its own, and a verb after a name: left alone
            "How much does the Team plan cost, and what does the Business plan include?",
            ("How much does the Team plan cost?", "What does the Business plan include?"),
        ),
    ],
)
def test_a_later_part_saying_it_of_a_named_thing_is_split_and_says_the_name(
    question: str, parts: tuple[str, ...]
) -> None:
    assert split_parts(question) == parts


# ---------------------------------------------------------------- follow-ups


@pytest.mark.parametrize(
    ("previous", "follow_up", "standalone"),
    [
        (TEAM_PRICE, "and for the Business plan?", "How much does the Business plan cost per month?"),
        (TEAM_PRICE, "what about Business plan?", "How much does the Business plan cost per month?"),
        (
            "How much is the Team plan on monthly billing?",
            "and on annual billing?",
            "How much is the Team plan on annual billing?",
        ),
        (
            "How many days of annual leave do full-time employees get?",
            "and for part-time employees?",
            "How many days of annual leave do part-time employees get?",
        ),
    ],
)
def test_rewrite_follow_up_swaps_the_noun_phrase_with_the_same_head(
    previous: str, follow_up: str, standalone: str
) -> None:
    assert rewrite_follow_up(follow_up, (Turn(previous),)) == standalone


def test_rewrite_follow_up_without_a_shared_head_adds_the_previous_question_as_context() -> None:
    assert rewrite_follow_up("what about Starter?", (Turn(TEAM_PRICE),)) == (
        "How much does the Team plan cost per month: Starter?"
    )


@pytest.mark.parametrize("text", ["How do I reset my password?", "What is the refund policy for annual plans?"])
def test_rewrite_follow_up_leaves_a_standalone_question_unchanged(text: str) -> None:
    assert not is_follow_up(text)
    assert rewrite_follow_up(text, (Turn(TEAM_PRICE),)) == text


def test_rewrite_follow_up_without_history_is_unchanged() -> None:
    assert rewrite_follow_up("and for the Business plan?", ()) == "and for the Business plan?"
    only_bot = (Turn("Hello, ask me anything.", from_bot=True),)
    assert rewrite_follow_up("and for the Business plan?", only_bot) == "and for the Business plan?"


def test_rewrite_follow_up_uses_the_last_user_turn_and_skips_bot_turns() -> None:
    history = (
        Turn("When was Northwind Labs founded?", author="U1"),
        Turn(TEAM_PRICE, author="U1"),
        Turn("The Team plan costs $15 per user per month [1].", from_bot=True),
        Turn("<@U9>", author="U2"),  # empty after markup: not a question
    )
    rewritten = rewrite_follow_up("and for the Business plan?", history)
    assert rewritten == "How much does the Business plan cost per month?"


def test_rewrite_follow_up_passes_over_what_people_said_to_each_other() -> None:
    # a Slack thread carries people's messages too: small talk after the answer is not the question
    answer = Turn("The Team plan costs $15 per user per month [1].", from_bot=True)
    history = (Turn(TEAM_PRICE, author="U1"), answer, Turn("thanks, that helps", author="U2"))
    assert rewrite_follow_up("and for the Business plan?", history) == "How much does the Business plan cost per month?"
    # a person's question nobody put to the bot is one (the message that started the thread)
    started = (
        Turn("Do adoptive parents get paid parental leave here?", author="U2"),
        Turn("I think so, no idea for how long though", author="U3"),
    )
    assert rewrite_follow_up("how many weeks is it?", started) == (
        "Do adoptive parents get paid parental leave here: how many weeks is it?"
    )
    # nobody asked anything: the latest thing said is the context, as before
    assert rewrite_follow_up("and for the Business plan?", (Turn("Team plan pricing", author="U1"),)) == (
        "Team plan pricing: the Business plan?"
    )


def test_rewrite_follow_up_reads_a_follow_up_of_a_follow_up_from_the_question_they_continue() -> None:
    monthly = "How much is the Team plan on monthly billing?"
    history = (
        Turn(monthly, author="U1"),
        Turn("$15 per user per month [1].", from_bot=True),
        Turn("and the Business plan?", author="U2"),  # answered as a follow-up of the first
        Turn("$29 per user per month [1].", from_bot=True),
    )
    assert rewrite_follow_up("and on annual billing?", history) == "How much is the Business plan on annual billing?"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("and for the Business plan?", True),
        ("What about annual billing?", True),
        ("how much is it?", True),  # short, with a pronoun
        ("How much does the Team plan cost per month?", False),
        ("Can I carry over unused annual leave days into the next calendar year and use them?", False),
    ],
)
def test_is_follow_up(text: str, expected: bool) -> None:
    assert is_follow_up(text) is expected


# ---------------------------------------------------------------- answer_type


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many days of annual leave do I get?", "quantity"),
        ("How much does the Team plan cost?", "quantity"),
        ("How long is the free trial?", "quantity"),
        ("What is the price of the Business plan?", "quantity"),
        ("When was Northwind Labs founded?", "date"),
        ("What year did Beacon launch?", "date"),
        ("When do I need a receipt?", "other"),
        ("When does a travel router battery count as defective?", "other"),  # a condition
        ("When is an absence considered unauthorised?", "other"),
        ("Who is the CEO?", "person"),
        ("Is there a gym allowance?", "yesno"),
        ("Can I book premium economy?", "yesno"),
        ("What is the refund policy?", "other"),
        ("HOW MANY users?", "quantity"),
        ("when did it launch", "date"),
        ("I'm in Leeds - once you have my router, how long does the repair take?", "quantity"),
        ("We're on Enterprise. If the app is down, how quickly should support respond?", "quantity"),
        ("What does a year of Care+ Premium cost in euros?", "quantity"),
        ("If I drop my router, what do I have to pay to get it fixed?", "quantity"),
        ("What's the biggest memory card the CAM-3 can take?", "quantity"),
        ("At what time do updates get installed?", "date"),
        ("Which city are the EU servers in?", "place"),
        ("Our legal team wants to know which city the servers are in.", "place"),
        ("Where is the support team based?", "place"),
        ("Where do I find the serial number?", "other"),
        ("How do I generate an API key?", "procedure"),
        ("do people who only read the results need a paid seat?", "yesno"),
        ("How much, roughly, does the Team plan cost?", "quantity"),
        ("Can you tell me how much the Team plan costs?", "quantity"),
        ("Why does the Team plan cost more than what the Starter plan costs?", "other"),
        ("What's the most popular plan?", "other"),
        ("what IP do i type in the browser to reach the settings?", "address"),
        ("Which base URL should the integration call?", "address"),
        ("What email address do I write to?", "address"),
        ("Which address is the office at?", "place"),  # a street address: a place
        ("What is the population of Broken Bow?", "quantity"),
        ("What's the deadline for a Delay Repay claim?", "date"),  # a date or a time from an event
        ("What times can I phone Travel Assist?", "date"),
        ("What's the most money I can keep on a ValCard?", "quantity"),
        ("What is the distance from the depot to the station?", "quantity"),
    ],
)
def test_answer_type(question: str, kind: str) -> None:
    assert answer_type(question) == kind


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Is there a free trial", True),
        ("how do I cancel", True),
        ("the trial is how long?", True),
        ("thanks, that helps", False),
        ("Whatever works for you", False),  # a question word must stand alone
    ],
)
def test_reads_as_question(text: str, asks: bool) -> None:
    assert reads_as_question(text) is asks


@given(st.text())
def test_clean_text_leaves_only_what_postgres_json_and_the_tokenizer_take(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # no lone surrogate left
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", cleaned)
    assert clean_text(cleaned) == cleaned


def test_clean_text_keeps_tabs_line_breaks_and_every_other_character() -> None:
    assert clean_text("Pay\tday\r\n\u00e9t\u00e9 \U0001f600 \u4e2d") == "Pay\tday\r\n\u00e9t\u00e9 \U0001f600 \u4e2d"
    assert clean_text("a\x00b\x07c\x7fd") == "abcd"
    assert clean_text("x\ud800y\udcffz") == "x\ufffdy\ufffdz"


def test_questions_and_turns_hold_clean_text() -> None:
    question = Question("When\x00 is payday?\udcff", history=(Turn("earlier\x00 one"),))
    assert question.text == "When is payday?\ufffd"
    assert question.history[0].text == "earlier one"


def test_a_record_for_the_database_holds_clean_strings() -> None:
    vote = Feedback("t1", "down", comment="wrong\x00 \ud800")
    record = feedback_record(vote, "t1", now=datetime(2026, 11, 30, tzinfo=UTC))
    assert record["feedback"]["comment"] == "wrong \ufffd"
    json.dumps(record).encode("utf-8")
