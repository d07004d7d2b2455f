"""`bot.teams.handoff_cards`: assertions on the activities, cards and invoke answers it returns; no
Teams, no Bot Framework, no mocks."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.teams.cards import MAX_ACTIVITY_BYTES, activity_size, answer_activity
from bot.teams.handoff_cards import (
    EMPTY_REPLY,
    HANDOFF_VERB,
    NO_QUESTION,
    NOT_CHECKED,
    REPLY_VERB,
    ReplyForm,
    expert_reply_activity,
    invoke_card,
    invoke_error,
    invoke_message,
    read_action,
    read_ask,
    read_reply_form,
    triage_activity,
    triage_card,
    triage_done_card,
    vote_offer_activity,
    with_handoff_offer,
)
from rag.model.loop import CitedDocument, CitedSource, CuratedAnswer, Handoff
from tests.answers import TRACE, answer

HANDOFF_ID = "6c1f7b1e-2f0a-4d8e-9d5e-7f3b0c2a9e11"
SNEAKY = "Where is [the bike room](https://evil.example.com)? **now** <at>Everyone</at>"


def handoff(**changes: Any) -> Handoff:
    made = Handoff(
        id=HANDOFF_ID,
        trace_id=TRACE,
        platform="teams",
        asker="00000000-0000-4000-8000-00000000a0a1",
        reason="abstained",
        reply_to={
            "reference": {"user": {"id": "29:user-1", "name": "Ada"}, "conversation": {"id": "19:c;messageid=1"}},
            "conversation_type": "channel",
        },
        question="Where do I store my bicycle at the office?",
        answer_text="Bikes go in the basement. [1]",
        route="answered",
        sources=(CitedSource(1, "Facilities guide", "https://intranet.example.com/facilities"),),
    )
    return replace(made, **changes)


def actions(card: dict[str, Any]) -> list[dict[str, Any]]:
    return list(card.get("actions", []))


def texts(card: object, kind: str) -> list[str]:
    """The text of every element of this type (TextBlock, TextRun), depth first."""
    found: list[str] = []
    if isinstance(card, dict):
        if card.get("type") == kind:
            found.append(str(card["text"]))
        for value in card.values():
            found.extend(texts(value, kind))
    elif isinstance(card, list):
        for item in card:
            found.extend(texts(item, kind))
    return found


def inputs(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {element["id"]: element for element in card["body"] if str(element["type"]).startswith("Input.")}


def only_card(activity: dict[str, Any]) -> dict[str, Any]:
    (attached,) = activity["attachments"]
    assert attached["contentType"] == "application/vnd.microsoft.card.adaptive"
    card: dict[str, Any] = attached["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
    assert json.loads(json.dumps(activity)) == activity
    return card


# --- the offer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        (
            {"route": "abstained", "sentences": (), "text": "I don't know - the knowledge base does not cover this."},
            "abstained",
        ),
        ({"route": "low_confidence"}, "low_confidence"),
        ({"unanswered_parts": ("the parking rules",)}, "asked"),
    ],
)
def test_a_refusal_a_low_confidence_or_a_partial_answer_offers_a_person(changes: dict[str, Any], reason: str) -> None:
    made = answer(**changes)
    plain = answer_activity(made)
    offered = with_handoff_offer(plain, made)
    assert {k: v for k, v in offered.items() if k != "attachments"} == plain  # the answer itself is untouched
    (action,) = actions(only_card(offered))
    assert (action["type"], action["title"], action["verb"]) == ("Action.Execute", "🙋 Ask a person", HANDOFF_VERB)
    assert action["data"] == {"trace": TRACE, "reason": reason}
    assert activity_size(offered) - activity_size(plain) < 1_000
    assert activity_size(offered) < MAX_ACTIVITY_BYTES + 1_000  # Teams takes 100 KB


def test_an_answered_question_offers_no_person() -> None:
    made = answer()
    assert with_handoff_offer(answer_activity(made), made) == answer_activity(made)


def test_the_thank_you_for_a_thumbs_down_offers_a_person() -> None:
    card = only_card(vote_offer_activity(TRACE))
    assert "Thanks for the 👎" in texts(card, "TextBlock")[0]
    assert actions(card)[0]["data"] == {"trace": TRACE, "reason": "down_vote"}


def test_the_click_is_read_from_the_invoke_value() -> None:
    value = {"action": {"type": "Action.Execute", "verb": HANDOFF_VERB, "data": {"trace": TRACE}}, "trigger": "manual"}
    verb, data = read_action(value)
    assert (verb, read_ask(data)) == (HANDOFF_VERB, (TRACE, "asked"))  # no reason given: "asked"
    assert read_action({"action": {"type": "Action.Submit", "data": {}}}) == ("", {})
    assert read_action("nonsense") == ("", {})
    assert read_ask({"reason": "abstained"}) is None
    assert read_ask({"trace": TRACE, "reason": "drop table"}) == (TRACE, "asked")


# --- the triage card ---------------------------------------------------------------------------


def test_the_triage_card_shows_the_question_the_answer_its_sources_and_the_trace() -> None:
    activity = triage_activity(handoff(question=SNEAKY))
    card = only_card(activity)
    runs = texts(card, "TextRun")
    assert "Ada asked in a channel:" in runs and SNEAKY in runs and "Bikes go in the basement. [1]" in runs
    assert all("evil" not in block and "Everyone" not in block for block in texts(card, "TextBlock"))  # never markdown
    assert "Candor could not answer." in texts(card, "TextBlock")
    (link,) = [run for run in _runs(card) if run.get("selectAction")]
    assert (link["text"], link["selectAction"]) == (
        "Facilities guide",
        {"type": "Action.OpenUrl", "url": "https://intranet.example.com/facilities"},
    )
    facts = next(element for element in card["body"] if element["type"] == "FactSet")["facts"]
    assert facts == [{"title": "Trace", "value": TRACE}, {"title": "Hand-off", "value": HANDOFF_ID}]
    assert activity["summary"].startswith("A question for a person: Where is")


def test_the_reply_form_is_prefilled_with_the_question_and_sends_the_hand_off() -> None:
    card = triage_card(handoff())
    fields = inputs(card)
    assert list(fields) == ["reply", "curate", "question", "readers", "groups"]
    assert fields["readers"]["value"] == "" and fields["groups"]["value"] == ""  # nothing cited: a choice to make
    assert fields["reply"]["isRequired"] and fields["reply"]["value"] == ""
    assert (fields["curate"]["type"], fields["curate"]["value"]) == ("Input.Toggle", "false")
    assert fields["question"]["value"] == "Where do I store my bicycle at the office?"
    (send,) = actions(card)
    assert (send["verb"], send["data"], send["title"]) == (REPLY_VERB, {"handoff": HANDOFF_ID}, "Reply to asker")


def test_an_answer_from_restricted_documents_is_not_shown() -> None:
    card = triage_card(handoff(restricted=True))
    shown = json.dumps(card)
    assert "restricted documents" in shown
    assert "Bikes go in the basement" not in shown and "Facilities guide" not in shown and "Sources" not in shown


def test_unlinkable_or_very_long_source_urls_are_named_not_linked() -> None:
    sources = (
        CitedSource(1, "Script", "javascript:alert(1)"),
        CitedSource(2, "Long", "https://example.com/" + "a" * 600),
        CitedSource(3, "", None),
    )
    card = triage_card(handoff(sources=sources))
    assert [run for run in _runs(card) if run.get("selectAction")] == []
    assert "Source 3" in texts(card, "TextRun")


def test_the_biggest_hand_off_fits_one_teams_card() -> None:
    sources = tuple(CitedSource(n, "T" * 400, "https://example.com/" + "u" * 480) for n in range(1, 60))
    cited = tuple(CitedDocument("T" * 400, ("g" * 60,)) for _ in range(60))
    big = handoff(question="q" * 4000, answer_text="a" * 30_000, sources=sources, cited=cited)
    assert activity_size(triage_activity(big)) < 28_000
    form = ReplyForm(HANDOFF_ID, "r" * 9000, True, "q" * 5000, ("g" * 900,))
    assert activity_size({"attachments": [triage_card(big, form=form, problem=EMPTY_REPLY)]}) < 28_000


def test_a_form_with_a_problem_comes_back_with_what_was_typed() -> None:
    form = read_reply_form(
        {"handoff": HANDOFF_ID, "reply": "  ", "curate": "true", "question": " Bikes? ", "groups": " hr, , ops "}
    )
    assert form == ReplyForm(HANDOFF_ID, "", True, "Bikes?", ("hr", "ops"))
    assert form.problem(handoff()) == EMPTY_REPLY
    assert replace(form, reply="The bike room.", question="").problem(handoff()) == NO_QUESTION
    assert replace(form, reply="The bike room.").problem(handoff()) == "Choose who may read the curated answer."
    assert replace(form, reply="The bike room.", readers="groups").problem(handoff()) is None
    card = triage_card(handoff(), form=form, problem=form.problem(handoff()))
    assert f"⚠️ {EMPTY_REPLY}" in texts(card, "TextBlock")
    fields = inputs(card)
    assert (fields["curate"]["value"], fields["question"]["value"], fields["groups"]["value"]) == (
        "true",
        "Bikes?",
        "hr, ops",
    )


def test_the_answered_triage_card_says_who_replied_and_what_was_kept() -> None:
    replied = handoff(reply_text="The bike room, next to the loading bay.", status="replied")
    now = datetime.now(UTC)
    curated = CuratedAnswer(
        id=7,
        knowledge_base="handbook",
        question="Bikes?",
        answer="The bike room.",
        author="aad",
        author_name="Ana Diaz",
        access_groups=(),
        created_at=now,
        updated_at=now,
        expires_at=None,
    )
    card = triage_done_card(replied, expert="Ana Diaz", curated=curated, notes=["Keeping it failed (logged)."])
    runs = texts(card, "TextRun")
    assert "actions" not in card and not inputs(card)
    assert any(run.startswith("✅ Ana Diaz replied to the asker. Saved as curated answer #7") for run in runs)
    assert "Reply: The bike room, next to the loading bay." in runs
    assert "⚠️ Keeping it failed (logged)." in runs
    assert "curated" not in json.dumps(triage_done_card(replied, expert="Ana Diaz", curated=None))


# --- the reply the asker gets, and the invoke answers --------------------------------------------


def test_the_reply_mentions_the_asker_names_the_expert_and_says_candor_did_not_check_it() -> None:
    replied = handoff(reply_text="Use the <b>bike room</b>.\n\n[Map](https://evil.example.com)\n")
    activity = expert_reply_activity(replied, expert="Ana *Diaz*")
    paragraphs = activity["text"].split("\n\n")
    assert paragraphs == [
        "<at>Ada</at> **Ana \\*Diaz\\*** answered your question:",
        "Use the &lt;b&gt;bike room&lt;/b&gt;.",
        "\\[Map\\](https://evil.example.com)",
        f"_{NOT_CHECKED}_",
    ]
    assert activity["entities"] == [
        {"type": "mention", "mentioned": {"id": "29:user-1", "name": "Ada"}, "text": "<at>Ada</at>"}
    ]
    assert "feedbackLoopEnabled" not in json.dumps(activity)  # a person's answer: no AI label, no AI feedback


def test_the_invoke_answers_are_universal_action_responses() -> None:
    assert invoke_message("Passed on.") == {
        "statusCode": 200,
        "type": "application/vnd.microsoft.activity.message",
        "value": "Passed on.",
    }
    assert invoke_card({"type": "AdaptiveCard"})["type"] == "application/vnd.microsoft.card.adaptive"
    assert invoke_error(403, "No.") == {
        "statusCode": 403,
        "type": "application/vnd.microsoft.error",
        "value": {"code": "BadRequest", "message": "No."},
    }


def _runs(card: object) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(card, dict):
        if card.get("type") == "TextRun":
            found.append(card)
        for value in card.values():
            found.extend(_runs(value))
    elif isinstance(card, list):
        for item in card:
            found.extend(_runs(item))
    return found
