"""FAQ pages: a question line is context for the answer after it, never an answer of its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rag.backends.embeddings import build_embedder
from rag.config import load_settings
from rag.model.evidence import PartEvidence, Query, SynthesisRequest
from rag.model.ports import Embedder
from rag.pipeline.rerank import EvidenceReranker, answered_by
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.store.evidence import SentenceEvidence, StoredSentence
from rag.text.facts import clean_sentence
from rag.text.quotable import asks
from tests.unit.pipeline.stage_data import passage

FAQ = (
    "Q: Where do I find the serial number of my router?",
    "A: On the label on the underside of the device.",
    "Serial numbers start with TV followed by 12 letters and digits.",
    "Q: Do I need an account?",
    "A: Yes, setup in the app needs a free account.",
)


def stored(texts: Sequence[str], chunk_id: int = 1) -> list[StoredSentence]:
    return [StoredSentence(chunk_id, i, t, None, frozenset()) for i, t in enumerate(texts)]


class Sentences:
    """The reranker's sentence source over one chunk in memory (vectors embedded by the reranker)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts

    async def __call__(self, chunk_ids: Sequence[int]) -> SentenceEvidence:
        return SentenceEvidence(tuple(stored(self.texts)), {})


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Embedder:
    home = tmp_path_factory.mktemp("faq-home")
    return build_embedder(load_settings(home=home, models_dir=models_dir, database_url=None))


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Q: Where do I find the serial number?", True),
        ("**Question: how do I reset my PIN**", True),
        ("How long do invitations last?", True),
        ("Invitations expire after 7 days.", False),
        ("A: On the label on the underside.", False),
        ("Quarterly reviews happen in March.", False),
    ],
)
def test_question_lines_are_recognised(text: str, question: bool) -> None:
    assert asks(text) is question


def test_an_answer_label_is_not_read_out() -> None:
    assert (
        clean_sentence("A: On the label on the underside of the device.")
        == "On the label on the underside of the device."
    )
    assert clean_sentence("Answer: yes") == "yes."


def test_the_sentences_after_a_question_line_answer_it_until_the_next() -> None:
    sentences = stored(FAQ)
    by = {position: question.text for position, question in answered_by(sentences).items()}
    assert by == {1: FAQ[0], 2: FAQ[0], 4: FAQ[3]}
    assert answered_by(stored(["Plain prose.", "More prose."])) == {}


async def test_the_answer_after_the_question_line_is_chosen_not_the_line(embedder: Embedder) -> None:
    question = "where's the serial number on my router?"
    reranker = EvidenceReranker(Sentences(FAQ), embedder)
    vector = (await embedder.embed([question]))[0]
    [ranked] = await reranker.rerank(Query(question, vector, {}), [passage(1, " ".join(FAQ))])
    by_text = {s.text: s for s in ranked.sentences}
    answer, line = by_text[FAQ[1]], by_text[FAQ[0]]
    assert answer.meaning >= line.meaning  # the line's meaning is the answer's context
    assert answer.answers == FAQ[0]
    part = PartEvidence(question, (ranked,), True)
    request = SynthesisRequest(question, (part,), (ranked.passage,), 1)
    draft = await ExtractiveSynthesizer(answer_threshold=0.3).synthesise(request)
    assert draft.sentences[0].text == "On the label on the underside of the device."
    assert all(not asks(s.text) for s in draft.sentences)


async def test_a_key_value_line_is_read_with_its_headings(embedder: Embedder) -> None:
    """ "Price: €59 per device per year" under the heading "Care+ Premium" says the price of Care+
    Premium: its heading words count in full, as a prose sentence's count half."""
    question = "What does Care+ Premium cost per year?"
    vector = (await embedder.embed([question]))[0]
    terms = {"care": 0.05, "premium": 0.05, "cost": 0.1, "year": 0.2}
    line = "Price: €59 per device per year"
    prose = "The price is €59 per device per year"

    class Headed:
        async def __call__(self, chunk_ids: Sequence[int]) -> SentenceEvidence:
            return SentenceEvidence(
                (
                    StoredSentence(1, 0, line, None, frozenset({"price", "devic", "year"})),
                    StoredSentence(2, 0, prose, None, frozenset({"price", "devic", "year"})),
                ),
                {1: frozenset({"care", "premium"}), 2: frozenset({"care", "premium"})},
            )

    ranked = await EvidenceReranker(Headed(), embedder).rerank(
        Query(question, vector, terms), [passage(1, line), passage(2, prose)]
    )
    by_text = {r.sentences[0].text: r.sentences[0] for r in ranked}
    assert by_text[line].terms > by_text[prose].terms
