"""`rag.pipeline.synthesis`: the extractive writer's choice of sentences per part."""

from __future__ import annotations

from dataclasses import replace

from rag.model.evidence import PartEvidence, Ranked, ScoredSentence, SynthesisRequest
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.text.facts import clauses
from tests.unit.pipeline.stage_data import passage

BATTERY = "Battery; RT-9: 3000 mAh; RT-9i: 5000 mAh."
RUNTIME = "Battery life; RT-9: up to 5 hours; RT-9i: up to 8 hours."


def part(text: str, scored: dict[str, float]) -> PartEvidence:
    source = passage(1, " ".join(scored))
    sentences = tuple(ScoredSentence(source, i, t, s, s, 0.5, 1.0) for i, (t, s) in enumerate(scored.items()))
    return PartEvidence(text, (Ranked(source, max(scored.values()), sentences),), True)


async def test_two_parts_ranking_the_same_sentence_first_each_get_their_own() -> None:
    size = part("How big is the battery in the RT-9i?", {BATTERY: 0.73, RUNTIME: 0.74})
    hours = part("How many hours does the RT-9i run?", {BATTERY: 0.50, RUNTIME: 0.73})
    request = SynthesisRequest("q", (size, hours), (size.ranked[0].passage,), 1)
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(request)
    assert [(s.part, s.text) for s in draft.sentences] == [(0, BATTERY), (1, RUNTIME)]
    assert draft.unanswered_parts == ()


async def test_the_sentence_stating_the_asked_kind_is_chosen_over_one_scored_a_little_better() -> None:
    question = "How many units can one mesh hold?"
    evidence = part(
        question, {"All current routers can be combined in one mesh network.": 0.8, "A mesh holds up to 5 units.": 0.75}
    )
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(
        SynthesisRequest(question, (evidence,), (evidence.ranked[0].passage,), 1)
    )
    assert "A mesh holds up to 5 units." in [s.text for s in draft.sentences]
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(evidence).text == "A mesh holds up to 5 units."  # type: ignore[union-attr]


def test_a_table_row_is_read_cell_by_cell_with_its_row() -> None:
    assert clauses("Plan: Team+; Monthly billing: $24; Annual billing: $20") == [
        "Plan: Team+ - Monthly billing: $24",
        "Plan: Team+ - Annual billing: $20",
    ]
    assert clauses("Team+ costs $19 on monthly billing, or $16 when billed annually.") == [
        "Team+ costs $19 on monthly billing",
        "$16 when billed annually.",
    ]
    assert clauses("A plain sentence with one statement.") == ["A plain sentence with one statement."]


def test_a_sentence_about_another_case_is_never_the_answer() -> None:
    question = "What term was applied to priests temporarily assigned to a church?"
    evidence = part(
        question,
        {
            "The term cardinal was applied to any priest permanently assigned to a church.": 0.9,
            "A priest temporarily assigned to a church was called a commendatory.": 0.85,
        },
    )
    best = ExtractiveSynthesizer(answer_threshold=0.6).best(evidence)
    assert best is not None and best.text.endswith("was called a commendatory.")
    # far behind the other case's sentence, a sentence says something else: the documents cover
    # the other case, not the one asked
    far = part(
        question,
        {
            "The term cardinal was applied to any priest permanently assigned to a church.": 0.9,
            "Priests were assigned to the churches of Rome.": 0.7,
        },
    )
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(far) is None
    alone = part(question, {"The term cardinal was applied to any priest permanently assigned to a church.": 0.9})
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(alone) is None


async def test_a_far_better_sentence_is_kept_when_the_stating_one_is_far_behind() -> None:
    question = "How many units can one mesh hold?"
    evidence = part(question, {"Every router in the mesh can be a unit of its own.": 0.9, "There are 5 colours.": 0.7})
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(evidence).text.startswith("Every router")  # type: ignore[union-attr]


async def test_signposts_list_intros_and_other_models_are_never_the_answer() -> None:
    question = "What is the battery life of the RT-9i?"
    evidence = part(
        question,
        {
            "This page lists the battery life of every travel router.": 0.95,
            "If the battery runs low, the following applies:": 0.94,
            "The RT-9 runs for up to 5 hours on a charge.": 0.93,
            "The RT-9i runs for up to 8 hours on a charge.": 0.80,
        },
    )
    best = ExtractiveSynthesizer(answer_threshold=0.6).best(evidence)
    assert best is not None and best.text == "The RT-9i runs for up to 8 hours on a charge."


def test_a_field_on_another_models_page_is_not_the_answer() -> None:
    """ "VPN throughput: up to 300 Mbps" names no model, but it sits on the RT-9i's spec sheet."""
    question = "What VPN throughput does the NX-6 Pro reach?"
    spec_sheet = replace(passage(1, "VPN throughput: up to 300 Mbps"), title="RT-9i Spec Sheet")
    line = ScoredSentence(spec_sheet, 0, "VPN throughput: up to 300 Mbps", 0.9, 0.9, 0.8, 1.0)
    evidence = PartEvidence(question, (Ranked(spec_sheet, 0.9, (line,)),), True)
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(evidence) is None
    manual = replace(spec_sheet, title="NX-6 Series Manual (NX-6, NX-6 Pro)")
    own = ScoredSentence(manual, 0, "VPN throughput: up to 300 Mbps", 0.9, 0.9, 0.8, 1.0)
    on_its_page = PartEvidence(question, (Ranked(manual, 0.9, (own,)),), True)
    assert ExtractiveSynthesizer(answer_threshold=0.6).best(on_its_page) is not None


async def test_a_row_holding_an_answer_for_each_part_answers_both() -> None:
    row = "Model: RT-9; Launch: 2020-05-04; End of sale: 2023-06-30; End of security updates: 2024-12-31"
    other = "The RT-9i replaces the RT-9."
    sold = part("When did Tervane stop selling the RT-9?", {row: 0.75, other: 0.7})
    patched = part("When did the RT-9 stop getting security patches?", {row: 0.8, other: 0.6})
    request = SynthesisRequest("q", (sold, patched), (sold.ranked[0].passage,), 1)
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(request)
    assert [(s.part, s.text) for s in draft.sentences] == [(0, f"{row}."), (1, f"{row}.")]
    assert draft.unanswered_parts == ()
