"""`bot.slack.history.thread_history`: the ledger's questions and answers merged with a Slack thread's
messages as `conversations.replies` returns them, in order, once each, and bounded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.slack.history import (
    MAX_HISTORY_CHARS,
    MAX_TURN_CHARS,
    MAX_TURNS,
    bounded,
    reads_as_question,
    thread_history,
)
from rag import MAX_HISTORY_TURNS, MAX_QUESTION_CHARS, ThreadTurn
from rag.model.answers import Turn

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def ts(n: int) -> str:
    return f"1700000000.{n:06d}"


def asked(
    n: int, question: str | None, answer: str | None = None, *, asker: str = "U1", posted: tuple[int, ...] = ()
) -> ThreadTurn:
    """A ledger row; `posted`: the ts of the answer's messages, as `complete` records them."""
    reply: dict[str, Any] = {"ts": [ts(p) for p in posted]} if posted else {}
    status = "deleted" if question is None else "answered"
    return ThreadTurn(f"T1/C1/{ts(n)}", asker if question else None, question, answer, status, T0, reply)


def said(n: int, text: str, *, user: str | None = "U2", **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "message", "ts": ts(n), "thread_ts": ts(1), "text": text, **fields}
    if user is not None:
        message["user"] = user
    return message


def shape(history: tuple[Turn, ...]) -> list[tuple[str, str | None, bool]]:
    return [(turn.text, turn.author, turn.from_bot) for turn in history]


def test_the_bounds_are_the_pipelines() -> None:
    assert (MAX_TURNS, MAX_TURN_CHARS) == (MAX_HISTORY_TURNS, MAX_QUESTION_CHARS) == (20, 4000)
    assert MAX_TURN_CHARS <= MAX_HISTORY_CHARS  # the newest turn always fits


def test_people_s_messages_sit_between_the_ledger_s_questions_and_answers_in_the_order_posted() -> None:
    ledger = [asked(3, "<@UBOT> How long is parental leave for the primary carer?", "16 weeks [1].", posted=(5, 6))]
    messages = [
        said(1, "Does anyone know the parental leave rules?", user="U2"),  # the thread's first message
        said(2, "following", user="U3"),
        said(3, "<@UBOT> How long is parental leave for the primary carer?", user="U1"),  # the ledger's question
        said(4, "we're adopting, so that matters", user="U2"),  # said while the answer was written
        said(5, "16 weeks [1]. Sources: Leave Policy", user="UBOT", bot_id="BBOT"),  # the answer, as posted
        said(6, "(continued) Sources", user="UBOT", bot_id="BBOT"),  # its second message
        said(7, "Build passed", bot_id="BCI", subtype="bot_message", user=None),  # another bot
        said(8, "", user="U4", subtype="channel_join"),
        said(9, "and how long is it for the secondary carer?", user="U1"),  # the question itself
        said(10, "too late to count", user="U2"),
    ]
    history = thread_history(ledger, messages, before=ts(9))
    assert shape(history) == [
        ("Does anyone know the parental leave rules?", "U2", False),
        ("following", "U3", False),
        ("<@UBOT> How long is parental leave for the primary carer?", "U1", False),
        ("we're adopting, so that matters", "U2", False),
        ("16 weeks [1].", None, True),
        ("Build passed", None, True),
    ]


def test_each_message_counts_once_whatever_was_edited_deleted_or_read_twice() -> None:
    ledger = [
        asked(2, "<@UBOT> How much is the stipend?", "$500 [1].", posted=(3,)),
        asked(4, None, posted=(5,)),  # a question deleted in Slack: no text left in the ledger, gone from Slack
        asked(6, "<@UBOT> And the internet allowance?", "$40 [1]."),  # edited: the ledger holds the new text
    ]
    root = said(1, "Home office questions here", user="U2")
    messages = [
        root,
        said(2, "<@UBOT> How much is the stipend?", user="U1"),
        said(3, "$500 [1].", bot_id="BBOT"),
        root,  # Slack may repeat a thread's parent on a later page
        said(6, "<@UBOT> And the internet allowance?", user="U1", edited={"user": "U1", "ts": ts(7)}),
        said(8, "thanks, edited twice now", user="U2", edited={"user": "U2", "ts": ts(9)}),
    ]
    history = thread_history(ledger, messages, before=ts(10))
    texts = [turn.text for turn in history]
    assert texts == [
        "Home office questions here",
        "<@UBOT> How much is the stipend?",
        "$500 [1].",
        "<@UBOT> And the internet allowance?",
        "$40 [1].",
        "thanks, edited twice now",
    ]


def test_the_question_being_answered_is_never_its_own_history() -> None:
    ledger = [asked(2, "<@UBOT> first?", "One."), asked(4, "<@UBOT> edited question?", "Earlier answer.")]
    # an edit re-answered: its own row is skipped by key, and anything from its ts on by time
    history = thread_history(
        ledger, [said(4, "<@UBOT> edited question?", user="U1")], before=ts(4), skip=[ledger[1].key]
    )
    assert [turn.text for turn in history] == ["<@UBOT> first?", "One."]
    later = thread_history(ledger, None, before=ts(3))
    assert [turn.text for turn in later] == ["<@UBOT> first?", "One."]  # a question asked after this one


def test_without_slack_s_messages_the_ledger_s_turns_are_the_history() -> None:
    ledger = [asked(2, "<@UBOT> How much is the stipend?", "$500 [1].", posted=(3,)), asked(5, "and the allowance?")]
    assert shape(thread_history(ledger, None, before=ts(9))) == [
        ("<@UBOT> How much is the stipend?", "U1", False),
        ("$500 [1].", None, True),
        ("and the allowance?", "U1", False),  # still being answered: no answer text yet
    ]
    assert thread_history(ledger, [], before=ts(9)) == thread_history(ledger, None, before=ts(9))
    assert thread_history(ledger, None, before="not a ts") == ()


def test_a_huge_thread_is_bounded_to_the_latest_turns_that_fit() -> None:
    messages = [said(n, f"message {n} " + "x" * 9_000, user=f"U{n % 7}") for n in range(2, 1002)]
    ledger = [asked(1002, "<@UBOT> How much is the stipend?", "y" * 50_000, posted=(1003,))]
    history = thread_history(ledger, messages, before=ts(1004))
    assert 0 < len(history) <= MAX_TURNS
    assert all(len(turn.text) <= MAX_TURN_CHARS for turn in history)
    assert sum(len(turn.text) for turn in history) <= MAX_HISTORY_CHARS
    assert history[-1].from_bot and history[-2].text == "<@UBOT> How much is the stipend?"  # the newest kept
    assert history[-3].text.startswith("message 1001 ")
    many = thread_history([], [said(n, f"short {n}") for n in range(2, 500)], before=ts(600))
    assert [turn.text for turn in many] == [f"short {n}" for n in range(480, 500)]


def test_bounded_keeps_authors_and_order() -> None:
    turns = [Turn("a" * 5000, author="U1"), Turn("b", from_bot=True)]
    assert shape(bounded(turns)) == [("a" * MAX_TURN_CHARS, "U1", False), ("b", None, True)]


@pytest.mark.parametrize(
    "text",
    [
        "Is there a free trial",
        "how do I cancel",
        "  When does it end",
        "the trial is how long?",
        "thanks, that helps",
        "Whatever works for you",  # a question word must stand alone
        "Howdy all",
        "ok",
        "",
        "Has anyone tried it",
        "Could you check?",
        "Why not",
        "whose laptop is this",
        "Mayday",
    ],
)
def test_a_follow_up_reads_as_a_question_as_the_answer_path_reads_one(text: str) -> None:
    """`bot.slack.history.reads_as_question` (which thread replies Candor answers) agrees with the
    answer path's own rule (`rag.pipeline.parts`, not part of the facade)."""
    from rag.pipeline.parts import reads_as_question as answer_path_rule

    assert reads_as_question(text) is answer_path_rule(text)
