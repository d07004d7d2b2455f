"""`OnnxRunner`: the exported model run directly on ONNX Runtime gives sentence-transformers' vectors.

Tiny bi-encoders (tests/tiny_embedders.py) are exported to ONNX the way the default embedder is;
the runner's vectors are compared with the same model's torch `encode`. A layout the runner does
not run (a Dense layer) falls back to sentence-transformers' own `encode`, with the same vectors.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.backends.embeddings import SentenceTransformerEmbedder
from rag.backends.onnx_runner import OnnxRunner
from rag.errors import EmbeddingError
from tests.tiny_cross_encoders import WORDS
from tests.tiny_embedders import build_embedder

TEXTS = [
    "How many days of annual leave does each employee get?",
    "",
    "   the pension plan   ",
    "Unknown wörds — 東京 and “quotes” are [UNK] tokens.",
    " ".join(WORDS),  # longer than the 64-token window: truncated, as sentence-transformers does
    "pay",
    *(f"the {a} {b} plan has {n} users" for n, (a, b) in enumerate(zip(WORDS[::3], WORDS[1::3], strict=False))),
]


def _torch_vectors(folder: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    return np.asarray(model.encode(texts, normalize_embeddings=True, batch_size=1), dtype=np.float32)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
async def test_the_runner_gives_the_models_own_vectors(pooling: str, tmp_path: Path) -> None:
    folder = build_embedder(tmp_path / "tiny", pooling=pooling, seed=3)
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", batch_size=4, cache_dir=tmp_path / "cache")
    runner = embedder._load()
    assert isinstance(runner, OnnxRunner) and runner.pooling == pooling
    vectors = await embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, _torch_vectors(folder, TEXTS), atol=1e-5)
    # one at a time (no padding at all) gives the same rows as batched with others
    single = np.vstack([await embedder.embed([text]) for text in TEXTS])
    np.testing.assert_allclose(single, vectors, atol=1e-5)


async def test_a_layout_it_does_not_run_falls_back_to_sentence_transformers(tmp_path: Path) -> None:
    folder = build_embedder(tmp_path / "tiny-dense", dense=16, seed=4)
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=tmp_path / "cache")
    assert not isinstance(embedder._load(), OnnxRunner)
    assert embedder.dimension == 16
    np.testing.assert_allclose(await embedder.embed(TEXTS), _torch_vectors(folder, TEXTS), atol=1e-5)


async def test_order_holds_across_workers_and_batches(tmp_path: Path) -> None:
    """Many batches on two workers at once: row i is still text i's vector."""
    folder = build_embedder(tmp_path / "tiny", seed=5)
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=tmp_path / "cache")
    runner = embedder._load()
    assert isinstance(runner, OnnxRunner)
    from sentence_transformers import SentenceTransformer

    exported = SentenceTransformer(str(runner.onnx_file.parent.parent), device="cpu", backend="onnx")
    two = OnnxRunner.for_model(exported, runner.onnx_file, workers=2, token_budget=40)
    assert two is not None
    texts = [f"{TEXTS[n % len(TEXTS)]} {' '.join(WORDS[: n % 17])}" for n in range(60)]
    together = two.encode(texts, batch_size=3)
    alone = np.vstack([runner.encode([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    two.close()


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=300), max_size=80),
    budget=st.integers(min_value=1, max_value=1000),
    max_rows=st.integers(min_value=1, max_value=40),
)
def test_batches_cover_every_text_once_within_the_budget(lengths: list[int], budget: int, max_rows: int) -> None:
    batches = OnnxRunner.cut_batches(lengths, token_budget=budget, max_rows=max_rows)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= max_rows
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) == 1 or padded <= budget  # a single text longer than the budget still goes
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(lengths, reverse=True)  # longest first, so each batch pads little


async def test_a_corrupt_export_is_exported_again(tmp_path: Path) -> None:
    folder = build_embedder(tmp_path / "tiny", seed=6)
    cache = tmp_path / "cache"
    first = await SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=cache).embed(["pay"])
    export = next(cache.glob("*-onnx-float/onnx/model.onnx"))
    export.write_bytes(b"not an onnx graph" * 100)
    again = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=cache)
    np.testing.assert_allclose(await again.embed(["pay"]), first, atol=1e-6)
    assert again.backend_in_use == "onnx" and export.stat().st_size > 10_000


async def test_a_model_no_backend_can_load_is_an_embedding_error_naming_each_failure(tmp_path: Path) -> None:
    folder = build_embedder(tmp_path / "tiny", seed=6)
    (folder / "config.json").write_text("{ not json")
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx-int8", cache_dir=tmp_path / "cache")
    with pytest.raises(EmbeddingError, match="cannot load embedding model") as raised:
        await embedder.embed(["pay"])
    message = str(raised.value)
    assert re.search(r"onnx-int8 \(\w+\) failed: .*; onnx failed: .*; torch failed: ", message), message
    assert embedder.backend_in_use is None


def test_encode_refuses_one_string_instead_of_a_list(tmp_path: Path) -> None:
    runner = SentenceTransformerEmbedder(
        str(build_embedder(tmp_path / "tiny", seed=7)), backend="onnx", cache_dir=tmp_path / "cache"
    )._load()
    assert isinstance(runner, OnnxRunner)
    with pytest.raises(TypeError):
        runner.encode("pay")
    raw = runner.encode(["the pension plan"], normalize_embeddings=False)
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 1e-3  # the pooled vector itself, not normalised
    np.testing.assert_allclose(raw / np.linalg.norm(raw), runner.encode(["the pension plan"]), atol=1e-6)


async def test_the_dimension_is_read_from_the_folder_without_loading_the_model(tmp_path: Path) -> None:
    """sentence-transformers 5 writes the pooling size as `embedding_dimension`, earlier versions
    as `word_embedding_dimension` (the packaged MiniLM): both open without a model load."""
    import json

    folder = build_embedder(tmp_path / "tiny", seed=6)
    config = folder / "1_Pooling" / "config.json"
    assert "embedding_dimension" in json.loads(config.read_text())
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=tmp_path / "cache")
    assert embedder.dimension == 32 and embedder._model is None
    older = {k: v for k, v in json.loads(config.read_text()).items() if k != "embedding_dimension"}
    config.write_text(json.dumps({**older, "word_embedding_dimension": 32}))
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=tmp_path / "cache")
    assert embedder.dimension == 32 and embedder._model is None
    # two pooling modes are concatenated: the folder's number is not the vector's size
    config.write_text(json.dumps({**older, "embedding_dimension": 32, "pooling_mode": ["mean", "max"]}))
    embedder = SentenceTransformerEmbedder(str(folder), backend="torch", cache_dir=tmp_path / "cache")
    assert embedder.dimension == 64
    assert (await embedder.embed(["pay"])).shape == (1, 64)


async def test_closing_the_embedder_stops_its_threads(tmp_path: Path) -> None:
    import asyncio

    folder = build_embedder(tmp_path / "tiny", seed=7)
    embedder = SentenceTransformerEmbedder(str(folder), backend="onnx", cache_dir=tmp_path / "cache")
    runner = embedder._load()
    assert isinstance(runner, OnnxRunner)
    runner.workers, runner.token_budget = 2, 8  # several batches: the worker pool runs
    await embedder.embed(TEXTS)

    assert runner._pool is not None
    # this embedder's own threads (other tests' embedders may be running too)
    running = [*embedder._executor._threads, *runner._pool._threads]  # type: ignore[attr-defined]
    assert running and all(t.is_alive() for t in running)
    await embedder.aclose()
    for thread in running:
        await asyncio.to_thread(thread.join, 10)
    assert not any(t.is_alive() for t in running)
    with pytest.raises(EmbeddingError):
        await embedder.embed(["pay"])
