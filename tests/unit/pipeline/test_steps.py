"""The steps of one attempt (rag/pipeline/steps.py) and the flow that runs them (rag/pipeline/flow.py),
each with the real offline parts and the default embedder, passages kept in memory instead of Postgres."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from rag.backends.embeddings import build_embedder
from rag.config import load_settings
from rag.errors import ConfigError, LLMError
from rag.model.answers import GateOutcome, Question
from rag.model.evidence import (
    Checked,
    Draft,
    DraftConflict,
    DraftSentence,
    PartEvidence,
    Query,
    Ranked,
    SynthesisRequest,
)
from rag.model.ports import Embedder
from rag.model.types import AccessScope, Passage, Vector
from rag.pipeline.attempt import Attempt, Clock, Run
from rag.pipeline.critic import EvidenceVerifier
from rag.pipeline.criticise import Criticise
from rag.pipeline.flow import GatedAttempt, PipelineConfig, best_of, retry_query, should_retry
from rag.pipeline.rescue import ClaimRescuer
from rag.pipeline.steps import (
    CheckConsistency,
    Conclude,
    ConfirmWriterConflicts,
    Prober,
    Retrieve,
)
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.pipeline.understand import understand
from tests.unit.pipeline.stage_data import passage, ranked

LEAVE = "Full-time employees receive 24 days of paid annual leave per calendar year."
PARKING = "Staff parking at the Leeds office is free for employees who register their car."
LUNCH = "The canteen serves lunch from 12:00 to 14:00 on weekdays."


class MemoryRetriever:
    """The `Retriever` port over a few passages in memory: the k nearest by cosine, as dense search does."""

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self.embedder = embedder
        self.texts = list(texts)
        self.asked: list[str] = []

    async def run(
        self, query: str, scope: AccessScope, *, k: int | None = None, vector: Vector | None = None
    ) -> list[Passage]:
        self.asked.append(query)
        rows = np.asarray(await self.embedder.embed([query, *self.texts]), dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        cosines = rows[1:] @ rows[0]
        order = sorted(range(len(self.texts)), key=lambda i: -cosines[i])[: k or 5]
        return [passage(i + 1, self.texts[i], cosine=float(cosines[i])) for i in order]


async def no_frequencies(text: str, scope: AccessScope) -> Mapping[str, float]:
    return {}


class RefusingSampler:
    """A sampling writer whose model is down: the self-consistency gate must say it did not run."""

    name = "sampler"

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        raise AssertionError("only sampling is asked of it here")

    async def sample(self, request: SynthesisRequest, n: int, *, temperature: float) -> list[Draft]:
        raise LLMError("the model is unavailable")


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Embedder:
    home = tmp_path_factory.mktemp("steps-home")
    return build_embedder(load_settings(home=home, models_dir=models_dir, database_url=None))


def run_for(question: str, *, k: int = 3) -> Run:
    understood = understand(Question(question))
    return Run(understood, AccessScope(), understood.parts, k, Clock({}))


async def test_retrieve_keeps_each_parts_shortlist_and_gates_on_the_best_cosine(embedder: Embedder) -> None:
    retriever = MemoryRetriever(embedder, [LEAVE, PARKING, LUNCH])
    step = Retrieve(Prober(embedder, no_frequencies), retriever, threshold=0.3)
    run = run_for("How many days of annual leave do I get?")
    attempt = await step.run(Attempt(1, run.understood.parts), run)
    assert attempt.gates[-1].gate == "retrieval_score" and attempt.gates[-1].passed
    assert attempt.shortlists[0][0].text == LEAVE
    assert [p.text for p in attempt.probes] == list(run.understood.parts)
    assert not attempt.ended
    assert run.clock.timings["retrieve"] > 0


async def test_a_failed_retrieval_gate_ends_the_attempt_before_anything_is_written(embedder: Embedder) -> None:
    config = PipelineConfig(retrieval_threshold=0.99)
    retriever = MemoryRetriever(embedder, [LEAVE, PARKING, LUNCH])
    verifier = EvidenceVerifier(embedder)
    # no reranker and no writer: a step after retrieval would fail on them
    flow = GatedAttempt(config, embedder, retriever, no_frequencies, None, None, verifier)  # type: ignore[arg-type]
    attempt = await flow(understand(Question("How many days of annual leave do I get?")), AccessScope(), 1)
    assert [g.gate for g in attempt.gates] == ["retrieval_score"]
    assert attempt.ended and attempt.draft is None and not attempt.checked
    assert set(attempt.timings) == {"retrieve"}


async def test_the_critic_rescues_a_sentence_another_passage_supports(embedder: Embedder) -> None:
    retriever = MemoryRetriever(embedder, [LUNCH, LEAVE])
    verifier = EvidenceVerifier(embedder)
    step = Criticise(verifier, ClaimRescuer(retriever, verifier), rescue=True)
    lunch = passage(1, LUNCH)
    draft = Draft((DraftSentence(LEAVE, (1,), 0),))  # cites the lunch passage, which does not support it
    before = Attempt(
        1,
        ("How much annual leave?",),
        evidence=(PartEvidence("How much annual leave?", ranked(lunch), True),),
        draft=draft,
    )
    after = await step.run(before, run_for("How much annual leave?"))
    [sentence] = after.checked
    assert sentence.supported and sentence.reasons[0] == "rescued"
    assert sentence.passages[0].text == LEAVE
    assert after.gate("rescue") is not None and after.gate("rescue").passed  # type: ignore[union-attr]
    assert before.checked == ()  # the step returned a new attempt


async def test_without_rescue_a_rejected_sentence_stays_rejected(embedder: Embedder) -> None:
    retriever = MemoryRetriever(embedder, [LUNCH, LEAVE])
    verifier = EvidenceVerifier(embedder)
    step = Criticise(verifier, ClaimRescuer(retriever, verifier), rescue=False)
    lunch = passage(1, LUNCH)
    draft = Draft((DraftSentence(LEAVE, (1,), 0), DraftSentence(LUNCH, (7,), 0)))
    before = Attempt(1, ("q",), evidence=(PartEvidence("q", ranked(lunch), True),), draft=draft)
    after = await step.run(before, run_for("How much annual leave?"))
    assert [c.supported for c in after.checked] == [False, False]
    assert after.checked[1].reasons == ("cites no passage that exists",)
    assert after.gate("rescue") is None and retriever.asked == []


async def test_a_supported_sentence_about_a_name_no_document_mentions_is_not_delivered(embedder: Embedder) -> None:
    verifier = EvidenceVerifier(embedder)
    step = Criticise(verifier, ClaimRescuer(MemoryRetriever(embedder, [LEAVE]), verifier), rescue=True)
    leave = passage(1, LEAVE)
    before = Attempt(
        1,
        ("How much leave do NW-900 owners get?",),
        evidence=(PartEvidence("q", ranked(leave), True),),
        draft=Draft((DraftSentence(LEAVE, (1,), 0),)),
        unknown_names={0: ("NW-900",)},
    )
    after = await step.run(before, run_for("How much leave do NW-900 owners get?"))
    assert not after.checked[0].supported
    assert "NW-900" in after.checked[0].reasons[-1]


async def test_writer_conflict_notes_are_believed_only_when_the_passages_confirm_them() -> None:
    old = passage(1, LEAVE.replace("24", "20"), document="faq.md")
    new = passage(2, LEAVE, document="policy.md")
    evidence = (PartEvidence("q", ranked(old, new), True),)
    notes = (
        DraftConflict("The FAQ says 20 days, the policy 24 days.", ("20 days", "24 days"), (1, 2)),
        DraftConflict("One passage says 30 days.", ("30 days", "24 days"), (1, 2)),
    )
    attempt = Attempt(1, ("q",), evidence=evidence, draft=Draft((), conflicts=notes))
    after = await ConfirmWriterConflicts().run(attempt, run_for("How much leave?"))
    gate = after.gate("writer_conflicts")
    assert gate is not None and not gate.passed and gate.score == 0.5
    assert len(after.writer_conflicts) == 1
    found = after.writer_conflicts[0]
    assert {found.chosen_value.surface, found.other_value.surface} == {"20 days", "24 days"}


async def test_self_consistency_runs_only_for_high_stakes_knowledge_bases_and_says_when_it_could_not() -> None:
    leave = passage(1, LEAVE)
    supported = (Checked(LEAVE, (leave,), 0, True, 0.9, (), 0),)
    attempt = Attempt(1, ("q",), draft=Draft((DraftSentence(LEAVE, (1,), 0),)), checked=supported)
    run = run_for("How much leave?")
    ordinary = CheckConsistency(RefusingSampler(), knowledge_bases=frozenset({"hr"}), samples=3)
    assert (await ordinary.run(attempt, run)).gates == ()
    marked = CheckConsistency(RefusingSampler(), knowledge_bases=frozenset({"*"}), samples=3)
    gate = (await marked.run(attempt, run)).gate("self_consistency")
    assert gate is not None and gate.passed
    assert "unavailable" in str(gate.details)


async def test_conclude_adds_faithfulness_and_completeness() -> None:
    leave = passage(1, LEAVE)
    checked = (Checked(LEAVE, (leave,), 0, True, 0.9, (), 0), Checked("Made up.", (leave,), 1, False, 0.1, ("no",), 1))
    parts = ("How much leave?", "Is there a gym?")
    evidence = tuple(PartEvidence(p, ranked(leave), True) for p in parts)
    attempt = Attempt(1, parts, evidence=evidence, checked=checked, draft=Draft(()))
    after = await Conclude("v", max_unsupported=1, min_support=0.6).run(attempt, run_for("q"))
    assert [g.gate for g in after.gates] == ["faithfulness", "completeness"]
    completeness = after.gate("completeness")
    assert completeness is not None and not completeness.passed and completeness.score == 0.5


def test_the_retry_is_made_when_faithfulness_failed_on_found_passages() -> None:
    def attempt_with(*gates: GateOutcome, unknown: Mapping[int, tuple[str, ...]] | None = None) -> Attempt:
        return Attempt(1, ("q",), gates=gates, unknown_names=unknown or {})

    found, unfaithful = GateOutcome("retrieval_score", True, 0.5, 1), GateOutcome("faithfulness", False, 0.0, 1)
    assert should_retry(attempt_with(found, unfaithful))
    assert not should_retry(attempt_with(GateOutcome("retrieval_score", False, 0.1, 1), unfaithful))
    assert not should_retry(attempt_with(found, GateOutcome("faithfulness", True, 1.0, 1)))
    assert not should_retry(attempt_with(found, unfaithful, unknown={0: ("NW-900",)}))
    assert retry_query("How many days of annual leave do I get?") == "many days annual leave get"


def test_the_retry_is_delivered_when_it_did_at_least_as_well() -> None:
    leave = passage(1, LEAVE)
    good = Attempt(2, ("q",), checked=(Checked(LEAVE, (leave,), 0, True, 0.9, (), 0),))
    empty = Attempt(1, ("q",))
    assert best_of((empty, good)) is good
    assert best_of((good, empty)) is good
    assert best_of((empty, Attempt(2, ("q",)))).number == 2


class FirstIsBest:
    """The `Reranker` port keeping retrieval's order (the premise check reads the shortlist, not the order)."""

    name = "first-is-best"

    async def rerank(self, query: Query, passages: Sequence[Passage], *, top_k: int | None = None) -> list[Ranked]:
        return list(ranked(*passages))


async def test_rule_families_switched_off_leave_their_steps_out(embedder: Embedder) -> None:
    """`CANDOR_RULES_OFF` (issue 40's ablation): the switched-off families' steps are not run."""
    retriever = MemoryRetriever(embedder, [LEAVE, PARKING, LUNCH])
    verifier = EvidenceVerifier(embedder)
    writer = ExtractiveSynthesizer(answer_threshold=0.3)

    def flow(*off: str) -> GatedAttempt:
        config = PipelineConfig(retrieval_threshold=0.1, rules_off=frozenset(off))
        return GatedAttempt(config, embedder, retriever, no_frequencies, FirstIsBest(), writer, verifier)

    kinds = {type(step).__name__ for step in flow().steps}
    assert {"BridgeHops", "CheckRelevance", "Rerank"} <= kinds
    kinds = {type(step).__name__ for step in flow("bridge", "relevance").steps}
    assert not {"BridgeHops", "CheckRelevance"} & kinds and {"Rerank", "Conclude"} <= kinds
    # the premise: "NW-900" is in no passage; on, the part is not answered from them; off, it is
    question = understand(Question("How many days of annual leave does the NW-900 give?"))
    on = await flow()(question, AccessScope(), 1)
    off = await flow("premise")(question, AccessScope(), 1)
    assert on.unknown_names == {0: ("NW-900",)} and not on.evidence[0].retrieved
    assert off.unknown_names == {} and off.evidence[0].retrieved


def test_rules_off_reads_a_json_list_of_known_families(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CANDOR_RULES_OFF", '["bridge", "premise", "codes", "relevance-place"]')
        assert load_settings(home=tmp_path).rules_off == ["bridge", "premise", "codes", "relevance-place"]
        patch.setenv("CANDOR_RULES_OFF", '["spelling"]')
        with pytest.raises(ConfigError, match=r"rules_off|CANDOR_RULES_OFF"):
            load_settings(home=tmp_path)
