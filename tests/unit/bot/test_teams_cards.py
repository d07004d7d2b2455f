"""`bot.teams.cards`: assertions on the activity dicts it returns, no Teams, no Bot Framework, no mocks."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.render.wording import FAILURE_NOTE, LOW_CONFIDENCE_NOTE, NO_PREFERENCE_REASON, UNANSWERED_NOTE
from bot.teams.cards import (
    MAX_ACTIVITY_BYTES,
    activity_size,
    answer_activity,
    escape,
    failure_activity,
    typing_activity,
    welcome_activity,
)
from bot.teams.feedback import feedback_from_invoke
from rag.model.answers import DEFAULT_REFUSAL, AnswerSentence, Conflict
from tests.answers import CONFLICT, answer, source

MARKER = re.compile(r"(?<!\\)\[(\d+)\]")
AI_LABEL = {
    "type": "https://schema.org/Message",
    "@type": "Message",
    "@context": "https://schema.org",
    "@id": "",
    "additionalType": ["AIGeneratedContent"],
}


def check(activity: dict[str, Any]) -> list[dict[str, Any]]:
    """A valid message activity within the limits; returns its citations."""
    assert json.loads(json.dumps(activity)) == activity  # plain JSON data all the way down
    assert activity_size(activity) == len(json.dumps(activity).encode()) <= MAX_ACTIVITY_BYTES
    assert activity["type"] == "message" and activity["textFormat"] == "markdown"
    assert activity["text"].strip()
    assert activity["channelData"] == {"feedbackLoopEnabled": True}
    [entity] = activity["entities"]
    assert {key: value for key, value in entity.items() if key != "citation"} == AI_LABEL
    citations: list[dict[str, Any]] = entity.get("citation", [])
    assert citations != [] or "citation" not in entity
    for claim in citations:
        assert set(claim) == {"@type", "position", "appearance"} and claim["@type"] == "Claim"
        appearance = claim["appearance"]
        assert appearance["@type"] == "DigitalDocument"
        assert 0 < len(appearance["name"]) <= 80
        assert 0 < len(appearance["abstract"]) <= 160
        assert "url" not in appearance or re.fullmatch(r"https?://\S+", appearance["url"])
        assert len(appearance.get("keywords", [])) <= 3
        assert all(0 < len(keyword) <= 28 for keyword in appearance.get("keywords", []))
        for text in (appearance["name"], appearance["abstract"], *appearance.get("keywords", [])):
            assert "<" not in text and ">" not in text and "](" not in text
    positions = [claim["position"] for claim in citations]
    assert positions == sorted(set(positions))
    assert {int(n) for n in MARKER.findall(activity["text"])} == set(positions)
    return citations


def paragraphs(activity: dict[str, Any]) -> list[str]:
    text: str = activity["text"]
    return text.split("\n\n")


def test_sentences_carry_markers_that_match_the_citations() -> None:
    activity = answer_activity(answer())
    citations = check(activity)

    assert activity["text"] == (
        "Full-time staff get 24 days of annual leave. [1] [3] Leave is booked in the HR portal. [2]"
    )
    assert [claim["position"] for claim in citations] == [1, 2, 3]
    assert citations[0]["appearance"] == {
        "@type": "DigitalDocument",
        "name": "Leave policy 1",
        "url": "https://intranet.example.com/leave/1",
        "abstract": "Passage 1 about annual leave.",
        "keywords": ["Annual leave", "effective 2026-01-02"],
    }


def test_only_cited_sources_with_a_source_get_markers() -> None:
    made = answer(
        sentences=(AnswerSentence("Claim.", (7,)), AnswerSentence("Other.", (2, 2))),
        sources=(source(1), source(2)),
    )
    activity = answer_activity(made)
    citations = check(activity)
    assert activity["text"] == "Claim. Other. [2]"
    assert [claim["position"] for claim in citations] == [2]


def test_an_unverified_sentence_is_marked() -> None:
    made = answer(sentences=(AnswerSentence("Perhaps 30 days.", (1,), supported=False),))
    activity = answer_activity(made)
    check(activity)
    assert activity["text"] == "Perhaps 30 days. [1] _(not verified)_"


def test_each_side_of_an_unsettled_disagreement_is_marked_disputed() -> None:
    made = answer(sentences=(AnswerSentence("Leave is 24 days.", (1,), disputed=True),))
    activity = answer_activity(made)
    check(activity)
    assert activity["text"] == "Leave is 24 days. [1] _(disputed: see below)_"


def test_citation_appearance_is_cut_to_teams_limits() -> None:
    long_title = "A very long policy title that goes on " * 5
    long_excerpt = "Staff accrue leave monthly and may carry over five days. " * 10
    made = answer(sources=(source(1, title=long_title, excerpt=long_excerpt, heading="H" * 40), source(2), source(3)))
    appearance = check(answer_activity(made))[0]["appearance"]
    assert len(appearance["name"]) <= 80 and appearance["name"].endswith("…")
    assert appearance["name"].startswith("A very long policy title")
    assert len(appearance["abstract"]) <= 160 and appearance["abstract"].endswith("…")
    assert not appearance["abstract"].endswith(" …")  # cut on a word boundary
    assert long_excerpt.startswith(appearance["abstract"][:-1])
    assert appearance["keywords"][0] == "H" * 27 + "…"


def test_a_curated_answer_is_cited_with_who_answered_and_when_within_teams_limits() -> None:
    expert = source(1, answered_by="Anastasia Papadopoulou-Williams", excerpt="Bikes go in the bike room.")
    appearance = check(answer_activity(answer(sources=(expert, source(2), source(3)))))[0]["appearance"]
    assert (
        appearance["abstract"]
        == "answered by Anastasia Papadopoulou-Williams on 2026-01-02: Bikes go in the bike room."
    )
    assert appearance["keywords"] == ["Annual leave", "answered 2026-01-02"]  # the whole phrase is 55 characters


def test_a_source_without_excerpt_or_title_still_has_a_name_and_an_abstract() -> None:
    made = answer(
        sentences=(AnswerSentence("Claim.", (1,)),),
        sources=(source(1, title="", document="", excerpt=" ", heading="", effective_date=None),),
    )
    appearance = check(answer_activity(made))[0]["appearance"]
    assert appearance["name"] == "Source 1"
    assert appearance["abstract"] == "Source 1"
    assert "keywords" not in appearance


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "//evil.example.com", "https://a b", None, ""],
)
def test_only_http_urls_reach_a_citation(url: str | None) -> None:
    made = answer(sources=(source(1, url=url),), sentences=(AnswerSentence("Claim.", (1,)),))
    [claim] = check(answer_activity(made))
    assert "url" not in claim["appearance"]


def test_the_ai_label_is_on_every_kind_of_answer() -> None:
    for made in (
        answer(),
        answer(route="low_confidence"),
        answer(route="abstained", text=DEFAULT_REFUSAL, sentences=(), sources=()),
        answer(sentences=(), sources=()),
    ):
        activity = answer_activity(made)
        check(activity)
        assert {key: value for key, value in activity["entities"][0].items() if key != "citation"} == AI_LABEL


def test_conflict_callout_names_both_values_sources_and_the_preference() -> None:
    activity = answer_activity(answer(conflicts=(CONFLICT,)))
    check(activity)
    assert paragraphs(activity)[1] == (
        "⚠️ **Sources disagree:** The sources disagree on the number of annual leave days. "
        '[1] Leave policy 1 (effective 2026-01-02) says "24 days"; '
        '[3] Leave policy 3 (effective 2026-01-04) says "20 days". '
        "Preferred: [1], source 1 has the newer effective date."
    )


def test_conflict_without_preference_says_why() -> None:
    for reason, expected in (("", NO_PREFERENCE_REASON), ("both are current", "both are current")):
        conflict = replace(CONFLICT, note="", preferred=None, reason=reason)
        activity = answer_activity(answer(conflicts=(conflict,)))
        check(activity)
        assert paragraphs(activity)[1].endswith(f'says "20 days". No preference: {expected}.')


def test_conflict_with_a_source_not_in_the_answer_has_no_dangling_marker() -> None:
    conflict = replace(CONFLICT, sources=(1, 9), preferred=9)
    activity = answer_activity(answer(conflicts=(conflict,)))
    check(activity)
    assert 'source 9 says "20 days"' in activity["text"] and "Preferred: source 9" in activity["text"]


def test_conflict_values_and_sources_that_do_not_pair_are_all_listed() -> None:
    conflict = replace(CONFLICT, values=("24 days", "20 days", "22 days"))
    activity = answer_activity(answer(conflicts=(conflict,)))
    check(activity)
    assert '"24 days", "20 days", "22 days" in [1] Leave policy 1' in activity["text"]
    assert "[3] Leave policy 3" in activity["text"]


def test_low_confidence_caveat_comes_first() -> None:
    made = answer(route="low_confidence", caveats=("The 2026 handbook is a draft.",))
    activity = answer_activity(made)
    check(activity)
    assert paragraphs(activity)[:3] == [
        f"⚠️ {escape(LOW_CONFIDENCE_NOTE)}",
        "• The 2026 handbook is a draft.",
        "Full-time staff get 24 days of annual leave. [1] [3] Leave is booked in the HR portal. [2]",
    ]


def test_one_line_per_unanswered_part_then_ask_a_human() -> None:
    made = answer(unanswered_parts=("parental leave", "sick pay"))
    activity = answer_activity(made, ask_human="https://help.example.com/hr")
    check(activity)
    assert paragraphs(activity)[1:] == [
        f"{UNANSWERED_NOTE} parental leave",
        f"{UNANSWERED_NOTE} sick pay",
        "[Ask a human](https://help.example.com/hr)",
    ]
    assert "Ask a human" not in answer_activity(answer(), ask_human="https://help.example.com/hr")["text"]


def test_abstained_shows_the_refusal_and_no_citations() -> None:
    refusal = f"{DEFAULT_REFUSAL}\nThe documents say nothing about a 2027 leave policy."
    made = answer(route="abstained", text=refusal, sources=(source(1),), sentences=(AnswerSentence("x", (1,)),))
    activity = answer_activity(made)
    assert check(activity) == []
    assert paragraphs(activity) == [
        DEFAULT_REFUSAL,  # a "-" inside a line is no list: left as it is
        "The documents say nothing about a 2027 leave policy.",
    ]
    assert "citation" not in activity["entities"][0]
    empty = answer_activity(answer(route="abstained", text="  ", sentences=(), sources=()))
    assert empty["text"] == escape(DEFAULT_REFUSAL)


@pytest.mark.parametrize(
    ("ask_human", "line"),
    [
        ("https://help.example.com/hr", "[Ask a human](https://help.example.com/hr)"),
        ("https://wiki.example.com/HR_(people)", "[Ask a human](https://wiki.example.com/HR_%28people%29)"),
        ("hr@example.com", "Ask a human: hr@example.com"),
        ("javascript:alert(1)", "Ask a human: javascript:alert(1)"),
        ("[HR](javascript:alert(1)) <at>HR</at>", "Ask a human: \\[HR\\](javascript:alert(1)) &lt;at&gt;HR&lt;/at&gt;"),
    ],
)
def test_ask_a_human_forms(ask_human: str, line: str) -> None:
    made = answer(route="abstained", text=DEFAULT_REFUSAL, sentences=(), sources=())
    activity = answer_activity(made, ask_human=ask_human)
    check(activity)
    assert paragraphs(activity)[-1] == line


EVIL = ("<at>Someone</at>", "<script>alert(1)</script>", "[click](javascript:alert(1))")


@pytest.mark.parametrize("evil", EVIL)
def test_document_text_cannot_inject_markup(evil: str) -> None:
    made = answer(
        sentences=(AnswerSentence(f"Before {evil} after.", (1,)),),
        sources=(source(1, title=f"Title {evil}", excerpt=f"Excerpt {evil}", heading=f"Heading {evil}"),),
        conflicts=(Conflict(evil, (evil, "2"), (1, 1), None, evil),),
        unanswered_parts=(evil,),
        caveats=(evil,),
    )
    activity = answer_activity(made)
    [claim] = check(activity)
    text = activity["text"]
    assert "<" not in text and ">" not in text
    assert "](" not in text.replace("\\](", "")  # every link bracket from a document is escaped
    assert "\\[click\\](javascript:alert(1))" in text or "&lt;" in text
    appearance = claim["appearance"]
    assert appearance["name"].startswith("Title ") and appearance["abstract"].startswith("Excerpt ")


def test_escape_keeps_text_readable() -> None:
    assert escape("snake_case and 3 * 4") == "snake_case and 3 \\* 4"
    assert (
        escape("_emphasis_ **bold** `code` ~~gone~~") == "\\_emphasis\\_ \\*\\*bold\\*\\* \\`code\\` \\~\\~gone\\~\\~"
    )
    assert escape("# Heading\nline two") == "\\# Heading line two"
    assert escape("- item") == "\\- item"
    assert escape("2026. A year") == "2026\\. A year"
    assert escape("Terms & <Conditions>") == "Terms &amp; &lt;Conditions&gt;"
    assert escape("[1]: https://evil.example.com") == "\\[1\\]: https://evil.example.com"
    assert MARKER.findall(escape("see [2] and [3]")) == []


def test_a_huge_answer_is_shortened_under_the_limit() -> None:
    filler = ("Annual leave accrues monthly and can be carried over with approval from a manager. " * 7)[:490]
    sources = tuple(source(n, excerpt="Long passage. " * 100, title="T" * 300) for n in range(1, 101))
    made = answer(
        sentences=tuple(
            AnswerSentence(f"Point {n:03}: {filler}", (n % 100 + 1, (n * 7) % 100 + 1)) for n in range(300)
        ),
        sources=sources,
        conflicts=(CONFLICT,),
        unanswered_parts=("parental leave",),
    )
    activity = answer_activity(made)
    check(activity)
    assert activity_size(activity) <= MAX_ACTIVITY_BYTES
    last = paragraphs(activity)[-1]
    dropped = re.fullmatch(r"_\(answer shortened: (\d+) more sentences in the sources\)_", last)
    assert dropped is not None
    kept = paragraphs(activity)[0].count("Point ")
    assert kept > 50 and kept + int(dropped.group(1)) == 300
    assert CONFLICT.values[0] in activity["text"] and "parental leave" in activity["text"]


def test_abstracts_shrink_before_sentences_are_cut() -> None:
    sources = tuple(source(n, excerpt="Passage words " * 20, title="Title " * 20) for n in range(1, 101))
    sentences = tuple(AnswerSentence(f"Sentence {n} about leave.", (n,)) for n in range(1, 101))
    made = answer(sentences=sentences, sources=sources)
    full = answer_activity(made)
    citations = check(full)
    assert "answer shortened" not in full["text"] and len(citations) == 100
    assert activity_size(full) <= MAX_ACTIVITY_BYTES


def test_other_lines_are_left_out_when_sentences_are_not_enough() -> None:
    made = answer(
        route="low_confidence",
        caveats=tuple("caveat " * 200 for _ in range(100)),
        unanswered_parts=tuple("part " * 200 for _ in range(100)),
    )
    activity = answer_activity(made)
    check(activity)
    assert paragraphs(activity)[0] == f"⚠️ {escape(LOW_CONFIDENCE_NOTE)}"
    assert re.search(r"\d+ more notes left out\)_$", activity["text"])


def test_a_huge_refusal_still_fits() -> None:
    made = answer(route="abstained", text="🙈<" * 50_000 + "\n" + "more " * 50_000, sentences=(), sources=())
    activity = answer_activity(made, ask_human="https://help.example.com")
    check(activity)
    assert activity["text"].startswith("🙈&lt;🙈")


def test_failure_activity() -> None:
    plain = failure_activity()
    assert plain == {"type": "message", "textFormat": "markdown", "text": escape(FAILURE_NOTE)}
    with_trace = failure_activity("abc-123 <at>x</at>")
    assert with_trace["text"] == f"{escape(FAILURE_NOTE)}\n\n_trace abc-123 &lt;at&gt;x&lt;/at&gt;_"
    assert "entities" not in with_trace


def test_typing_activity() -> None:
    assert typing_activity() == {"type": "typing"}


def test_welcome_activity_says_what_candor_knows_and_how_to_ask() -> None:
    activity = welcome_activity([("HR handbook", 12), ("IT <at>help</at>", 1)], ask_human="https://help.example.com")
    assert activity["type"] == "message" and activity["textFormat"] == "markdown"
    text = activity["text"]
    assert "- **HR handbook**: 12 documents" in text
    assert "- **IT &lt;at&gt;help&lt;/at&gt;**: 1 document" in text
    assert "personal chat" in text and "@mention Candor" in text
    assert "cited" in text and "disagree" in text and "I don't know" in text and "👍" in text
    assert text.endswith("Need a person? [Ask a human](https://help.example.com)")
    assert "No knowledge bases are loaded yet." in welcome_activity([])["text"]
    many = welcome_activity([(f"kb{n}", n) for n in range(150)])["text"]
    assert "kb99" in many and "kb100" not in many and "… and 50 more" in many


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": ""}}, ("up", None)),
        (
            {
                "actionName": "feedback",
                "actionValue": {"reaction": "dislike", "feedback": '{"feedbackText":" Wrong "}'},
            },
            ("down", "Wrong"),
        ),
        (
            {"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": '{"feedbackText":""}'}},
            ("up", None),
        ),
        ({"actionName": "feedback", "actionValue": {"reaction": "dislike"}}, ("down", None)),
        (
            {"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": {"feedbackText": "ok"}}},
            ("up", "ok"),
        ),
        (
            {"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": "plain words"}},
            ("up", "plain words"),
        ),
        ({"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": "{}"}}, ("up", None)),
    ],
)
def test_feedback_from_invoke(value: dict[str, Any], expected: tuple[str, str | None]) -> None:
    assert feedback_from_invoke(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({}, "actionName"),
        ({"actionName": "other", "actionValue": {"reaction": "like"}}, "actionName"),
        ({"actionName": "feedback"}, "actionValue"),
        ({"actionName": "feedback", "actionValue": "like"}, "actionValue"),
        ({"actionName": "feedback", "actionValue": {"reaction": "love"}}, "reaction"),
        ({"actionName": "feedback", "actionValue": {"reaction": None}}, "reaction"),
        ({"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": 3}}, "feedback"),
        (
            {"actionName": "feedback", "actionValue": {"reaction": "like", "feedback": '{"feedbackText": 3}'}},
            "feedbackText",
        ),
        (["feedback"], "object"),
    ],
)
def test_feedback_from_invoke_rejects_malformed_values(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        feedback_from_invoke(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(max_size=600), max_size=40),
    titles=st.lists(st.text(max_size=200), min_size=1, max_size=30),
    citations=st.lists(st.lists(st.integers(0, 35), max_size=4), max_size=40),
    route=st.sampled_from(["answered", "low_confidence", "abstained"]),
    scale=st.sampled_from([1, 400]),
)
def test_any_text_gives_valid_json_under_the_limit_with_matching_markers(
    texts: list[str], titles: list[str], citations: list[list[int]], route: str, scale: int
) -> None:
    sources = tuple(
        source(n, title=title, excerpt=title * 3, heading=title[:30], url="javascript:x" if n % 2 else source(n).url)
        for n, title in enumerate(titles, start=1)
    )
    sentences = tuple(
        AnswerSentence(text * scale, tuple(citations[i]) if i < len(citations) else ()) for i, text in enumerate(texts)
    )
    made = answer(
        route=route,
        text=" ".join(texts) or DEFAULT_REFUSAL,
        sentences=sentences,
        sources=sources,
        conflicts=(Conflict(titles[0], (titles[0], "x"), (1, 2), 1, titles[0]),),
    )
    activity = answer_activity(made, ask_human=titles[0] or None)
    check(activity)  # valid JSON, under the limit, every [n] has its citation and every citation its [n]
    assert "<" not in activity["text"] and ">" not in activity["text"]
