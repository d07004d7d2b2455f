"""Run an exported sentence-transformers model on ONNX Runtime directly, one session per core.

sentence-transformers' own ONNX path (optimum) runs one session on both cores and pads each batch
of 32 to its longest text. Measured here on 300 ~650-character passages (`benchmarks/
ingest_throughput.py`), the same int8 file encodes at ~74 texts/s that way and at ~120/s this way:
- one ONNX Runtime session with a single intra-op thread, called from one worker per core at once
  (a run releases the GIL; small matrices split over two threads spend much of their time waiting);
- texts sorted by token count and cut into batches of at most `token_budget` padded tokens, so a
  batch of short sentences is long and a batch of long passages short, with little padding;
- tokenising, pooling and normalising in `tokenizers` and numpy, with no torch in the loop.

Only the common layout is run this way: Transformer → Pooling (mean, CLS or max) → optional
Normalize. `OnnxRunner.for_model` returns None for anything else (a Dense layer, prompts, several
pooling modes), and the caller keeps sentence-transformers' own `encode`. The tokenizer, the
truncation length and the pooling mode are read from the loaded sentence-transformers model, so
the vectors are the ones it computes (tested to 1e-5).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError, EmbeddingError
from rag.model.types import Matrix

_POOLING = ("mean", "cls", "max")
_INPUTS = ({"input_ids", "attention_mask"}, {"input_ids", "attention_mask", "token_type_ids"})
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
_LONGEST = 100_000
"""A `max_seq_length` above this is the tokenizer's "no limit" placeholder: left to sentence-transformers."""


def ort_errors() -> tuple[type[Exception], ...]:
    """ONNX Runtime's own exceptions (they derive from Exception, not RuntimeError)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = (getattr(state, name, None) for name in dir(state))
    return (RuntimeError, ValueError, *(c for c in found if isinstance(c, type) and issubclass(c, Exception)))


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class RunnerLayout:
    """What the runner needs of a sentence-transformers model besides its ONNX file and tokenizer."""

    max_length: int
    pooling: str
    dimension: int

    @classmethod
    def of(cls, model: Any) -> tuple[RunnerLayout, str] | None:
        """The layout and the tokenizer (as `tokenizers` JSON) of a loaded model, or None if its
        layout is not the plain Transformer → Pooling → Normalize one the runner runs."""
        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        transformer, pooling = modules[0], modules[1]
        mode = getattr(pooling, "pooling_mode", None)
        tokenizer = getattr(transformer, "tokenizer", None)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if mode not in _POOLING or backend is None or not model.max_seq_length or model.max_seq_length > _LONGEST:
            return None
        if getattr(tokenizer, "truncation_side", "right") != "right":
            return None
        # prompts, chat templates, extra tokenizer arguments: sentence-transformers' preprocessing
        if getattr(model, "prompts", None) and any(model.prompts.values()):
            return None
        if getattr(transformer, "processing_kwargs", None) or "message" in getattr(transformer, "modality_config", {}):
            return None
        size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        # the tokenizer as loaded (normaliser and lowercasing included), not the file on disk
        layout = cls(max_length=int(model.max_seq_length), pooling=str(mode), dimension=int(size() or 0))
        return layout, str(backend.to_str())

    def as_json(self) -> dict[str, Any]:
        return {"max_length": self.max_length, "pooling": self.pooling, "dimension": self.dimension}

    @classmethod
    def from_json(cls, data: Any) -> RunnerLayout:
        """Raises ValueError for anything but what `as_json` wrote."""
        if not isinstance(data, dict) or set(data) != {"max_length", "pooling", "dimension"}:
            raise ValueError(f"not a runner layout: {data!r}")
        max_length, pooling, dimension = data["max_length"], data["pooling"], data["dimension"]
        if not (isinstance(max_length, int) and isinstance(dimension, int) and max_length > 0 and dimension > 0):
            raise ValueError(f"not a runner layout: {data!r}")
        if pooling not in _POOLING:
            raise ValueError(f"unsupported pooling {pooling!r}")
        return cls(max_length=max_length, pooling=pooling, dimension=dimension)


class OnnxRunner:
    """Token ids in, pooled unit vectors out: `encode` mirrors sentence-transformers' signature."""

    def __init__(
        self,
        onnx_file: Path,
        tokenizer: Any,
        *,
        max_length: int,
        pooling: str,
        dimension: int,
        workers: int | None = None,
        token_budget: int = 512,
    ) -> None:
        import onnxruntime as ort

        if pooling not in _POOLING:
            raise ConfigError(f"unsupported pooling {pooling!r}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallelism comes from the workers, one per core
        options.inter_op_num_threads = 1
        self.onnx_file = onnx_file
        self._errors = ort_errors()
        try:
            self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        except self._errors as exc:
            raise EmbeddingError(f"cannot load {onnx_file}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = next((name for name in _TOKEN_OUTPUTS if name in outputs), outputs[0])
        self._tokenizer = tokenizer
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length)
        self.pooling = pooling
        self.token_budget = token_budget
        self.workers = workers or available_cores()
        self._pool = (
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="onnx") if self.workers > 1 else None
        )
        self.dimension = dimension

    @classmethod
    def for_model(
        cls, model: Any, onnx_file: Path, *, workers: int | None = None, token_budget: int = 512
    ) -> OnnxRunner | None:
        """A runner for a loaded sentence-transformers model, or None if its layout is not the
        plain Transformer → Pooling → Normalize one this runs."""
        found = RunnerLayout.of(model)
        if found is None:
            return None
        layout, tokenizer_json = found
        return cls.from_layout(onnx_file, tokenizer_json, layout, workers=workers, token_budget=token_budget)

    @classmethod
    def from_layout(
        cls,
        onnx_file: Path,
        tokenizer_json: str,
        layout: RunnerLayout,
        *,
        workers: int | None = None,
        token_budget: int = 512,
    ) -> OnnxRunner | None:
        """A runner from what `RunnerLayout.of` read off a model (no sentence-transformers import:
        a cached export starts this way), or None if the graph is fed differently."""
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_str(tokenizer_json)
        except Exception as exc:  # tokenizers raises bare Exceptions for a malformed file
            raise EmbeddingError(f"the tokenizer beside {onnx_file} does not load: {exc}") from exc
        runner = cls(
            onnx_file,
            tokenizer,
            max_length=layout.max_length,
            pooling=layout.pooling,
            dimension=layout.dimension,
            workers=workers,
            token_budget=token_budget,
        )
        if runner._inputs not in _INPUTS:  # a graph fed differently: left to sentence-transformers
            runner.close()
            return None
        return runner

    def get_sentence_embedding_dimension(self) -> int:
        return self.dimension

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        normalize_embeddings: bool = True,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> Matrix:
        """One float32 row per text, in order, L2-normalised unless asked not to; `batch_size`
        caps the rows per batch. (The arguments are sentence-transformers' `encode`'s; the
        result is always numpy and no progress bar is drawn.)"""
        if isinstance(texts, str):
            raise TypeError("encode takes a list of texts, not one string")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            return self._encode(texts, batch_size, normalize_embeddings)
        except self._errors as exc:
            raise EmbeddingError(f"{self.onnx_file.name}: encoding failed: {exc}") from exc

    def _encode(self, texts: Sequence[str], batch_size: int, normalize: bool) -> Matrix:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        batches = self.cut_batches([len(i) for i in ids], token_budget=self.token_budget, max_rows=max(1, batch_size))
        if self._pool is None or len(batches) == 1:
            pooled = [self._run(ids, batch) for batch in batches]
        else:
            pooled = list(self._pool.map(lambda batch: self._run(ids, batch), batches))
        out = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, pooled, strict=True):
            out[batch] = vectors
        if not normalize:
            return out
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalised: Matrix = out / norms
        return normalised

    @staticmethod
    def cut_batches(lengths: Sequence[int], *, token_budget: int, max_rows: int) -> list[list[int]]:
        """Indices sorted by length, longest first, cut so that rows x longest <= the budget
        (a single text longer than the budget is a batch of its own)."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            longest = lengths[current[0]] if current else lengths[i]
            if current and ((len(current) + 1) * longest > token_budget or len(current) == max_rows):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _run(self, ids: list[np.ndarray], batch: list[int]) -> Matrix:
        width = max(len(ids[i]) for i in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, i in enumerate(batch):
            input_ids[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        tokens = self._session.run([self._output], feed)[0].astype(np.float32, copy=False)
        if self.pooling == "cls":
            pooled: Matrix = tokens[:, 0]
        elif self.pooling == "max":
            pooled = np.where(mask[..., None] > 0, tokens, -np.inf).max(axis=1)
        else:
            counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)  # a text of no tokens pools to zeros
            pooled = (tokens * mask[..., None]).sum(axis=1) / counts
        return pooled.astype(np.float32, copy=False)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
