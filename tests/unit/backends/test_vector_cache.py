"""`CachedEmbedder`: remembered and told vectors are reused, the rest embedded once, order kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag.backends.vector_cache import CachedEmbedder
from rag.model.types import Matrix


class CountingEmbedder:
    """A deterministic stand-in for a model: one-hot-ish vectors, and a record of what it was asked."""

    name = "counting"
    dimension = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, len(text) % self.dimension] = 1.0
        return rows

    async def aclose(self) -> None:
        self.closed = True


async def test_embeds_each_new_text_once_and_keeps_order() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = await cached.embed(["a", "bb", "a"])
    second = await cached.embed(["bb", "ccc"])
    assert inner.calls == [["a", "bb"], ["ccc"]]
    assert first.shape == (3, 4) and np.array_equal(first[0], first[2])
    assert np.array_equal(second[0], first[1])
    assert (cached.hits, cached.misses) == (2, 3)


async def test_told_vectors_are_used_without_asking_the_model() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    stored = np.array([0.0, 0.0, 0.6, 0.8], dtype=np.float32)
    cached.remember([("stored sentence.", stored)])
    out = await cached.embed(["stored sentence.", "new"])
    assert inner.calls == [["new"]]
    assert np.array_equal(out[0], stored)


async def test_least_recently_used_texts_leave_first() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, size=2)
    await cached.embed(["a", "b"])
    await cached.embed(["a"])  # "a" is now the most recent
    await cached.embed(["c"])  # evicts "b"
    await cached.embed(["a", "b"])
    assert inner.calls[-1] == ["b"]


async def test_empty_input_and_bad_size() -> None:
    cached = CachedEmbedder(CountingEmbedder())
    assert (await cached.embed([])).shape == (0, 4)
    with pytest.raises(ValueError):
        CachedEmbedder(CountingEmbedder(), size=0)
