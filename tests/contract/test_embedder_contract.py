"""The `Embedder` contract (STYLE.md 5), run against every implementation.

`EmbedderContract` holds the tests; each `Test...` subclass provides an `embedder` fixture and the
name and dimension it expects. The OpenAI subclass talks to a fake server over real HTTP through
the real `openai` client, and adds what only a remote embedder can do wrong: retries, short or
broken responses, an endpoint that is down or hangs.
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rag.backends.embeddings import OpenAIEmbedder, SentenceTransformerEmbedder
from rag.backends.onnx_export import TARGETS, Export, detect_target
from rag.backends.onnx_runner import OnnxRunner
from rag.config import PACKAGED_MINILM
from rag.errors import EmbeddingError
from rag.model.ports import Embedder
from tests.contract.conftest import FAKE_DIMENSION
from tests.fakes.openai_server import FakeOpenAI, Malformation, bag_of_words_vector

LEAVE = "How many days of annual leave do employees get?"
LEAVE_AGAIN = "How many days of annual leave does each employee get per year?"
NITROGEN = "Liquid nitrogen boils at minus 196 degrees Celsius."
WIFI = "Reset the office wifi router by holding its button for ten seconds."
TEN_TEXTS = [
    f"Item {n}: the {word} report is due on day {n}."
    for n, word in enumerate(
        ["sales", "travel", "security", "payroll", "hiring", "budget", "audit", "pricing", "support", "roadmap"]
    )
]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


class EmbedderContract:
    """What every `Embedder` promises. Subclasses set the expectations and the `embedder` fixture."""

    expected_name: str
    expected_dimension: int
    batch_size = 4
    batch_cosine_floor: float | None = None
    """None: a text's vector is the same whatever it is batched with. Dynamic int8 quantisation
    scales activations per batch, so there a vector may move by this much (cosine) instead."""
    """Subclasses build their embedder with this batch size, so `TEN_TEXTS` spans three batches."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("a contract subclass provides the embedder")

    def test_satisfies_the_protocol_with_name_and_dimension(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)
        assert embedder.name == self.expected_name
        assert embedder.dimension == self.expected_dimension

    async def test_no_texts_give_an_empty_matrix_of_the_right_width(self, embedder: Embedder) -> None:
        matrix = await embedder.embed([])
        assert matrix.shape == (0, self.expected_dimension)
        assert matrix.dtype == np.float32

    async def test_one_float32_unit_row_per_text(self, embedder: Embedder) -> None:
        matrix = await embedder.embed([LEAVE, NITROGEN, WIFI])
        assert isinstance(matrix, np.ndarray)
        assert matrix.shape == (3, self.expected_dimension)
        assert matrix.dtype == np.float32
        assert np.isfinite(matrix).all()
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), [1.0, 1.0, 1.0], atol=1e-5)

    async def test_rows_follow_input_order(self, embedder: Embedder) -> None:
        forward = await embedder.embed([LEAVE, NITROGEN, WIFI])
        backward = await embedder.embed([WIFI, NITROGEN, LEAVE])
        assert not np.allclose(forward[0], forward[1], atol=1e-3)  # the order is observable
        np.testing.assert_allclose(forward, backward[::-1], atol=1e-5)

    async def test_rows_keep_order_across_batches(self, embedder: Embedder) -> None:
        together = await embedder.embed(TEN_TEXTS)
        assert together.shape == (10, self.expected_dimension)
        for row, text in zip(together, TEN_TEXTS, strict=True):
            alone = await embedder.embed([text])
            if self.batch_cosine_floor is None:
                np.testing.assert_allclose(row, alone[0], atol=1e-5, err_msg=text)
            else:
                assert _cosine(row, alone[0]) >= self.batch_cosine_floor, text

    async def test_same_text_same_vector(self, embedder: Embedder) -> None:
        first = await embedder.embed([LEAVE])
        again = await embedder.embed([LEAVE])
        twice = await embedder.embed([LEAVE, NITROGEN, LEAVE])
        np.testing.assert_allclose(first, again, atol=1e-6)
        np.testing.assert_allclose(twice[0], twice[2], atol=1e-6)
        if self.batch_cosine_floor is None:
            np.testing.assert_allclose(twice[0], first[0], atol=1e-5)
        else:
            assert _cosine(twice[0], first[0]) >= self.batch_cosine_floor

    async def test_similar_texts_are_closer_than_unrelated_ones(self, embedder: Embedder) -> None:
        leave, leave_again, nitrogen, wifi = await embedder.embed([LEAVE, LEAVE_AGAIN, NITROGEN, WIFI])
        similar = _cosine(leave, leave_again)
        assert similar > _cosine(leave, nitrogen) + 0.2
        assert similar > _cosine(leave, wifi) + 0.2


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(PACKAGED_MINILM, backend="torch", batch_size=EmbedderContract.batch_size)


class TestSentenceTransformerEmbedder(EmbedderContract):
    expected_name = PACKAGED_MINILM
    expected_dimension = 384

    @pytest.fixture
    def embedder(self, minilm: SentenceTransformerEmbedder) -> Embedder:
        return minilm


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models folder for the module's ONNX exports (each variant is exported once)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module", params=TARGETS)
def minilm_int8(request: pytest.FixtureRequest, exports: Path) -> SentenceTransformerEmbedder:
    """The default backend: exported to ONNX and quantised to int8 locally, on first use, for each
    CPU target the exporter knows (a file quantised for another CPU runs on this one)."""
    return SentenceTransformerEmbedder(
        PACKAGED_MINILM,
        backend="onnx-int8",
        batch_size=EmbedderContract.batch_size,
        cache_dir=exports,
        onnx_target=request.param,
    )


class TestQuantizedOnnxEmbedder(EmbedderContract):
    expected_name = PACKAGED_MINILM
    expected_dimension = 384
    batch_cosine_floor = 0.98

    @pytest.fixture
    def embedder(self, minilm_int8: SentenceTransformerEmbedder) -> Embedder:
        return minilm_int8

    async def test_int8_vectors_stay_close_to_the_torch_model(
        self, minilm_int8: SentenceTransformerEmbedder, minilm: SentenceTransformerEmbedder
    ) -> None:
        texts = [LEAVE, NITROGEN, WIFI, *TEN_TEXTS[:3]]
        quantized = await minilm_int8.embed(texts)
        runner = minilm_int8._load()
        assert isinstance(runner, OnnxRunner)  # the packaged model runs on the direct runner
        assert minilm_int8.backend_in_use == f"onnx-int8 ({minilm_int8.onnx_target})"  # no fall-back
        exact = await minilm.embed(texts)
        agreement = np.sum(quantized * exact, axis=1)
        assert agreement.min() > 0.95, agreement
        assert runner.onnx_file.stat().st_size < 40_000_000  # int8: about a quarter of the 90 MB float model

    async def test_the_file_loaded_is_the_one_the_exporter_wrote_for_the_target(
        self, minilm_int8: SentenceTransformerEmbedder
    ) -> None:
        """Read back, not guessed: AVX2's weights are unsigned (`model_quint8_avx2.onnx`), the
        others' signed; the one new ONNX file of the export is the one loaded."""
        await minilm_int8.embed([LEAVE])
        runner = minilm_int8._load()
        assert isinstance(runner, OnnxRunner)
        folder = runner.onnx_file.parent.parent
        target = minilm_int8.onnx_target
        assert folder.name.endswith(f"-onnx-int8-{target}")
        assert [path.name for path in (folder / "onnx").glob("*.onnx")] == [runner.onnx_file.name]
        weights = "quint8" if target == "avx2" else "qint8"
        assert runner.onnx_file.name == f"model_{weights}_{target}.onnx"
        made = Export.read(folder)
        assert made is not None and made.path == runner.onnx_file and made.target == target


class TestFloatOnnxEmbedder(EmbedderContract):
    expected_name = PACKAGED_MINILM
    expected_dimension = 384

    @pytest.fixture
    def embedder(self, exports: Path) -> Embedder:
        return SentenceTransformerEmbedder(
            PACKAGED_MINILM, backend="onnx", batch_size=EmbedderContract.batch_size, cache_dir=exports
        )

    async def test_float_vectors_are_the_torch_models(
        self, embedder: SentenceTransformerEmbedder, minilm: SentenceTransformerEmbedder
    ) -> None:
        texts = [LEAVE, NITROGEN, *TEN_TEXTS[:4]]
        np.testing.assert_allclose(await embedder.embed(texts), await minilm.embed(texts), atol=1e-5)
        assert embedder.backend_in_use == "onnx"


async def test_an_export_keeps_only_what_loading_needs(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    """An int8 export keeps its file and the tokenizer, not the copied torch weights or the float
    export (each test home was ~200 MB). The float variant is a folder of its own; a fresh embedder
    afterwards loads the int8 file without exporting it again."""
    target = detect_target() or "avx2"
    before = await SentenceTransformerEmbedder(
        PACKAGED_MINILM, backend="onnx-int8", cache_dir=tmp_path, onnx_target=target
    ).embed([LEAVE])
    int8 = _export_state(tmp_path, f"int8-{target}")
    assert int8.total_bytes < int8.onnx_bytes + 5_000_000, int8
    assert len(int8.onnx_files) == 1 and not int8.has_weights and not int8.staging

    float_vector = await SentenceTransformerEmbedder(PACKAGED_MINILM, backend="onnx", cache_dir=tmp_path).embed([LEAVE])
    again = await SentenceTransformerEmbedder(
        PACKAGED_MINILM, backend="onnx-int8", cache_dir=tmp_path, onnx_target=target
    ).embed([LEAVE])
    assert np.allclose(float_vector, await minilm.embed([LEAVE]), atol=1e-5)  # the float model, not int8
    assert np.allclose(again, before, atol=1e-5)
    assert _export_state(tmp_path, "float").onnx_files == ["model.onnx"]
    assert _export_state(tmp_path, f"int8-{target}") == int8  # loaded, not exported again


@dataclass(frozen=True)
class _ExportState:
    onnx_files: list[str]
    onnx_bytes: int
    onnx_mtime: int
    total_bytes: int
    has_weights: bool
    staging: list[str]


def _export_state(cache: Path, variant: str) -> _ExportState:
    (folder,) = cache.glob(f"*-onnx-{variant}")
    files = sorted((folder / "onnx").glob("*.onnx"))
    return _ExportState(
        onnx_files=[path.name for path in files],
        onnx_bytes=sum(path.stat().st_size for path in files),
        onnx_mtime=max(path.stat().st_mtime_ns for path in files),
        total_bytes=sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()),
        has_weights=(folder / "model.safetensors").exists(),
        staging=[path.name for path in cache.glob(".*") if path.is_dir()],
    )


def _openai(base_url: str, *, timeout: float = 5.0, max_retries: int = 2) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "test-embed",
        api_key="sk-test",
        base_url=base_url,
        dimensions=FAKE_DIMENSION,
        batch_size=EmbedderContract.batch_size,
        timeout=timeout,
        max_retries=max_retries,
    )


class TestOpenAIEmbedder(EmbedderContract):
    expected_name = f"openai:test-embed@{FAKE_DIMENSION}"
    expected_dimension = FAKE_DIMENSION

    @pytest.fixture
    async def embedder(self, fake_openai: FakeOpenAI) -> AsyncIterator[Embedder]:
        made = _openai(fake_openai.base_url)
        yield made
        await made._client.close()  # OpenAIEmbedder has no public close; don't leak the connection pool

    # --- what only a remote embedder can get wrong ---------------------------------------

    async def test_vectors_are_the_servers_and_requests_are_batched(
        self, embedder: Embedder, fake_openai: FakeOpenAI
    ) -> None:
        matrix = await embedder.embed(TEN_TEXTS)
        expected = np.asarray([bag_of_words_vector(t, FAKE_DIMENSION) for t in TEN_TEXTS], dtype=np.float32)
        np.testing.assert_allclose(matrix, expected, atol=1e-6)
        assert [r.input for r in fake_openai.requests] == [TEN_TEXTS[0:4], TEN_TEXTS[4:8], TEN_TEXTS[8:10]]
        assert {r.model for r in fake_openai.requests} == {"test-embed"}
        assert {r.dimensions for r in fake_openai.requests} == {FAKE_DIMENSION}
        assert {r.authorization for r in fake_openai.requests} == {"Bearer sk-test"}

    async def test_no_texts_make_no_request(self, embedder: Embedder, fake_openai: FakeOpenAI) -> None:
        await embedder.embed([])
        assert fake_openai.requests == []

    async def test_a_server_error_is_retried(self, embedder: Embedder, fake_openai: FakeOpenAI) -> None:
        fake_openai.fail(times=1, status=500)
        matrix = await embedder.embed([LEAVE, NITROGEN])
        assert fake_openai.statuses == [500, 200]
        np.testing.assert_allclose(matrix[1], bag_of_words_vector(NITROGEN, FAKE_DIMENSION), atol=1e-6)

    async def test_a_rate_limit_waits_for_retry_after(self, embedder: Embedder, fake_openai: FakeOpenAI) -> None:
        fake_openai.rate_limit(retry_after=1.5)
        matrix = await embedder.embed([LEAVE])
        assert matrix.shape == (1, FAKE_DIMENSION)
        assert fake_openai.statuses == [429, 200]
        waited = fake_openai.requests[1].at - fake_openai.requests[0].at
        assert waited >= 1.4, f"retried after {waited:.2f}s, Retry-After said 1.5s"

    async def test_errors_past_the_retry_budget_raise_embedding_error(self, fake_openai: FakeOpenAI) -> None:
        embedder = _openai(fake_openai.base_url, max_retries=1)
        fake_openai.fail(times=5, status=500)
        with pytest.raises(EmbeddingError, match="openai:test-embed"):
            await embedder.embed([LEAVE])
        assert fake_openai.statuses == [500, 500]

    @pytest.mark.parametrize("kind", ["missing_vector", "extra_vector", "no_data", "ragged", "bad_json"])
    async def test_a_malformed_response_raises_embedding_error(
        self, embedder: Embedder, fake_openai: FakeOpenAI, kind: Malformation
    ) -> None:
        fake_openai.malformed(kind)
        with pytest.raises(EmbeddingError):
            await embedder.embed([LEAVE, NITROGEN, WIFI])
        assert fake_openai.statuses == [200]

    async def test_a_dead_endpoint_raises_embedding_error_quickly(self) -> None:
        with socket.socket() as probe:  # a port that was free a moment ago, and is closed now
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        embedder = _openai(f"http://127.0.0.1:{port}/v1", timeout=2.0, max_retries=1)
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match="request failed"):
            await embedder.embed([LEAVE])
        assert time.monotonic() - started < 5.0

    async def test_a_hung_endpoint_times_out_as_embedding_error(self, fake_openai: FakeOpenAI) -> None:
        embedder = _openai(fake_openai.base_url, timeout=0.5, max_retries=0)
        fake_openai.delay = 3.0
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match="request failed"):
            await embedder.embed([LEAVE])
        assert time.monotonic() - started < 2.5
        assert len(fake_openai.requests) == 1
