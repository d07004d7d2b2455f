"""`CachedEmbedder`: an `Embedder` that remembers vectors by text, and can be told vectors it has
not computed (the sentence vectors stored at ingest).

The reranker reads each shortlisted sentence's stored vector; the critic then embeds the drafted
sentence and the sentences of the evidence it cites, which are mostly those same texts. Sharing
one cache between them means the critic embeds only what is new (a reworded sentence), while
still seeing nothing but the sentence and its evidence. Bounded (least recently used out).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from rag.model.ports import Embedder
from rag.model.types import Matrix
from rag.store.postgres import Vector


class CachedEmbedder:
    def __init__(self, embedder: Embedder, *, size: int = 20_000) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.embedder = embedder
        self.name = embedder.name
        self.dimension = embedder.dimension
        self.size = size
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def remember(self, pairs: Iterable[tuple[str, Vector]]) -> None:
        for text, vector in pairs:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
        self._trim()

    async def embed(self, texts: Sequence[str]) -> Matrix:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        if todo:
            for text, vector in zip(todo, await self.embedder.embed(todo), strict=True):
                self._vectors[text] = vector
        rows = []
        for text in texts:
            self._vectors.move_to_end(text)
            rows.append(self._vectors[text])
        self._trim()  # only now: this call's own texts must not be evicted before they are read
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack(rows).astype(np.float32, copy=False)

    async def aclose(self) -> None:
        await self.embedder.aclose()

    def _trim(self) -> None:
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)
