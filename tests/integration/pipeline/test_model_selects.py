"""A language model that chooses instead of writing (`CANDOR_MODEL_ROLE=select`): it is shown the
question and the best quotable sentences, numbered, and names those that answer; Candor quotes them
as the documents write them, through every gate.

The core is built from the settings over the sample handbook in the real embedded Postgres; the
model is the fake OpenAI-compatible server on 127.0.0.1, talked to by the real `openai` client.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from tests.fakes.openai_server import ChatRequest, FakeOpenAI
from tests.fakes.teams_server import ingest_handbook
from tests.integration.pipeline.test_section_answers import GUIDE

PARENTAL = "How much paid parental leave does the primary carer get?"
LISTED = re.compile(r"^\[(\d+)\] \(([^\n]*)\)\n(.*?)(?=\n\[\d+\] \(|\Z)", re.DOTALL | re.MULTILINE)


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "select")


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def core(candor: Candor, fake: FakeOpenAI, **settings: Any) -> Candor:
    chosen = {
        "writer": "openai:selector-model",  # the model's role left at its default: select
        "openai_base_url": fake.base_url,
        "llm_attempts": 2,
        **settings,
    }
    configured = candor.settings.model_copy(update=chosen)
    answerer = build_answerer(configured, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    return dataclasses.replace(candor, settings=configured, answerer=answerer)


async def ask(candor: Candor, kb: KnowledgeBase, text: str) -> Answer:
    return await candor.answer(Question(text, scope=AccessScope(knowledge_bases=frozenset({kb.name}))))


def listed(request: ChatRequest) -> dict[int, tuple[str, str]]:
    """Sentence number → (its page's title, the sentence), as the prompt lists them."""
    shown = request.user.split("Sentences:\n", 1)[1]
    return {int(m[1]): (m[2], " ".join(m[3].split())) for m in LISTED.finditer(shown)}


def naming(*phrases: str, extra: tuple[int, ...] = ()) -> Callable[[ChatRequest], dict[str, Any]]:
    """A model that names the listed sentences holding any of `phrases` (plus the numbers `extra`)."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        found = [n for n, (_, text) in listed(request).items() if any(p in text for p in phrases)]
        return {"sentences": found + list(extra)}

    return reply


async def test_the_named_sentence_is_quoted_as_the_document_writes_it_and_cited(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    fake.responder = naming("16 weeks")
    answer = await ask(core(candor, fake), handbook, PARENTAL)
    assert answer.route == "answered", answer.text
    (sentence,) = answer.sentences
    assert "16 weeks" in sentence.text
    source = answer.sources[sentence.citations[0] - 1]
    assert source.document.endswith("hr-leave-policy.md")
    assert sentence.text.rstrip(".") in " ".join(source.excerpt.split())  # the document's words, not the model's
    writer = next(g for g in answer.gates if g.gate == "writer")
    assert writer.passed and writer.details["writer"] == "llm-selector:selector-model"
    (call,) = answer.model_calls
    assert (call.purpose, call.outcome) == ("writer", "ok")


async def test_the_prompt_numbers_the_best_quotable_sentences_under_their_page_titles(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    fake.responder = naming("16 weeks")
    await ask(core(candor, fake), handbook, PARENTAL)
    (request,) = fake.chat_requests
    assert request.user.startswith(f"Question: {PARENTAL}\n")
    shown = listed(request)
    assert list(shown) == list(range(1, len(shown) + 1)) and 3 <= len(shown) <= 10
    assert len({text for _, text in shown.values()}) == len(shown)  # a sentence once
    assert all(title for title, _ in shown.values())
    assert not re.search(r"\.(md|txt|html)\b|https?://", request.user)  # no path for a model to copy
    assert "never guess" in request.system and "empty list" in request.system
    assert any("16 weeks" in text for _, text in shown.values())


async def test_no_sentence_named_is_an_abstention_and_says_so_in_the_gate_log(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    fake.responder = lambda request: {"sentences": []}
    answer = await ask(core(candor, fake), handbook, PARENTAL)
    assert answer.abstained and not answer.sentences
    assert answer.text.startswith(candor.settings.refusal)
    writer = next(g for g in answer.gates if g.gate == "writer")
    assert writer.details["writer"] == "llm-selector:selector-model"


async def test_numbers_that_name_no_listed_sentence_are_ignored(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    fake.responder = naming("16 weeks", extra=(0, -1, 99))
    answer = await ask(core(candor, fake), handbook, PARENTAL)
    assert answer.route == "answered"
    assert [s.text for s in answer.sentences if "16 weeks" not in s.text] == []

    fake.responder = lambda request: {"sentences": [0, 99]}
    assert (await ask(core(candor, fake), handbook, PARENTAL)).abstained


async def test_a_model_that_fails_leaves_the_answer_to_the_extractive_writer(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    fake.fail(times=2)
    answer = await ask(core(candor, fake), handbook, PARENTAL)
    assert answer.route == "answered" and "16 weeks" in answer.text
    writer = next(g for g in answer.gates if g.gate == "writer")
    assert writer.details["writer"] == "extractive-v1"
    assert "llm-selector:selector-model" in writer.details["fallback"]


async def test_only_sentences_the_extractive_writer_could_quote_are_shown(
    candor: Candor, handbook: KnowledgeBase, fake: FakeOpenAI
) -> None:
    """Held to the answer threshold: when no sentence reaches it, the model is not asked and the
    answer abstains (shown weaker ones, a small model names something nearly every time)."""
    fake.responder = naming("16 weeks")
    answer = await ask(core(candor, fake, answer_threshold=0.99), handbook, PARENTAL)
    assert answer.abstained and fake.chat_requests == []
    answer = await ask(core(candor, fake), handbook, PARENTAL)
    assert answer.route == "answered" and len(fake.chat_requests) == 1


async def test_one_step_of_an_open_questions_section_named_quotes_the_whole_section(
    candor: Candor, kb: KnowledgeBase, docs: Path, fake: FakeOpenAI
) -> None:
    """A how-to's answer is its steps: the model naming any of them picks the section, which is
    quoted whole and in order (as the extractive writer would quote it), not the one step alone."""
    (docs / "export.md").write_text(GUIDE)
    assert (await candor.ingestor().ingest([docs], kb=kb)).added == 1
    fake.responder = naming("Choose Export > CSV")
    answer = await ask(core(candor, fake), kb, "how do I export my project to a CSV file?")
    assert answer.route == "answered", answer.text
    assert [s.text for s in answer.sentences] == [
        "Open the project and click the three dots next to its name.",
        "Choose Export > CSV and pick the fields to include.",
        "Click Download: the file holds one row per task, with its status and assignee.",
    ]
    (request,) = fake.chat_requests
    assert len([n for n, (_, text) in listed(request).items() if "Choose Export > CSV" in text]) == 1

    fake.responder = naming("Deleted workspaces are kept")  # a sentence of no section of the extract
    value = await ask(core(candor, fake), kb, "How many days are deleted workspaces kept?")
    assert [s.text for s in value.sentences] == ["Deleted workspaces are kept for 30 days, then erased."]
