"""`bot.slack.blocks`: assertions on the Block Kit data it returns, no Slack, no mocks."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render.wording import FAILURE_NOTE, LOW_CONFIDENCE_NOTE, NO_PREFERENCE_REASON, UNANSWERED_NOTE, shorten
from bot.slack.blocks import (
    FEEDBACK_DOWN,
    FEEDBACK_REASON_CALLBACK,
    FEEDBACK_UP,
    REASON_ACTION,
    REASON_BLOCK,
    SlackMessage,
    answer_messages,
    escape,
    failure_message,
    feedback_ack,
    feedback_reason_modal,
    home_view,
    response_url_body,
    to_mrkdwn,
)
from bot.slack.mrkdwn import pack, split_text
from rag.model.answers import DEFAULT_REFUSAL, AnswerSentence, Conflict
from tests.answers import CONFLICT, TRACE, answer, source

EVIL = "<!channel> & <script>alert(1)</script>"
EVIL_ESCAPED = "&lt;!channel&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;"
OUR_LINK = re.compile(r"<https?://[^\s<>|]+(?:\|[^<>]*)?>|<#[CG][A-Z0-9]+>")


def plain(block_text: dict[str, Any], limit: int) -> None:
    assert block_text["type"] == "plain_text"
    assert 0 < len(block_text["text"]) <= limit


def check_block(block: dict[str, Any]) -> None:
    """The block is valid Block Kit for its type, within Slack's limits."""
    kind = block["type"]
    if kind == "section":
        assert set(block) == {"type", "text"}
        assert block["text"]["type"] == "mrkdwn"
        assert block["text"]["text"].strip() and len(block["text"]["text"]) <= 3000
    elif kind == "context":
        assert set(block) == {"type", "elements"}
        assert 1 <= len(block["elements"]) <= 10
        for element in block["elements"]:
            assert element["type"] == "mrkdwn" and 0 < len(element["text"]) <= 2000
    elif kind == "actions":
        assert 1 <= len(block["elements"]) <= 25 and len(block["block_id"]) <= 255
        for button in block["elements"]:
            assert button["type"] == "button" and 0 < len(button["action_id"]) <= 255
            plain(button["text"], 75)
            assert len(button["value"]) <= 2000
    elif kind == "divider":
        assert block == {"type": "divider"}
    elif kind == "header":
        assert set(block) == {"type", "text"}
        plain(block["text"], 150)
    elif kind == "input":
        plain(block["label"], 2000)
        assert block["element"]["type"] == "plain_text_input" and block["element"]["action_id"]
    else:
        raise AssertionError(f"unexpected block type {kind!r}")


def check_messages(messages: list[SlackMessage]) -> None:
    assert messages
    for index, message in enumerate(messages):
        json.dumps(message.blocks)  # plain data all the way down
        assert 0 < len(message.text) <= 3000
        assert message.text.startswith("(continued)") == (index > 0)
        assert 0 < len(message.blocks) <= 50
        for block in message.blocks:
            check_block(block)
    actions = [(i, j) for i, m in enumerate(messages) for j, b in enumerate(m.blocks) if b["type"] == "actions"]
    assert actions == [(len(messages) - 1, len(messages[-1].blocks) - 1)]


def texts(messages: list[SlackMessage]) -> list[str]:
    """Every mrkdwn text shown, in order."""
    found: list[str] = []
    for message in messages:
        for block in message.blocks:
            if block["type"] == "section":
                found.append(block["text"]["text"])
            elif block["type"] == "context":
                found.extend(element["text"] for element in block["elements"])
    return found


def shown(messages: list[SlackMessage]) -> str:
    return "\n".join(texts(messages))


def lines(messages: list[SlackMessage]) -> list[str]:
    return shown(messages).splitlines()


def test_sentences_carry_citation_markers_that_match_the_sources() -> None:
    messages = answer_messages(answer())
    check_messages(messages)
    body = texts(messages)[0]

    assert body == (
        "Full-time staff get 24 days of annual leave. "
        "<https://intranet.example.com/leave/1|[1]><https://intranet.example.com/leave/3|[3]> "
        "Leave is booked in the HR portal. <https://intranet.example.com/leave/2|[2]>"
    )
    cited = {int(n) for n in re.findall(r"\|\[(\d+)\]>", body)}
    listed = {int(n) for n in re.findall(r"^\[(\d+)\] ", shown(messages), re.MULTILINE)}
    assert cited == listed == {1, 2, 3}


def test_a_citation_without_a_source_or_url_is_a_plain_marker() -> None:
    made = answer(
        sentences=(AnswerSentence("Claim.", (7,)), AnswerSentence("Other.", (1, 1))),
        sources=(source(1, url=None),),
    )
    assert texts(answer_messages(made))[0] == "Claim. [7] Other. [1]"


def test_an_unverified_sentence_is_marked() -> None:
    made = answer(sentences=(AnswerSentence("Perhaps 30 days.", (1,), supported=False),))
    assert "Perhaps 30 days. <https://intranet.example.com/leave/1|[1]> _(not verified)_" in shown(
        answer_messages(made)
    )


def test_each_side_of_an_unsettled_disagreement_is_marked_disputed() -> None:
    made = answer(
        sentences=(
            AnswerSentence("Leave is 24 days.", (1,), disputed=True),
            AnswerSentence("Leave is 20 days.", (2,), disputed=True),
        ),
        sources=(source(1, url=None), source(2, url=None)),
    )
    assert texts(answer_messages(made))[0] == (
        "Leave is 24 days. [1] _(disputed: see below)_ Leave is 20 days. [2] _(disputed: see below)_"
    )


def test_sources_show_link_date_heading_and_a_quoted_snippet() -> None:
    long_excerpt = "Staff accrue leave monthly. " * 20
    made = answer(sources=(source(1), source(2, url=None, excerpt=long_excerpt), source(3, excerpt=" ")))
    messages = answer_messages(made)
    check_messages(messages)
    shown_lines = lines(messages)

    assert "*Sources*" in shown_lines
    assert {"type": "divider"} in messages[0].blocks
    assert (
        "[1] <https://intranet.example.com/leave/1|Leave policy 1> · Annual leave · effective 2026-01-02" in shown_lines
    )
    assert "> Passage 1 about annual leave." in shown_lines
    assert "[2] Leave policy 2 · Annual leave · handbook/leave-2.md · effective 2026-01-03" in shown_lines
    snippet = shown_lines[
        shown_lines.index("[2] Leave policy 2 · Annual leave · handbook/leave-2.md · effective 2026-01-03") + 1
    ]
    assert snippet.startswith("> Staff accrue leave monthly.") and snippet.endswith("monthly.…")
    assert len(snippet) <= 2 + 200
    assert shown_lines[-1].startswith("[3] ")  # a blank excerpt has no quote line


def test_only_http_urls_become_links() -> None:
    for url in ("javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "//evil.example.com", "https://a b"):
        made = answer(sources=(source(1, url=url),), sentences=(AnswerSentence("Claim.", (1,)),))
        text = shown(answer_messages(made))
        assert "<" not in text
        assert "[1] Leave policy 1 · Annual leave · handbook/leave-1.md" in text
    assert "<http://example.com/a?b=1&amp;c=2|Leave policy 1>" in shown(
        answer_messages(answer(sources=(source(1, url="http://example.com/a?b=1&c=2"),)))
    )


def test_conflict_callout_shows_both_values_sources_and_the_preference() -> None:
    messages = answer_messages(answer(conflicts=(CONFLICT,)))
    check_messages(messages)
    callout = next(text for text in texts(messages) if "Sources disagree" in text)

    assert callout.splitlines() == [
        "⚠️ *Sources disagree:* The sources disagree on the number of annual leave days.",
        '• "24 days" in [1] Leave policy 1 (effective 2026-01-02)',
        '• "20 days" in [3] Leave policy 3 (effective 2026-01-04)',
        "Preferred [1] (source 1 has the newer effective date)",
    ]
    assert "Sources disagree" not in shown(answer_messages(answer()))


def test_conflict_without_preference_says_so() -> None:
    no_reason = shown(answer_messages(answer(conflicts=(replace(CONFLICT, preferred=None, reason=""),))))
    assert f"No preference: {NO_PREFERENCE_REASON}" in no_reason
    assert "Preferred" not in no_reason
    with_reason = shown(answer_messages(answer(conflicts=(replace(CONFLICT, preferred=None, reason="same date"),))))
    assert "No preference: same date" in with_reason


def test_conflict_values_that_do_not_pair_with_sources_are_listed_as_given() -> None:
    odd = replace(CONFLICT, values=("24 days", "20 days", "22 days"), sources=(1, 9), preferred=None)
    callout = lines(answer_messages(answer(conflicts=(odd,))))
    assert '• "22 days"' in callout
    assert "Sources: [1] Leave policy 1 (effective 2026-01-02), [9]" in callout


def test_low_confidence_puts_the_caveat_first() -> None:
    made = answer(route="low_confidence", caveats=("Source 3 is from 2019.",))
    messages = answer_messages(made)
    check_messages(messages)

    assert texts(messages)[0] == f"⚠️ {LOW_CONFIDENCE_NOTE}\n• Source 3 is from 2019."
    assert texts(messages)[1].startswith("Full-time staff")
    assert messages[0].text.startswith("(low confidence) Full-time staff")
    assert LOW_CONFIDENCE_NOTE not in shown(answer_messages(answer()))


def test_one_line_per_unanswered_part() -> None:
    parts = ("Can I carry <b>leave</b> over?", "Who approves it?")
    shown_lines = lines(answer_messages(answer(unanswered_parts=parts)))

    assert f"{UNANSWERED_NOTE} Can I carry &lt;b&gt;leave&lt;/b&gt; over?" in shown_lines
    assert f"{UNANSWERED_NOTE} Who approves it?" in shown_lines
    assert UNANSWERED_NOTE not in shown(answer_messages(answer()))


def test_abstained_shows_the_refusal_and_nothing_else() -> None:
    text = f"{DEFAULT_REFUSAL}\nThe documents do not mention a <b>moon</b> office."
    made = answer(route="abstained", text=text, sentences=(), conflicts=(CONFLICT,), unanswered_parts=("x",))
    messages = answer_messages(made)
    check_messages(messages)

    assert texts(messages) == [f"{DEFAULT_REFUSAL}\nThe documents do not mention a &lt;b&gt;moon&lt;/b&gt; office."]
    assert [block["type"] for block in messages[0].blocks] == ["section", "actions"]
    assert messages[0].text.startswith(DEFAULT_REFUSAL)
    empty = answer_messages(answer(route="abstained", text="", sentences=()))
    assert texts(empty) == [DEFAULT_REFUSAL]


@pytest.mark.parametrize(
    ("ask_human", "expected"),
    [
        ("https://help.example.com/ask?topic=hr&x=1", "<https://help.example.com/ask?topic=hr&amp;x=1|Ask a human>"),
        ("C0123ABCD", "Ask a human: <#C0123ABCD>"),
        ("#C0123ABCD", "Ask a human: <#C0123ABCD>"),
        ("the HR desk <!here> & co", "Ask a human: the HR desk &lt;!here&gt; &amp; co"),
        ("javascript:alert(1)", "Ask a human: javascript:alert(1)"),
    ],
)
def test_ask_a_human_on_an_abstention(ask_human: str, expected: str) -> None:
    made = answer(route="abstained", text=DEFAULT_REFUSAL, sentences=())
    messages = answer_messages(made, ask_human=ask_human)
    check_messages(messages)
    assert texts(messages) == [DEFAULT_REFUSAL, expected]
    assert texts(answer_messages(made)) == [DEFAULT_REFUSAL]


def test_ask_a_human_follows_unanswered_parts_only() -> None:
    assert "Ask a human" not in shown(answer_messages(answer(), ask_human="C0123ABCD"))
    with_parts = answer_messages(answer(unanswered_parts=("Who approves it?",)), ask_human="C0123ABCD")
    check_messages(with_parts)
    assert "Ask a human: <#C0123ABCD>" in texts(with_parts)


def test_feedback_buttons_carry_the_trace_id_on_the_last_message() -> None:
    for made in (answer(), answer(route="abstained", text=DEFAULT_REFUSAL, sentences=())):
        messages = answer_messages(made)
        check_messages(messages)
        actions = messages[-1].blocks[-1]
        assert [(b["action_id"], b["value"], b["text"]["text"]) for b in actions["elements"]] == [
            (FEEDBACK_UP, TRACE, "👍 Helpful"),
            (FEEDBACK_DOWN, TRACE, "👎 Not helpful"),
        ]


def test_document_and_question_text_is_escaped_everywhere() -> None:
    made = answer(
        route="low_confidence",
        text=f"Leave {EVIL}.",
        sentences=(AnswerSentence(f"Leave {EVIL}.", (1,)),),
        sources=(
            source(1, title=EVIL, heading=EVIL, excerpt=EVIL),
            source(2, title=EVIL, document=EVIL, url=None),
        ),
        conflicts=(Conflict(EVIL, (EVIL, "x"), (1, 2), None, EVIL),),
        unanswered_parts=(EVIL,),
        caveats=(EVIL,),
    )
    messages = answer_messages(made)
    check_messages(messages)
    text = shown(messages)

    assert "<!channel>" not in text and "<script" not in text
    assert "<!" not in messages[0].text and EVIL_ESCAPED in messages[0].text
    assert text.count(EVIL_ESCAPED) >= 10
    assert f"<https://intranet.example.com/leave/1|{EVIL_ESCAPED}>" in text
    for chunk in texts(messages):
        assert "<" not in OUR_LINK.sub("", chunk)


def test_escape_touches_only_the_three_characters() -> None:
    assert escape("a & b < c > d *e* _f_ `g` \"h\" 'i'") == "a &amp; b &lt; c &gt; d *e* _f_ `g` \"h\" 'i'"
    assert escape("&amp;") == "&amp;amp;"


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and __bold__", "*bold* and *bold*"),
        ("*it* and _it_", "_it_ and _it_"),
        ("~~gone~~", "~gone~"),
        ("`a <b> & c`", "`a &lt;b&gt; &amp; c`"),
        ("```\nx < y\n```", "```\nx &lt; y\n```"),
        ("**bold with _it_ inside**", "*bold with _it_ inside*"),
        ("see [the policy](https://x.example.com/p?a=1&b=2)", "see <https://x.example.com/p?a=1&amp;b=2|the policy>"),
        ("[a | b > c](https://x.example.com)", "<https://x.example.com|a ¦ b &gt; c>"),
        ("[wiki](https://en.wikipedia.org/wiki/Leave_(law))", "<https://en.wikipedia.org/wiki/Leave_(law)|wiki>"),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("[x](ftp://files.example.com/a)", "[x](ftp://files.example.com/a)"),
        ("[x](https://a.example.com/<!channel>)", "[x](https://a.example.com/&lt;!channel&gt;)"),
        (
            "<!channel> <@U123> <https://evil.example.com|ok>",
            "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil.example.com|ok&gt;",
        ),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("**unclosed and *also", "**unclosed and *also"),
        ("plain & simple", "plain &amp; simple"),
    ],
)
def test_markdown_becomes_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_a_4000_character_answer_is_split_into_sections_and_nothing_is_lost() -> None:
    words = [f"word{i}" for i in range(700)]
    one_sentence = " ".join(words)  # about 5,000 characters
    assert len(one_sentence) > 4000
    many = tuple(AnswerSentence(f"Sentence {i} says {'x' * 80}.", (1,)) for i in range(40))
    for sentences in ((AnswerSentence(one_sentence, ()),), many):
        made = answer(sentences=sentences, sources=(source(1, url=None),))
        messages = answer_messages(made)
        check_messages(messages)
        body = [block["text"]["text"] for block in messages[0].blocks if block["type"] == "section"][:-1]
        assert len(body) >= 2 and all(len(text) <= 3000 for text in body)
        expected = " ".join(f"{s.text} [1]" if s.citations else s.text for s in sentences)
        assert " ".join(body).split() == expected.split()


def test_a_sentence_without_spaces_is_cut_and_kept_whole() -> None:
    long_word = "a" * 3500 + "&" + "b" * 4000
    messages = answer_messages(answer(sentences=(AnswerSentence(long_word, ()),), sources=()))
    check_messages(messages)
    body = texts(messages)
    assert len(body) == 3 and "".join(body) == escape(long_word)


def test_eighty_sources_sentences_and_conflicts_fill_several_messages() -> None:
    n = 80
    made = answer(
        sentences=tuple(AnswerSentence(f"Claim {i}: {'detail ' * 250}", (i,)) for i in range(1, n + 1)),
        sources=tuple(source(i, excerpt="Passage text. " * 30) for i in range(1, n + 1)),
        conflicts=tuple(replace(CONFLICT, sources=(i, i + 1)) for i in range(1, n)),
    )
    messages = answer_messages(made)
    check_messages(messages)

    assert len(messages) >= 3
    text = shown(messages)
    for i in range(1, n + 1):
        assert f"Claim {i}:" in text
        assert f"\n[{i}] <https://intranet.example.com/leave/{i}|Leave policy {i}>" in text
    assert text.count("Sources disagree") == n - 1
    assert all(m.text.endswith(messages[0].text) for m in messages)


def test_fallback_text_is_a_short_plain_summary() -> None:
    made = answer(text=("All staff get leave. " * 40) + EVIL)
    summary = answer_messages(made)[0].text
    assert summary.startswith("All staff get leave.") and summary.endswith("…")
    assert len(summary) <= 301 and "<" not in summary
    assert answer_messages(answer(text="", sentences=()))[0].text


def test_a_response_url_body_is_ephemeral_and_never_replaces_what_it_answers() -> None:
    [message] = answer_messages(answer())
    body = response_url_body(message)
    assert body == {
        "text": message.text,
        "blocks": list(message.blocks),
        "response_type": "ephemeral",
        "replace_original": False,
    }
    assert json.loads(json.dumps(body)) == body  # posted as JSON as it is
    assert response_url_body(SlackMessage("Thanks", ())) == {
        "text": "Thanks",
        "response_type": "ephemeral",
        "replace_original": False,
    }


def test_failure_message_carries_the_trace_id() -> None:
    message = failure_message("trace-<1>")
    assert message.text == FAILURE_NOTE
    for block in message.blocks:
        check_block(block)
    assert texts([message]) == [FAILURE_NOTE, "trace trace-&lt;1&gt;"]
    assert [b["type"] for b in failure_message().blocks] == ["section"]
    long_trace = failure_message("x" * 5000)
    for block in long_trace.blocks:
        check_block(block)


def test_feedback_ack_thanks_briefly() -> None:
    up, down = feedback_ack("up"), feedback_ack("down")
    assert up != down and "👍" in up and "👎" in down
    assert all(0 < len(text) <= 150 for text in (up, down))


def test_feedback_reason_modal_shape() -> None:
    view = feedback_reason_modal(TRACE)
    json.dumps(view)

    assert view["type"] == "modal"
    assert view["callback_id"] == FEEDBACK_REASON_CALLBACK and view["private_metadata"] == TRACE
    assert view["submit"]["text"] == "Send" and view["close"]["text"] == "Skip"
    for key in ("title", "submit", "close"):
        plain(view[key], 24)
    (block,) = view["blocks"]
    check_block(block)
    assert block["block_id"] == REASON_BLOCK and block["optional"] is True
    element = block["element"]
    assert element["type"] == "plain_text_input" and element["action_id"] == REASON_ACTION
    assert element["multiline"] is True and element["max_length"] == 2000
    plain(element["placeholder"], 150)


def test_home_view_explains_candor() -> None:
    view = home_view([("HR handbook", 42), ("IT <!here> & co", 1)], ask_human="https://help.example.com")
    json.dumps(view)
    assert view["type"] == "home" and len(view["blocks"]) <= 100
    for block in view["blocks"]:
        check_block(block)
    text = "\n".join(block["text"]["text"] for block in view["blocks"])

    assert "• *HR handbook*: 42 documents" in text
    assert "• *IT &lt;!here&gt; &amp; co*: 1 document" in text and "<!here>" not in text
    for phrase in ("mention", "thread", "direct message", "/candor", "only you", "Follow-ups", "cited"):
        assert phrase in text
    for phrase in ("disagree", "I don't know", "👍", "👎", "<https://help.example.com|Ask a human>"):
        assert phrase in text


def test_home_view_without_knowledge_bases_or_ask_human() -> None:
    text = json.dumps(home_view([]))
    assert "No knowledge bases are loaded yet." in text and "Ask a human" not in text
    many = home_view([(f"KB {i} " + "n" * 90, i) for i in range(500)])
    assert len(many["blocks"]) <= 100
    for block in many["blocks"]:
        check_block(block)
    assert "… and 400 more" in json.dumps(many, ensure_ascii=False)


def test_cutting_never_splits_a_link_or_an_entity() -> None:
    link = "<https://intranet.example.com/a|" + "label " * 50 + ">"
    text = ("x" * 2990) + link + " &amp;" * 100
    pieces = split_text(text, 3000)
    assert all(len(piece) <= 3000 for piece in pieces)
    assert pieces[1].startswith(link)
    assert pack(["a", "", "b"], " ", 3000) == ["a b"]
    assert shorten("one two three", 8) == "one two…"
    assert shorten("  one\n two ", 80) == "one two"


document_text = st.text(max_size=80)
long_text = st.text(min_size=1, max_size=12).map(lambda s: s * 400)


@settings(max_examples=60, deadline=None)
@given(
    sentences=st.lists(st.one_of(document_text, long_text), max_size=40),
    title=document_text,
    excerpt=st.one_of(document_text, long_text),
    part=document_text,
)
def test_any_text_stays_within_limits_and_never_becomes_markup(
    sentences: list[str], title: str, excerpt: str, part: str
) -> None:
    made = answer(
        sentences=tuple(AnswerSentence(text, (1, 2)) for text in sentences),
        sources=(source(1, title=title, excerpt=excerpt), source(2, title=title, url=None)),
        conflicts=(Conflict(part, (part, title), (1, 2), None, ""),),
        unanswered_parts=(part,),
    )
    messages = answer_messages(made, ask_human=title)
    check_messages(messages)
    for chunk in texts(messages):
        assert "<" not in OUR_LINK.sub("", chunk)
    assert "<" not in "".join(m.text for m in messages)


def test_a_note_that_names_its_own_heading_is_not_headed_twice() -> None:
    from bot.render.wording import conflict_note

    assert conflict_note("Sources disagree: the FAQ says 20 days; the policy says 24 days.") == (
        "the FAQ says 20 days; the policy says 24 days."
    )
    assert conflict_note("The sources disagree on the number of days.") == "The sources disagree on the number of days."
