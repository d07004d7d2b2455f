"""The answerer switches off the text rules of `CANDOR_RULES_OFF` for each answer it makes, and
only for it (rag/text/switches.py): the real `Answerer` and offline stages, passages in memory."""

from __future__ import annotations

from dataclasses import replace

from rag.config import Settings
from rag.model.answers import Question
from rag.model.evidence import Draft, SynthesisRequest
from rag.model.ports import Embedder
from rag.model.types import AccessScope
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.text.switches import off
from tests.unit.pipeline.test_progress import IN_MEMORY_ANSWER_THRESHOLD, QUESTION, answerer, offline  # noqa: F401


class Listening:
    """The extractive writer, noting whether the swaps family is off while it writes."""

    name = "listening"

    def __init__(self) -> None:
        self.heard: list[bool] = []
        self.writer = ExtractiveSynthesizer(answer_threshold=IN_MEMORY_ANSWER_THRESHOLD)

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        self.heard.append(off("swaps"))
        return await self.writer.synthesise(request)


async def test_the_rules_switched_off_hold_inside_an_answer_and_nowhere_else(
    offline: tuple[Settings, Embedder],  # noqa: F811
) -> None:
    question = Question(QUESTION, scope=AccessScope())
    for families, expected in ((frozenset(), False), (frozenset({"swaps"}), True)):
        writer = Listening()
        core = answerer(offline, writer)
        core.config = replace(core.config, rules_off=families)
        answer = await core.answer(question)
        assert writer.heard and set(writer.heard) == {expected}, answer.gates
        assert not off("swaps")
