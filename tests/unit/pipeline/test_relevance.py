"""`rag.pipeline.relevance`: an answer states the kind of value its question asks for, and the
`relevance` step withholds a part's answer that does not."""

from __future__ import annotations

import pytest

from rag.model.answers import Question
from rag.model.evidence import Checked, Draft
from rag.model.types import AccessScope
from rag.pipeline.attempt import Attempt, Clock, Run, dropped
from rag.pipeline.relevance import relevance, states
from rag.pipeline.steps import CheckRelevance
from rag.pipeline.understand import answer_type, understand
from rag.text.switches import rules_off
from tests.unit.pipeline.stage_data import passage


@pytest.mark.parametrize(
    ("question", "sentence", "stated"),
    [
        ("How long is the notice period?", "The notice period is one month for all staff.", True),
        ("How long is the notice period?", "Holidays taken during the notice period are paid out.", False),
        ("How many routers can I link in one mesh?", "All current routers can be combined in one mesh.", False),
        ("How many routers can I link in one mesh?", "A mesh can hold up to five units.", True),
        ("How many republics made up the USSR?", "Russia became one of six republics.", True),
        ("When did Töpffer draw cartoons?", "His cartoon strips of the 1830s became popular.", True),
        ("When were cardinals a privileged class?", "By the 8th century the cardinals were a class apart.", True),
        ("Who approves leave?", "Leave is approved by your line manager.", True),
        ("How many routers can I link in one mesh?", "A mesh can hold up to 5 units.", True),
        ("When did SCIM leave beta?", "SCIM provisioning became generally available on 14 May 2025.", True),
        ("When did SCIM leave beta?", "SCIM 2.0 provisioning on Enterprise.", False),
        ("Which city are the EU servers in?", "EU workspaces are hosted in Frankfurt.", True),
        ("Which city are the EU servers in?", "EU workspaces are hosted in our own data centre.", False),
        ("Where is the support team based?", "US base URL: https://us.api.example.invalid", False),
        ("Where is the support team based?", "Support hubs: Dublin and Austin", True),
        ("Where is the support team based?", "Our support team works from Dublin and Austin.", True),
        ("Where do repairs from Germany go?", "Repair centre: Tilburg, Netherlands; Turnaround: 7 days", True),
        ("Which city are the EU servers in?", "EU region – Frankfurt, Germany (AWS eu-central-1)", True),
        (  # the value is in a clause about another plan
            "We're on Enterprise. How quickly should support respond?",
            "On Team+ you get a first reply within 8 working hours, and Enterprise customers have a dedicated"
            " support line.",
            False,
        ),
        (
            "We're on Enterprise. How quickly should support respond?",
            "On Enterprise you get a first reply within 1 hour, and Team+ customers have a support line.",
            True,
        ),
        (  # the only duration is in a clause saying none of the question's words
            "How long can my server take to answer a webhook before you count it as a failure?",
            "Re-enable it from the Webhooks page once your server is fixed; events from the period when it was"
            " disabled can be replayed from the same page for up to 7 days.",
            False,
        ),
        (
            "How long can my server take to answer a webhook?",
            "Your server must answer within 10 seconds; otherwise the delivery fails.",
            True,
        ),
        (  # a table row's cells are all about its first cell
            "What uptime percentage do you commit to for Team+ customers?",
            "Plan: Team+; Monthly Uptime Percentage commitment: 99.9%",
            True,
        ),
        (  # names, none of them in a place's position
            "Where is Brightloom's support team based?",
            'This Service Level Agreement ("SLA") is part of the agreement between Brightloom Labs Ltd. and customers'
            " on the Team+ and Enterprise plans.",
            False,
        ),
        ("Who heads security?", "Security is led by Hannah Lindqvist.", True),
        ("Who were the first cardinals?", "The first cardinals were the deacons of the city.", True),
        ("Is there a free trial?", "Every workspace starts on a trial.", True),
        ("How do I reset my PIN?", "Open Settings and choose Reset PIN.", True),
        ("How much does Northwind contribute to my pension?", "Northwind is at 14 Wharf Street, Leeds.", False),
        ("How much does Northwind contribute to my pension?", "Northwind adds 5% of your salary.", True),
        ("How many devices does the RT-9i support?", "Update the RT-9i to v3.2.1.", False),
        ("Which base URL do US workspaces call?", "Always call the base URL for your region.", False),
        ("Which base URL do US workspaces call?", "US workspaces call https://us.api.example.com/v2.", True),
        ("what IP do i type in the browser?", "Open 192.168.50.1 in a browser.", True),
        ("What email address do I write to?", "Write to psirt@tervane.invalid with the details.", True),
        ("What email address do I write to?", "See the report.pdf for details.", False),  # a file is no host
        (  # the value the question gives is not the one it asks for
            "Last month's uptime was 99.5%. How much credit are we owed?",
            "A 99.5% monthly uptime commitment, backed by service credits.",
            False,
        ),
        ("Last month's uptime was 99.5%. How much credit are we owed?", "Below 99.5%, the credit is 10%.", True),
        # about another case than the one asked, whatever the kind (rag/text/swaps.py)
        ("What is a priest temporarily assigned called?", "A priest permanently assigned is called a cardinal.", False),
        ("How many staff work in the eighth district?", "40 staff work in the ninth district.", False),
        ("Which see does not have its own bishop?", "Each see has its own bishop.", False),
        ("Is the office open on Sundays?", "The office is closed on Sundays.", True),  # yes/no: that is the answer
        # a value of another measure than the one asked (rag/text/measures.py)
        ("What is the population of Broken Bow?", "The centre lies 10 miles northwest of Broken Bow.", False),
        ("What is the population of Rush Township?", "Rush Township is one of the sixteen townships.", False),
        ("What is the population of Port Vincent?", "Port Vincent had a population of 472.", True),
        ("How much does a repair cost?", "Repairs take 5 business days.", False),
        ("How many unused leave days can I carry over?", "You can carry over up to 5 days.", True),
        ("What does Care+ Premium cost?", "There are two plans, Care+ Standard and Care+ Premium.", False),
        ("How many plans are there?", "There are two plans, Care+ Standard and Care+ Premium.", True),
        ("What's the deadline for a Delay Repay claim?", "Claim within 28 days of the delayed journey.", True),
        ("How many wheelchair spaces are on a train?", "Trains are Class 48 units, built in 2019.", False),
    ],
)
def test_an_answer_states_the_kind_of_value_asked(question: str, sentence: str, stated: bool) -> None:
    assert relevance(question, [sentence]).stated is stated


def test_a_sentence_about_another_case_is_counted_and_does_not_answer() -> None:
    question = "Who signs off the maximum travel budget?"
    checked = relevance(
        question,
        [
            "The minimum travel budget is signed off by a team lead.",
            "The maximum travel budget is signed off by the CFO.",
        ],
    )
    assert checked.stated and [why for _, why in checked.other_cases] == ["opposite: 'maximum' -> 'minimum'"]
    assert relevance(question, ["The minimum travel budget is signed off by a team lead."]).as_json() == {
        "wanted": "person",
        "stated": False,
        "other_cases": [
            {
                "sentence": "The minimum travel budget is signed off by a team lead.",
                "why": "opposite: 'maximum' -> 'minimum'",
            }
        ],
    }


def test_any_of_a_parts_sentences_may_state_it() -> None:
    question = "How long is the notice period?"
    assert relevance(question, ["Notice is given in writing.", "It lasts 30 days."]).stated
    assert states("date", "Version 2 shipped in 2024.") and not states("date", "Version 2 shipped.")


async def test_a_part_whose_answer_states_nothing_asked_is_withheld_and_says_why() -> None:
    understood = understand(Question("How long is the notice period, and who approves leave?"))
    policy = passage(1, "x")
    checked = (
        Checked("Holidays taken during the notice period are paid out.", (policy,), 0, True, 0.9, (), 0),
        Checked("Leave is approved by Maria Lopez.", (policy,), 1, True, 0.9, (), 1),
    )
    attempt = Attempt(1, understood.parts, draft=Draft(()), checked=checked)
    after = await CheckRelevance().run(attempt, Run(understood, AccessScope(), understood.parts, 3, Clock({})))
    gate = after.gate("relevance")
    assert gate is not None and not gate.passed and gate.score == 0.5
    assert [c.text for c in after.supported] == ["Leave is approved by Maria Lopez."]
    [withheld] = dropped([after])
    assert withheld.stage == "focus" and "states no quantity" in withheld.reasons[0]


async def test_parts_asking_for_no_value_get_no_gate() -> None:
    understood = understand(Question("Is there a free trial?"))
    checked = (Checked("Every workspace starts on a trial.", (passage(1, "x"),), 0, True, 0.9, (), 0),)
    attempt = Attempt(1, understood.parts, draft=Draft(()), checked=checked)
    after = await CheckRelevance().run(attempt, Run(understood, AccessScope(), understood.parts, 3, Clock({})))
    assert after.gate("relevance") is None and len(after.supported) == 1


@pytest.mark.parametrize(
    ("question", "sentence", "stated"),
    [  # found by review: right answers the first rules withheld, and non-answers they let through
        ("What time does support open?", "Support opens at 9am UK time on weekdays.", True),
        ("When is payday?", "Staff are paid on the last working day of each month.", True),
        ("How often are backups taken?", "Backups are taken nightly.", True),
        ("How many ports does the RT-9 have?", "The RT-9 is our flagship home router.", False),
        ("Which office does the design team work from?", "Acme is a hybrid company.", False),
        ("When did the plan launch?", "You may cancel the plan at any time.", False),
        ("When did the plan launch?", "The plan launched in May 2024.", True),
    ],
)
def test_times_weekdays_and_frequencies_answer_and_codes_and_verbs_do_not(
    question: str, sentence: str, stated: bool
) -> None:
    assert relevance(question, [sentence]).stated is stated


UNSTATED = {  # each kind checked, a question asking for it and a sentence stating none
    "quantity": ("How long is the notice period?", "Holidays taken during the notice period are paid out."),
    "date": ("When did the plan launch?", "You may cancel the plan at any time."),
    "place": ("Which city are the EU servers in?", "EU workspaces are hosted in our own data centre."),
    "address": ("Which base URL do US workspaces call?", "Always call the base URL for your region."),
}


def test_each_kind_switched_off_alone_is_answered_by_any_sentence_and_comes_back_after() -> None:
    """`CANDOR_RULES_OFF='["relevance-quantity"]'` and so on (rag/text/switches.py, issue 40's ablation)."""
    assert {kind: answer_type(question) for kind, (question, _) in UNSTATED.items()} == {k: k for k in UNSTATED}

    def stated() -> dict[str, bool]:
        return {kind: relevance(question, [sentence]).stated for kind, (question, sentence) in UNSTATED.items()}

    assert stated() == dict.fromkeys(UNSTATED, False)
    for kind in UNSTATED:
        with rules_off(frozenset({f"relevance-{kind}"})):
            assert stated() == {k: k == kind for k in UNSTATED}
    assert stated() == dict.fromkeys(UNSTATED, False)
