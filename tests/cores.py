"""Chat cores for the adapter tests: the real `Candor` core wrapped to fail or to say too much, and a
writer, a retriever and a critic that take as long as slow ones. The adapters only see the
`bot.server.ChatCore` protocol."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from rag.errors import DatabaseUnavailable
from rag.model.answers import Answer, Question, Verdict
from rag.model.evidence import Draft, SynthesisRequest
from rag.model.ports import Retriever, Synthesizer, Verifier
from rag.model.types import AccessScope, Passage, Vector
from rag.runtime import Candor


class Broken:
    """A core whose database has gone: the adapter must say so in the conversation and keep serving."""

    def __init__(self, core: Candor) -> None:
        self.core = core

    async def answer(self, question: Question) -> Answer:
        raise DatabaseUnavailable("the database is not reachable")

    async def record_feedback(self, feedback: Any) -> None:
        await self.core.record_feedback(feedback)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        return []

    async def forget(self, trace_id: str) -> bool:
        return await self.core.forget(trace_id)


class Defective(Broken):
    """A core with a bug: it raises what no adapter expects."""

    async def answer(self, question: Question) -> Answer:
        raise RuntimeError("a defect nobody anticipated")


class Verbose:
    """The real core, with the answer's sentences padded and repeated past what one chat message holds
    (the offline writer never writes that much; a model-backed one can)."""

    def __init__(self, core: Candor, *, repeat: int = 14, padding: int = 300) -> None:
        self.core = core
        self.repeat = repeat
        self.padding = padding

    async def answer(self, question: Question) -> Answer:
        answer = await self.core.answer(question)
        pad = " " + "x" * self.padding
        long = tuple(dataclasses.replace(s, text=s.text + pad) for s in answer.sentences) * self.repeat
        return dataclasses.replace(answer, sentences=long, text=" ".join(s.text for s in long))

    async def record_feedback(self, feedback: Any) -> None:
        await self.core.record_feedback(feedback)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        return await self.core.knowledge_base_summary()

    async def forget(self, trace_id: str) -> bool:
        return await self.core.forget(trace_id)


class SlowWriter:
    """A writer that takes as long as a slow model: the given one's draft, `seconds` late."""

    def __init__(self, writer: Synthesizer, seconds: float) -> None:
        self.writer = writer
        self.seconds = seconds
        self.name = f"slow-{writer.name}"

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        await asyncio.sleep(self.seconds)
        return await self.writer.synthesise(request)


class SlowRetriever:
    """A retriever that takes as long as a loaded database: the given one's passages, `seconds` late."""

    def __init__(self, retriever: Retriever, seconds: float) -> None:
        self.retriever = retriever
        self.seconds = seconds

    async def run(
        self, query: str, scope: AccessScope, *, k: int | None = None, vector: Vector | None = None
    ) -> list[Passage]:
        await asyncio.sleep(self.seconds)
        return await self.retriever.run(query, scope, k=k, vector=vector)


class SlowVerifier:
    """A critic that takes as long as a model judge: the given one's verdicts, `seconds` late. `checked`
    lists the sentences it was asked about: the draft, before anything is delivered."""

    def __init__(self, verifier: Verifier, seconds: float) -> None:
        self.verifier = verifier
        self.seconds = seconds
        self.name = f"slow-{verifier.name}"
        self.checked: list[str] = []

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict:
        self.checked.append(sentence)
        await asyncio.sleep(self.seconds)
        return await self.verifier.verify(sentence, evidence)


class Held:
    """The real core with every answer held until the test sets `release`: an edit or a deletion then
    arrives, deterministically, while an answer is being written. `asked` lists the questions in the
    order the adapter asked them."""

    def __init__(self, core: Candor) -> None:
        self.core = core
        self.asked: list[str] = []
        self.writing = asyncio.Event()
        """Set once the first answer is being written."""
        self.release = asyncio.Event()

    async def answer(self, question: Question) -> Answer:
        self.asked.append(question.text)
        self.writing.set()
        await self.release.wait()
        return await self.core.answer(question)

    async def record_feedback(self, feedback: Any) -> None:
        await self.core.record_feedback(feedback)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        return await self.core.knowledge_base_summary()

    async def forget(self, trace_id: str) -> bool:
        return await self.core.forget(trace_id)


class Recording:
    """The real core, keeping every question the adapter asked (with its history) in `questions`."""

    def __init__(self, core: Candor) -> None:
        self.core = core
        self.questions: list[Question] = []

    async def answer(self, question: Question) -> Answer:
        self.questions.append(question)
        return await self.core.answer(question)

    async def record_feedback(self, feedback: Any) -> None:
        await self.core.record_feedback(feedback)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        return await self.core.knowledge_base_summary()

    async def forget(self, trace_id: str) -> bool:
        return await self.core.forget(trace_id)
