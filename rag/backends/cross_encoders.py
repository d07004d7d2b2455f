"""Cross-encoders: a `Reranker` and a `Verifier` over a sentence-transformers `CrossEncoder`.

A cross-encoder reads two texts together and scores the pair: slower than comparing stored
vectors, but it sees how the words of one bear on the other. Two uses:

- `CrossEncoderReranker` reorders another reranker's ranking (the offline `EvidenceReranker`
  normally) by a 1-label relevance model's score of (question, passage). The inner reranker's
  per-sentence scores are kept as they are: the extractive writer quotes the best sentence of each
  passage, and a passage-level model says nothing about sentences.
- `CrossEncoderVerifier` scores (cited passage, sentence) with an NLI model's entailment
  probability, or a 1-label fact-check model's sigmoid, and keeps the best over the cited passages.
  The checks every verifier shares run first and no score overrules them (`rag.pipeline.critic`): a value,
  code or name missing from the evidence fails the sentence however sure the model is.

`load_cross_encoder` opens a model from a folder on disk, or by hub name from the local Hugging
Face cache (the hub itself only when the caller allows it). Scores are computed here from raw
logits: sentence-transformers 5.7's `predict` applies whatever activation the model saved (a
sigmoid by default for one label, nothing for several, and nothing for the ms-marco rerankers,
which save Identity), so asking it for logits puts every model on one 0..1 scale. Model calls run
batched on one worker thread per model, so the event loop never blocks and two questions never run
the same model at once.

Quality: the reranking and faithfulness figures Candor reports are for the offline default
(`EvidenceReranker`, `EvidenceVerifier`). The tests build tiny random models that prove the
plumbing only; measure a real model on the golden questions before switching to it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import model_library_environment
from rag.errors import ConfigError, CrossEncoderError
from rag.model.answers import Verdict
from rag.model.evidence import Query, Ranked
from rag.model.ports import Reranker
from rag.model.types import Passage
from rag.text.exact_checks import evidence_sentences, exact_mismatches, settled_verdict

log = logging.getLogger(__name__)

Scores = np.ndarray[Any, np.dtype[np.float64]]

SPEC_PREFIX = "cross-encoder:"
"""How settings name a cross-encoder (CANDOR_RERANKER, CANDOR_JUDGE), and how the stages are named."""
DEFAULT_BATCH_SIZE = 32
DEFAULT_THRESHOLD = 0.5
ENTAILMENT_LABELS = frozenset({"entailment", "entailed", "entails", "entail"})
"""An NLI model's entailment label, lower-cased (`id2label` spells it in any case and order)."""
_GENERIC_LABEL = re.compile(r"LABEL_\d+")
_DETAIL = 300
"""Characters of a library's error kept in ours (transformers lists every model type it knows)."""


class CrossEncoderModel:
    """One loaded cross-encoder: raw logits for text pairs, computed on the model's own thread."""

    def __init__(self, model: Any, name: str, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ConfigError(f"cross-encoder batch size must be at least 1, got {batch_size}")
        self.model = model
        """The sentence-transformers `CrossEncoder`."""
        self.name = name
        self.batch_size = batch_size
        self.labels = _labels(model)
        """The model's labels in column order (`id2label`)."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cross-encoder")

    async def logits(self, pairs: Sequence[tuple[str, str]]) -> Scores:
        """One row of raw logits per pair, one column per label, from one batched `predict`."""
        if not pairs:
            return np.zeros((0, len(self.labels)))
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            raw = await loop.run_in_executor(self._executor, self._predict, list(pairs))
        except Exception as exc:  # whatever torch or the tokenizer raise, translated where it enters
            raise CrossEncoderError(f"{self.name}: scoring {len(pairs)} pairs failed: {exc}") from exc
        matrix = np.asarray(raw, dtype=np.float64).reshape(len(pairs), -1)
        if matrix.shape[1] != len(self.labels):
            raise CrossEncoderError(f"{self.name}: expected {len(self.labels)} scores per pair, got {matrix.shape[1]}")
        elapsed = (time.perf_counter() - started) * 1000
        log.debug("cross-encoder call", extra={"model": self.name, "pairs": len(pairs), "ms": round(elapsed, 1)})
        return matrix

    def _predict(self, pairs: list[tuple[str, str]]) -> Any:
        import torch

        return self.model.predict(
            pairs,
            batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def load_cross_encoder(
    spec: str,
    *,
    allow_hub: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int | None = None,
    device: str = "cpu",
) -> CrossEncoderModel:
    """Open the cross-encoder `spec` names: a folder holding a saved model, or a hub name
    ("cross-encoder/ms-marco-MiniLM-L6-v2") already in the local Hugging Face cache, or downloaded
    when `allow_hub` (HF_HUB_OFFLINE=1 in the environment still keeps the hub out of reach). A
    setting's `cross-encoder:` prefix is accepted.

    Blocks while the model loads: call it at start-up, or through `asyncio.to_thread`.
    """
    spec = spec.strip().removeprefix(SPEC_PREFIX).strip()
    if not spec:
        raise ConfigError("a cross-encoder needs a model: a folder on disk or a hub name")
    folder = Path(spec).expanduser()
    local = folder.is_dir()
    if not local and (folder.exists() or folder.is_absolute() or spec.startswith((".", "~"))):
        raise ConfigError(f"cross-encoder model {spec!r} not found: no such folder")
    if local and not (folder / "config.json").is_file():
        raise ConfigError(f"cross-encoder model folder {spec!r} holds no model (no config.json)")
    hub_blocked = model_library_environment(allow_hub=allow_hub)
    from sentence_transformers import CrossEncoder

    try:
        model = CrossEncoder(
            str(folder) if local else spec,
            device=device,
            local_files_only=not allow_hub,
            max_length=max_length,
            trust_remote_code=False,
        )
    except Exception as exc:  # OSError, SafetensorError, ValueError...: the setting names nothing usable
        raise ConfigError(_unloadable(spec, local, allow_hub, hub_blocked, exc)) from exc
    return CrossEncoderModel(model, folder.name if local else spec, batch_size=batch_size)


class CrossEncoderReranker:
    """Another reranker's ranking, reordered by a cross-encoder's score of (question, passage)."""

    def __init__(self, model: CrossEncoderModel, inner: Reranker) -> None:
        if len(model.labels) != 1:
            raise ConfigError(
                f"cross-encoder {model.name!r} has {len(model.labels)} labels ({', '.join(model.labels)}): "
                "a reranker needs a 1-label relevance model"
            )
        self.model = model
        self.inner = inner
        self.name = f"{SPEC_PREFIX}{model.name}"

    async def rerank(self, query: Query, passages: Sequence[Passage], *, top_k: int | None = None) -> list[Ranked]:
        ranked = await self.inner.rerank(query, passages)
        if not ranked:
            return []
        try:
            logits = await self.model.logits([(query.text, r.passage.text) for r in ranked])
        except CrossEncoderError as exc:  # degrade explicitly: the inner reranker's order stands
            log.warning(
                "the cross-encoder failed; the inner reranker's order is used",
                extra={"reranker": self.name, "fallback": self.inner.name, "error": str(exc)},
            )
            return ranked[:top_k] if top_k else ranked
        scores = sigmoid(logits[:, 0])
        order = sorted(range(len(ranked)), key=lambda i: (-scores[i], i))  # ties keep the inner order
        reordered = [replace(ranked[i], score=float(scores[i])) for i in order]
        return reordered[:top_k] if top_k else reordered


class CrossEncoderVerifier:
    """Support from an NLI model's entailment probability (or a fact-check model's score), best
    over the cited passages, under the exact checks no model may overrule."""

    def __init__(self, model: CrossEncoderModel, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ConfigError(f"cross-encoder verifier threshold must lie in (0, 1], got {threshold}")
        self.model = model
        self.threshold = threshold
        self.column, self.label = support_label(model.name, model.labels)
        self.name = f"{SPEC_PREFIX}{model.name}"

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict:
        settled = settled_verdict(sentence, evidence)
        if settled is not None:
            return settled
        cited = [passage for passage in evidence if passage.strip()]
        probabilities = to_probabilities(await self.model.logits([(passage, sentence) for passage in cited]))
        best = int(probabilities[:, self.column].argmax())
        score = float(probabilities[best, self.column])
        reasons = exact_mismatches(sentence, evidence, evidence_sentences(evidence))
        reading = f"{self.model.name}: {self.label} {score:.2f}"
        if score < self.threshold:
            reasons.append(f"{reading} below {self.threshold:.2f}{self._instead(probabilities[best])}")
            return Verdict(False, score, tuple(reasons))
        if reasons:
            reasons.append(f"{reading} (at least {self.threshold:.2f}) overruled by the exact checks")
            return Verdict(False, score, tuple(reasons))
        return Verdict(True, score, (f"{reading}, at least {self.threshold:.2f}",))

    def _instead(self, row: Scores) -> str:
        """What an NLI model reads instead of entailment, when it is sure of something else."""
        top = int(row.argmax())
        return "" if top == self.column else f"; the model reads {self.model.labels[top]} {row[top]:.2f}"


def support_label(name: str, labels: Sequence[str]) -> tuple[int, str]:
    """Column and label of a verifier's score: a fact-check model's only label, an NLI model's entailment."""
    if len(labels) == 1:
        return 0, "support" if _GENERIC_LABEL.fullmatch(labels[0]) else labels[0]
    found = [i for i, label in enumerate(labels) if label.strip().lower() in ENTAILMENT_LABELS]
    if len(found) != 1:
        raise ConfigError(
            f"cross-encoder {name!r} has labels {', '.join(labels)}: a verifier needs a 1-label fact-check "
            "model or an NLI model whose config (id2label) names exactly one entailment label"
        )
    return found[0], labels[found[0]]


def sigmoid(logits: Scores) -> Scores:
    """Logits to 0..1 without overflow for large ones."""
    result: Scores = 0.5 * (1.0 + np.tanh(0.5 * logits))
    return result


def to_probabilities(logits: Scores) -> Scores:
    """A sigmoid for a 1-label model, a softmax over the labels otherwise."""
    if logits.shape[1] == 1:
        return sigmoid(logits)
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    result: Scores = exp / exp.sum(axis=1, keepdims=True)
    return result


def _labels(model: Any) -> tuple[str, ...]:
    id2label = getattr(model.config, "id2label", None) or {}
    return tuple(str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(int(model.num_labels)))


def _unloadable(spec: str, local: bool, allow_hub: bool, hub_blocked: bool, exc: Exception) -> str:
    detail = str(exc) if len(str(exc)) <= _DETAIL else str(exc)[:_DETAIL] + "..."
    if local:
        return f"cannot load cross-encoder model from folder {spec!r}: {detail}"
    where = "not a folder on disk and not in the local Hugging Face cache"
    if not allow_hub:
        return f"cross-encoder model {spec!r} not found: {where} (the hub was not allowed)"
    if hub_blocked:
        return f"cross-encoder model {spec!r} not found: {where}, and HF_HUB_OFFLINE keeps the hub out of reach"
    return f"cross-encoder model {spec!r} could not be fetched from the hub: {detail}"
