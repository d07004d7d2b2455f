"""The Protocols every part of the answer path is written against, each with an offline
implementation and a model-backed one: `Embedder` (rag/backends/embeddings.py), `Retriever`
(rag/pipeline/retrieve.py, hybrid search in Postgres), `Reranker`
(rag/pipeline/rerank.py, rag/backends/cross_encoders.py), `Synthesizer` (rag/pipeline/synthesis.py,
rag/backends/llm_writer.py), `Verifier` (rag/pipeline/critic.py, rag/backends/llm_judge.py,
rag/backends/cross_encoders.py), and the self-consistency gate's `SamplingSynthesizer` and
`FactComparer` (rag/pipeline/gates/self_consistency.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rag.model.answers import Verdict
from rag.model.evidence import Draft, Query, Ranked, SynthesisRequest
from rag.model.types import AccessScope, Matrix, Passage, Vector


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Identity recorded with the vectors; a different name means the store needs a re-embed."""
    dimension: int

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """One L2-normalised float32 row per text, in order."""
        ...

    async def aclose(self) -> None:
        """Release threads and connections; the embedder is not used afterwards."""
        ...


class Retriever(Protocol):
    """The k best passages for a query in the reader's scope (rag/pipeline/retrieve.py)."""

    async def run(
        self, query: str, scope: AccessScope, *, k: int | None = None, vector: Vector | None = None
    ) -> list[Passage]: ...


class Reranker(Protocol):
    name: str

    async def rerank(self, query: Query, passages: Sequence[Passage], *, top_k: int | None = None) -> list[Ranked]: ...


class Synthesizer(Protocol):
    name: str

    async def synthesise(self, request: SynthesisRequest) -> Draft: ...


class Verifier(Protocol):
    name: str

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict: ...


@runtime_checkable
class FactComparer(Protocol):
    name: str

    async def compare(self, answer: str, samples: Sequence[str]) -> Sequence[Any]: ...


@runtime_checkable
class SamplingSynthesizer(Protocol):
    name: str

    async def sample(self, request: SynthesisRequest, n: int, *, temperature: float) -> list[Draft]: ...
