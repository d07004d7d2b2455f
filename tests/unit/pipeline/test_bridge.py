"""Bridge finding on hand-built first-hop evidence (no database, no model)."""

from __future__ import annotations

from rag.model.evidence import Ranked, ScoredSentence
from rag.model.types import Passage
from rag.pipeline.bridge import describes, find_bridge


def ranked(*texts: str) -> list[Ranked]:
    out = []
    for i, text in enumerate(texts):
        passage = Passage(i, i, f"doc{i}.md", f"Doc {i}", "", text, 1.0 - i / 10, 0.5, 0.0)
        out.append(Ranked(passage, 1.0 - i / 10, (ScoredSentence(passage, 0, text, 1.0 - i / 10, 0.5, 0.5, 1.0),)))
    return out


def test_a_description_becomes_the_name_the_evidence_gives() -> None:
    question = "How much does the plan that includes single sign-on cost per month?"
    assert describes(question)
    bridge = find_bridge(question, ranked("Single sign-on (SSO) is available only on the Business plan."))
    assert bridge is not None
    assert bridge.name == "Business plan"
    assert bridge.question == "How much does the Business plan cost per month?"


def test_a_linked_name_replaces_the_asked_one() -> None:
    question = "How long is data kept for customers on the Team plan?"
    evidence = ranked(
        "The Team plan costs $15 per month.", "The Team plan includes 100 monitors and the Beacon product."
    )
    bridge = find_bridge(question, evidence)
    assert bridge is not None and bridge.name == "Beacon"
    assert bridge.question == "How long is data kept for customers on Beacon?"
    assert bridge.sentence.text.startswith("The Team plan includes")


def test_no_bridge_without_a_link_or_a_description() -> None:
    assert not describes("How many days of annual leave do I get?")
    assert find_bridge("How many days of annual leave do I get?", ranked("Employees get 24 days.")) is None
    assert find_bridge("What does the Team plan cost?", ranked("The Team plan costs $15 per month.")) is None


def test_a_name_grown_a_sibling_or_an_instruction_is_no_bridge() -> None:
    """ "Tervane Systems" is Tervane itself, "Care+ Standard" a sibling of "Care+ Premium", and
    "Use the ..." an instruction: none links the asked name to another thing."""
    question = "How many days do I have to send back a camera bought on the Tervane online shop?"
    assert find_bridge(question, ranked("The Tervane online shop uses the couriers of Tervane Systems.")) is None
    premium = "If I'm on Care+ Premium and I drop my router, what do I pay?"
    assert find_bridge(premium, ranked("Care+ Premium includes everything in Care+ Standard.")) is None
    sdk = "Which API version does brightloom-js 3.8 call?"
    assert find_bridge(sdk, ranked("If you want to use the Brightloom API or the brightloom-js SDK:")) is None
    brand = "Where is Brightloom's support team based?"
    assert find_bridge(brand, ranked("Use the Brightloom status page to see incidents.")) is None
