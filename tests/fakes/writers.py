"""Fake language models for the fake OpenAI-compatible server (`tests.fakes.openai_server.FakeOpenAI.responder`):
a writer that reads the numbered passages of Candor's prompt and writes a scripted answer from them,
and a judge that reads the sentence and its evidence.

    fake.responder = Models(writer=writes(copy("16 weeks")), judge=judges(unless="18 weeks"))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.openai_server import ChatRequest

_PASSAGE = re.compile(r"^\[(\d+)\] [^\n]*\n(.*?)(?=\n\n\[\d+\] |\Z)", re.DOTALL | re.MULTILINE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def passages(request: ChatRequest) -> dict[int, str]:
    """Passage number → text, as the writer's prompt lists them."""
    user = request.user
    listed = user.split("Passages:\n", 1)[-1]
    return {int(m.group(1)): m.group(2).strip() for m in _PASSAGE.finditer(listed)}


def find(request: ChatRequest, phrase: str) -> tuple[int, str]:
    """The first passage (number) holding `phrase`, and the sentence of it that does."""
    for number, text in passages(request).items():
        for sentence in _SENTENCE.findall(text):
            if phrase in sentence:
                return number, sentence.strip(" -*\t")
    raise AssertionError(f"no passage of the prompt says {phrase!r}: {list(passages(request).values())[:3]}")


Sentence = Callable[[ChatRequest], dict[str, Any]]


def copy(phrase: str, *, part: int = 1) -> Sentence:
    """The passage sentence holding `phrase`, cited correctly."""

    def make(request: ChatRequest) -> dict[str, Any]:
        number, sentence = find(request, phrase)
        return {"text": sentence, "citations": [number], "part": part}

    return make


def altered(phrase: str, old: str, new: str, *, part: int = 1) -> Sentence:
    """The passage sentence holding `phrase` with `old` replaced by `new` (a hallucinated value), cited."""

    def make(request: ChatRequest) -> dict[str, Any]:
        number, sentence = find(request, phrase)
        return {"text": sentence.replace(old, new), "citations": [number], "part": part}

    return make


def stated(text: str, *, citing: str | None = None, citations: Sequence[int] = (), part: int = 1) -> Sentence:
    """`text` as written, citing the passage holding `citing` (or the given numbers, real or not)."""

    def make(request: ChatRequest) -> dict[str, Any]:
        cited = [find(request, citing)[0]] if citing is not None else list(citations)
        return {"text": text, "citations": cited, "part": part}

    return make


def writes(*sentences: Sentence, abstained: bool = False, unanswered: Sequence[int] = ()) -> Callable[..., Any]:
    """A writer answering every request with these sentences."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        return {
            "sentences": [make(request) for make in sentences],
            "abstained": abstained,
            "unanswered_parts": list(unanswered),
            "conflicts": [],
        }

    return reply


def judges(*, unless: Sequence[str] = ()) -> Callable[[ChatRequest], dict[str, Any]]:
    """A judge supporting every sentence except those containing one of `unless`."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        sentence = request.user.split("Sentence: ", 1)[-1].split("\n\nEvidence:", 1)[0]
        bad = next((u for u in unless if u in sentence), None)
        if bad is not None:
            return {"supported": False, "reason": f"the evidence does not say {bad}"}
        return {"supported": True, "reason": "the evidence states it"}

    return reply


@dataclass
class Models:
    """One fake server, two models: the request's model name picks the writer or the judge."""

    writer: Callable[[ChatRequest], Any]
    judge: Callable[[ChatRequest], Any] | None = None
    seen: list[str] = field(default_factory=list)

    def __call__(self, request: ChatRequest) -> Any:
        self.seen.append(request.model or "")
        if "Sentence: " in request.user and "Evidence:" in request.user:
            if self.judge is None:
                raise AssertionError("the judge was asked but none is scripted")
            return self.judge(request)
        return self.writer(request)
