"""The `Verifier` contract (STYLE.md 5), run against every implementation.

`VerifierContract` holds the tests; each `Test...` subclass provides a `verifier` fixture. A
verifier sees one sentence and the text of the passages it cites, nothing else, so the evidence
here is passage text as the store holds it (list items keep their "- "), and the sentences are what
a writer would make of it: copied, or wrong in one exact detail.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import pytest

from rag.backends.cross_encoders import CrossEncoderVerifier, load_cross_encoder
from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.config import PACKAGED_MINILM
from rag.model.ports import Verifier
from rag.pipeline.critic import EvidenceVerifier
from tests.contract.known_failures import KnownFailures
from tests.tiny_cross_encoders import TinyCrossEncoders

LEAVE = (
    "Parental leave is paid at the full salary:\n"
    "- Primary carers receive 16 weeks of paid parental leave\n"
    "- Secondary carers receive 4 weeks of paid parental leave\n"
    "Parental leave must start within 12 months of the birth or adoption."
)
COLLECTOR = (
    "The NW-200 collector runs inside your network and forwards check results to Beacon Pro. "
    "The NW-200 needs 2 GB of memory and outbound HTTPS access."
)
PLANS = (
    "The Business plan costs $29 per user per month on monthly billing. "
    "The Business plan supports a maximum of 500 users."
)
CANTEEN = "The canteen serves lunch from noon until two. It is closed on public holidays."

SUPPORTED = {
    "leave": ("Primary carers receive 16 weeks of paid parental leave.", [LEAVE]),
    "collector": (
        "The NW-200 collector runs inside your network and forwards check results to Beacon Pro.",
        [COLLECTOR],
    ),
    "plan": ("The Business plan supports a maximum of 500 users.", [PLANS]),
    "second-of-two-passages": ("The canteen serves lunch from noon until two.", [PLANS, CANTEEN]),
}
"""Sentences copied from their evidence (a list item gains its full stop, as a writer cleans it)."""

ALTERED = {
    "number": ("Primary carers receive 18 weeks of paid parental leave.", [LEAVE], "18 weeks"),
    "product-code": (
        "The NW-900 collector runs inside your network and forwards check results to Beacon Pro.",
        [COLLECTOR],
        "NW-900",
    ),
    "plan-name": ("The Platinum plan supports a maximum of 500 users.", [PLANS], "Platinum"),
    "money": ("The Business plan costs $39 per user per month on monthly billing.", [PLANS], "$39"),
}
"""One exact detail changed; the third item is the detail a reason must name."""

UNRELATED = {
    "canteen-for-leave": ("The canteen serves lunch from noon until two.", [LEAVE]),
    "leave-for-collector": ("Employees get 25 days of paid annual leave per year.", [COLLECTOR]),
    "no-content-words": ("It is what it is.", [LEAVE]),
}

EMPTY_EVIDENCE = {"none": [], "blank-passages": ["", "  \n "]}
EMPTY_SENTENCES = {"empty": "", "whitespace": " \n\t "}

ANY_PAIR = {
    **{f"supported-{k}": v for k, v in SUPPORTED.items()},
    **{f"altered-{k}": (s, e) for k, (s, e, _) in ALTERED.items()},
    **{f"unrelated-{k}": v for k, v in UNRELATED.items()},
    "evidence-is-punctuation": ("Primary carers receive 16 weeks of paid parental leave.", ["..."]),
    "sentence-is-a-number": ("16", [LEAVE]),
    "sentence-is-the-evidence": (LEAVE, [LEAVE]),
    "no-evidence": ("Primary carers receive 16 weeks of paid parental leave.", []),
    "no-sentence": ("", [LEAVE]),
}
"""Everything above and some odd shapes: the score must be a number in [0, 1] for all of them."""

FLOAT_SLACK = 1e-6
"""Float rounding allowed past 1 by the shape test; `test_an_exact_copy_scores_at_most_1` allows none."""


class VerifierContract(KnownFailures):
    """What every `Verifier` promises. Subclasses provide the `verifier` fixture."""

    @pytest.fixture
    def verifier(self) -> Verifier:
        raise NotImplementedError("a contract subclass provides the verifier")

    def test_has_a_name_and_an_async_verify(self, verifier: Verifier) -> None:
        assert isinstance(verifier.name, str) and verifier.name.strip()
        assert inspect.iscoroutinefunction(verifier.verify)

    @pytest.mark.parametrize(("sentence", "evidence"), SUPPORTED.values(), ids=SUPPORTED.keys())
    async def test_a_sentence_copied_from_the_evidence_passes(
        self, verifier: Verifier, sentence: str, evidence: Sequence[str]
    ) -> None:
        verdict = await verifier.verify(sentence, evidence)
        assert verdict.passed, verdict
        assert verdict.score >= 0.6, verdict

    @pytest.mark.parametrize(("sentence", "evidence", "detail"), ALTERED.values(), ids=ALTERED.keys())
    async def test_a_changed_exact_detail_fails_and_is_named(
        self, verifier: Verifier, sentence: str, evidence: Sequence[str], detail: str
    ) -> None:
        verdict = await verifier.verify(sentence, evidence)
        assert not verdict.passed, verdict
        assert any(detail in reason for reason in verdict.reasons), verdict.reasons

    async def test_a_value_moved_to_another_subject_fails(self, verifier: Verifier) -> None:
        """16 weeks is in the evidence, but for primary carers: the sentence gives it to the wrong one."""
        verdict = await verifier.verify("Secondary carers receive 16 weeks of paid parental leave.", [LEAVE])
        assert not verdict.passed, verdict

    @pytest.mark.parametrize(("sentence", "evidence"), UNRELATED.values(), ids=UNRELATED.keys())
    async def test_a_sentence_the_evidence_does_not_state_fails(
        self, verifier: Verifier, sentence: str, evidence: Sequence[str]
    ) -> None:
        verdict = await verifier.verify(sentence, evidence)
        assert not verdict.passed, verdict
        assert verdict.reasons, "a failed verdict says why"

    @pytest.mark.parametrize("evidence", EMPTY_EVIDENCE.values(), ids=EMPTY_EVIDENCE.keys())
    async def test_no_evidence_fails(self, verifier: Verifier, evidence: Sequence[str]) -> None:
        verdict = await verifier.verify(SUPPORTED["leave"][0], evidence)
        assert not verdict.passed, verdict
        assert verdict.reasons

    @pytest.mark.parametrize("sentence", EMPTY_SENTENCES.values(), ids=EMPTY_SENTENCES.keys())
    async def test_an_empty_sentence_fails(self, verifier: Verifier, sentence: str) -> None:
        verdict = await verifier.verify(sentence, [LEAVE])
        assert not verdict.passed, verdict
        assert verdict.reasons

    @pytest.mark.parametrize(("sentence", "evidence"), ANY_PAIR.values(), ids=ANY_PAIR.keys())
    async def test_the_verdict_is_a_score_within_0_and_1_with_reasons_when_failed(
        self, verifier: Verifier, sentence: str, evidence: Sequence[str]
    ) -> None:
        verdict = await verifier.verify(sentence, evidence)
        assert isinstance(verdict.passed, bool)
        assert isinstance(verdict.score, float) and math.isfinite(verdict.score), verdict
        assert 0.0 <= verdict.score <= 1.0 + FLOAT_SLACK, verdict
        assert all(isinstance(r, str) and r.strip() for r in verdict.reasons), verdict.reasons
        assert verdict.passed or verdict.reasons, "a failed verdict says why"

    async def test_an_exact_copy_scores_at_most_1(self, verifier: Verifier) -> None:
        """Where float rounding pushes a similarity past 1, the score must still be clamped."""
        copies = [*SUPPORTED.values(), (LEAVE, [LEAVE]), ("16", ["16"]), (CANTEEN, [CANTEEN])]
        scores = [(await verifier.verify(sentence, evidence)).score for sentence, evidence in copies]
        assert max(scores) <= 1.0, scores

    @pytest.mark.parametrize(
        ("sentence", "evidence"),
        [SUPPORTED["leave"], ALTERED["number"][:2], UNRELATED["canteen-for-leave"]],
        ids=["supported", "altered", "unrelated"],
    )
    async def test_the_same_pair_gets_the_same_verdict(
        self, verifier: Verifier, sentence: str, evidence: Sequence[str]
    ) -> None:
        first = await verifier.verify(sentence, evidence)
        await verifier.verify(*SUPPORTED["collector"])  # something else in between
        again = await verifier.verify(sentence, evidence)
        assert (again.passed, again.reasons) == (first.passed, first.reasons)
        assert again.score == pytest.approx(first.score, abs=1e-6)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(PACKAGED_MINILM, backend="torch")


class TestEvidenceVerifier(VerifierContract):
    known_failures: ClassVar[Mapping[str, pytest.MarkDecorator]] = {}

    @pytest.fixture
    def verifier(self, minilm: SentenceTransformerEmbedder) -> Verifier:
        return EvidenceVerifier(minilm, min_support=0.6)


class TestCrossEncoderVerifier(VerifierContract):
    """Over a tiny random NLI model (tests/tiny_cross_encoders.py): what this proves is the shape of
    the verdict and the exact checks, which overrule the model where it reads entailment into a
    changed product code or plan name. The copied sentences pass as verbatim quotes, and the
    unrelated ones fail on an exact check or because this random model happens to read
    contradiction: how well a real NLI model judges support is measured on the golden questions."""

    known_failures: ClassVar[Mapping[str, pytest.MarkDecorator]] = {}

    @pytest.fixture
    def verifier(self, tiny_cross_encoders: TinyCrossEncoders) -> Verifier:
        return CrossEncoderVerifier(load_cross_encoder(str(tiny_cross_encoders.nli)))
