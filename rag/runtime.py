"""Wiring: build the store, embedder and stages from the settings, once per process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from rag.config import Settings
from rag.embeddings import Embedder, build_embedder
from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import Ingestor
from rag.retrieve import HybridRetriever
from rag.store.postgres import KnowledgeBase, PostgresStore


@dataclass(slots=True)
class Candor:
    """The core's parts for one process: what the CLI and the server hold on to."""

    settings: Settings
    store: PostgresStore
    embedder: Embedder
    retriever: HybridRetriever

    def ingestor(self) -> Ingestor:
        return Ingestor(
            self.store,
            self.embedder,
            Chunker(max_tokens=self.settings.chunk_tokens),
            embed_sentences=self.settings.sentence_embeddings,
        )

    async def knowledge_base(self, name: str, *, create: bool = False) -> KnowledgeBase | None:
        cap = self.settings.max_authority if create else None
        return await self.store.knowledge_base(name, create_with_max_authority=cap)

    async def reembed(self) -> int:
        """Re-embed every chunk and sentence with the configured embedder."""
        return await self.store.reembed(self.embedder.name, self.embedder.dimension, self.embedder.embed)


@asynccontextmanager
async def open_candor(settings: Settings, *, check_embedder: bool = True) -> AsyncIterator[Candor]:
    """Open the database (embedded or external) and build the stages; close on exit.

    With `check_embedder=False` a database embedded by another model still opens (for `--reembed`).
    """
    embedder = build_embedder(settings)
    store = await PostgresStore.open(settings, embedder=embedder.name, dimension=embedder.dimension)
    try:
        if check_embedder:
            store.embedder.check(embedder.name, embedder.dimension)
        retriever = HybridRetriever(
            store,
            embedder,
            candidates=settings.candidates,
            fusion=settings.fusion,
            dense_weight=settings.dense_weight,
            rrf_k=settings.rrf_k,
            max_term_frequency=settings.max_term_frequency,
        )
        yield Candor(settings, store, embedder, retriever)
    finally:
        await store.close()
