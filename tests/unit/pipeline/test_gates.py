"""The gates decided by pure functions: self-consistency (offline and judged), rescue, and the
retry rule with its rewritten query."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rag.model.answers import GateOutcome
from rag.model.evidence import Draft, DraftSentence
from rag.pipeline.flow import retry_query, should_retry
from rag.pipeline.gates.rescue import rescue_gate
from rag.pipeline.gates.self_consistency import consistency_gate, judged_gate
from rag.pipeline.rescue import Rescue
from tests.unit.pipeline.stage_data import attempt, passage

ANSWER = "Full-time employees receive 24 days of paid annual leave per year."


def draft(*texts: str) -> Draft:
    return Draft(tuple(DraftSentence(text, (1,), 0) for text in texts))


def test_consistency_passes_when_most_samples_state_the_same_facts() -> None:
    samples = [draft("You get 24 days of leave a year."), draft("Leave: 24 days."), draft("It is 25 days.")]
    gate = consistency_gate([ANSWER], samples, 1)
    assert gate.gate == "self_consistency" and gate.passed
    assert gate.details["samples_agreeing"] == 2 and gate.score == 2 / 3
    assert gate.details["not_in_most_samples"] == []


def test_consistency_fails_on_a_fact_most_samples_do_not_state() -> None:
    samples = [draft("It is 25 days."), draft("You get 24 days."), draft("I cannot say.")]
    gate = consistency_gate([ANSWER], samples, 2)
    assert not gate.passed and gate.attempt == 2
    assert len(gate.details["not_in_most_samples"]) == 1 and "24" in gate.details["not_in_most_samples"][0]
    assert gate.details["abstaining_samples"] == 0  # a sample with a sentence is not abstaining
    assert consistency_gate([ANSWER], [draft(), draft()], 1).details["abstaining_samples"] == 2


@dataclass(frozen=True)
class Comparison:
    same_facts: bool
    differing: tuple[str, ...] = ()


def test_the_judged_gate_needs_a_strict_majority_of_agreeing_samples() -> None:
    samples = [draft("a"), draft("b")]
    split = judged_gate([Comparison(True), Comparison(False, ("25 days",))], samples, "judge-x", 1)
    assert not split.passed and split.details["not_in_most_samples"] == ["25 days"]
    agreed = judged_gate([Comparison(True), Comparison(True)], samples, "judge-x", 1)
    assert agreed.passed and agreed.score == 1.0 and agreed.details["judge"] == "judge-x"


def test_the_rescue_gate_passes_when_any_rejected_claim_found_support() -> None:
    found = passage(7, ANSWER, document="leave.md")
    rescues = [Rescue("claim a", found, 0.8, ()), Rescue("claim b", None, 0.3, ("no re-retrieved passage",))]
    gate = rescue_gate(rescues, 1)
    assert gate.gate == "rescue" and gate.passed and gate.score == 0.5
    assert [s["passage"] for s in gate.details["sentences"]] == ["leave.md", None]
    assert not rescue_gate([Rescue("claim", None, 0.1, ())], 1).passed


def test_a_failed_faithfulness_gate_is_retried_unless_every_part_names_something_unknown() -> None:
    one = ("How many days of annual leave do I get?",)
    made = attempt(one, ((passage(1, ANSWER),),), (), faithful=False)
    assert should_retry(made)
    unknown = replace(made, unknown_names={0: ("Platinum",)})  # more passages will not name what no document does
    assert not should_retry(unknown)
    assert not should_retry(attempt(one, ((passage(1, ANSWER),),), (), faithful=True))
    failed_retrieval = replace(made, gates=(GateOutcome("retrieval_score", False, 0.1, 1), *made.gates[1:]))
    assert not should_retry(failed_retrieval)  # nothing generated from passages not about the question


def test_the_retry_query_keeps_the_content_words() -> None:
    assert retry_query("How many days of annual leave do I get?") == "many days annual leave get"
    assert retry_query("What is it?") == "What is it?"  # nothing but stop words: the part as it was
