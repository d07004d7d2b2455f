"""The failure note of an answer that was made but never reached the asker offers a person, as a
refusal does, in Slack and in Teams; without a trace (nothing was made) or with hand-offs off, it
offers nothing. Pure renderers, asserted on their plain data."""

from __future__ import annotations

import json

from bot.render.wording import FAILURE_NOTE
from bot.slack.blocks import failure_message
from bot.slack.handoff_blocks import HANDOFF
from bot.teams.cards import failure_activity
from bot.teams.handoff_cards import HANDOFF_VERB, with_offer
from tests.answers import TRACE


def test_a_slack_failure_note_with_a_trace_offers_a_person_when_hand_offs_are_on() -> None:
    note = failure_message(TRACE, handoff=True)
    (actions,) = [block for block in note.blocks if block["type"] == "actions"]
    (button,) = actions["elements"]
    assert button["action_id"] == HANDOFF and button["text"]["text"] == "🙋 Ask a person"
    assert json.loads(button["value"]) == {"trace": TRACE, "reason": "abstained"}
    assert note.text == FAILURE_NOTE


def test_a_slack_failure_note_offers_no_person_without_a_trace_or_with_hand_offs_off() -> None:
    for note in (failure_message(None, handoff=True), failure_message(TRACE), failure_message(TRACE, handoff=False)):
        assert all(block["type"] != "actions" for block in note.blocks)


def test_a_teams_failure_note_with_the_offer_keeps_its_text_and_adds_the_action() -> None:
    plain = failure_activity(TRACE)
    offered = with_offer(plain, TRACE, "abstained")
    assert {k: v for k, v in offered.items() if k != "attachments"} == plain
    (card,) = [a["content"] for a in offered["attachments"]]
    (action,) = card["actions"]
    assert (action["type"], action["verb"], action["data"]) == (
        "Action.Execute",
        HANDOFF_VERB,
        {"trace": TRACE, "reason": "abstained"},
    )
