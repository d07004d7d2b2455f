"""Ingestion in many batches: each batch is embedded while the next is parsed and the previous one
written. Against the real embedded Postgres, with the real `openai` client embedding through a
fake OpenAI server (so that an embedding failure can be scripted at a chosen request)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from rag.backends.embeddings import OpenAIEmbedder
from rag.errors import EmbeddingError
from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import Ingestor
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.openai_server import FakeOpenAI

TOPICS = ["leave", "pension", "canteen", "network", "billing", "hiring", "travel", "security"]


@pytest.fixture
async def fake_openai(candor: Candor) -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(dimension=candor.embedder.dimension) as fake:
        yield fake


def one_batch_per_file(candor: Candor, fake: FakeOpenAI) -> Ingestor:
    embedder = OpenAIEmbedder(
        "test-embed", api_key="sk-test", base_url=fake.base_url, dimensions=candor.embedder.dimension, max_retries=1
    )
    return Ingestor(candor.store, embedder, Chunker(max_tokens=candor.settings.chunk_tokens), batch_texts=1)


def write_files(folder: Path) -> list[Path]:
    """One short document per topic, its text unique to this folder: stored vectors are reused by
    text across knowledge bases, and these tests need every text embedded."""
    folder.mkdir()
    paths = []
    for n, topic in enumerate(TOPICS):
        path = folder / f"{n:02d}-{topic}.md"
        path.write_text(
            f"# {topic.title()}\n\nThe {topic} policy of {folder.parent.name} was updated in year {2020 + n}. "
            f"Ask the {topic} team.\n"
        )
        paths.append(path)
    return paths


async def stored_sources(candor: Candor, kb: KnowledgeBase) -> set[str]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT d.source FROM documents d WHERE d.kb_id = :kb AND EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.document_id = d.id AND c.embedding IS NOT NULL)"
            ),
            {"kb": kb.id},
        )
        return {row[0] for row in rows}


async def test_every_batch_lands_with_its_vectors(
    candor: Candor, kb: KnowledgeBase, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    paths = write_files(tmp_path / "docs")
    report = await one_batch_per_file(candor, fake_openai).ingest([tmp_path / "docs"], kb=kb)
    assert (report.added, report.chunks, report.skipped) == (len(paths), len(paths), [])
    assert await stored_sources(candor, kb) == {str(p) for p in paths}
    assert len(fake_openai.statuses) == len(paths)  # one request per batch, none repeated


async def test_a_failed_batch_stops_the_run_and_a_rerun_finishes_it(
    candor: Candor, kb: KnowledgeBase, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The first two batches' requests are answered, every later one fails: the run raises, but
    only once the second batch (embedded before the failure) is written; nothing later is stored,
    and the next run, against a healthy server, stores the rest."""
    paths = write_files(tmp_path / "docs")
    fake_openai.delay_next(0.0, times=2, endpoint="embeddings")  # answered normally
    fake_openai.fail(times=100, endpoint="embeddings")
    with pytest.raises(EmbeddingError):
        await one_batch_per_file(candor, fake_openai).ingest([tmp_path / "docs"], kb=kb)
    stored = await stored_sources(candor, kb)
    assert stored == {str(paths[0]), str(paths[1])}

    async with FakeOpenAI(dimension=candor.embedder.dimension) as healthy:
        report = await one_batch_per_file(candor, healthy).ingest([tmp_path / "docs"], kb=kb)
    assert (report.added, report.unchanged) == (len(paths) - len(stored), len(stored))
    assert await stored_sources(candor, kb) == {str(p) for p in paths}
