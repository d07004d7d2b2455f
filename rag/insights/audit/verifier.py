"""The verifier `candor audit answers` re-verifies delivered sentences with, and whether it is independent.

docs/design.md's hallucination rate needs a verifier independent of the gate's own: a gate cannot find
its own blind spots. `CANDOR_AUDIT_VERIFIER` picks the audit's verifier:

    auto                  the strongest configured: the gate's LLM judge (CANDOR_JUDGE=openai:...),
                          else its cross-encoder judge, else the offline evidence verifier
    evidence              the offline evidence verifier (`evidence-verifier-v1`)
    openai:<model>        an LLM judge on CANDOR_AUDIT_BASE_URL (else OPENAI_BASE_URL)
    cross-encoder:<m>     an NLI / fact-check cross-encoder

An LLM judge keeps the exact checks (values, codes and names are compared before the model reads
the sentence), but it is never wrapped in the gate's fallback to the offline verifier: a sentence
the audit model could not judge is recorded as not judged, never silently judged by the gate's own
verifier. `auto` may well pick the gate's own judge; the audit then says it is not independent
rather than pretending otherwise.

Independence is per trace: the audit's deciding model must be none of the models named in that
trace's gate verifier (`traces.models ->> 'verifier'`, names joined by "+", e.g.
`llm-judge:gpt-x+evidence-verifier-v1` for a prefiltered judge), nor the offline evidence verifier
(every gate falls back to it when its judge fails, and the trace's name does not say so), nor the
model that wrote the answer (`traces.models ->> 'synthesizer'`, `llm-writer:<model>`): a model
judging its own writing is not independent of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.backends.cross_encoders import CrossEncoderVerifier, load_cross_encoder
from rag.backends.from_settings import chat_model, judge_model
from rag.backends.llm_judge import LLMJudge
from rag.backends.vector_cache import CachedEmbedder
from rag.config import Settings
from rag.errors import ConfigError, CrossEncoderError, LLMOutputError, LLMUnavailable
from rag.model.ports import Embedder, Verifier
from rag.pipeline.critic import EvidenceVerifier

NOT_JUDGED = (LLMOutputError,)
"""The verifier answered, but not usably, for this one sentence: recorded as not judged, the run goes on."""
GONE = (LLMUnavailable, CrossEncoderError)
"""The verifier itself failed (unreachable, circuit open, a broken model): the run stops, incomplete."""


@dataclass(frozen=True, slots=True)
class AuditVerifier:
    """The audit's verifier and the model whose verdict decides (what independence is judged by)."""

    verifier: Verifier
    deciding: str
    spec: str
    """The setting it was built from, `auto` resolved (`evidence`, `openai:<model>`, ...)."""

    @property
    def name(self) -> str:
        return self.verifier.name

    def independent_of(self, gate_verifier: str | None, writer: str | None = None) -> bool:
        return independent(gate_verifier, self.deciding, writer)


def gate_models(gate_verifier: str | None) -> frozenset[str]:
    """The models a gate's verifier name combines (`a+b` → {a, b}); with the offline evidence
    verifier whenever a gate is recorded, since every gate falls back to it."""
    named = frozenset(part.strip() for part in (gate_verifier or "").split("+") if part.strip())
    return named | {EvidenceVerifier.name} if named else named


def independent(gate_verifier: str | None, deciding: str, writer: str | None = None) -> bool:
    """True when `deciding` is none of the gate's models and not the writer's model. A trace whose
    gate is not recorded cannot be shown to be judged by another model, so it is not independent."""
    models = gate_models(gate_verifier)
    if not models or deciding in models:
        return False
    return writer is None or _model(writer) != _model(deciding)


def _model(name: str) -> str:
    """The model behind a stage's name: `llm-judge:gpt-x` and `llm-writer:gpt-x` are both `gpt-x`."""
    kind, _, model = name.partition(":")
    return model if kind in ("llm-judge", "llm-writer") and model else name


def audit_spec(settings: Settings) -> str:
    """CANDOR_AUDIT_VERIFIER with `auto` resolved to the strongest verifier configured."""
    if settings.audit_verifier != "auto":
        return settings.audit_verifier
    if settings.judge.startswith(("openai:", "cross-encoder:")):
        return settings.judge
    return "evidence"


def build_audit_verifier(settings: Settings, embedder: Embedder) -> AuditVerifier:
    """The audit's verifier from the settings (`embedder`: for the offline evidence verifier, if chosen).

    Loading a cross-encoder blocks: call this at start-up (or in a thread)."""
    spec = audit_spec(settings)
    if spec.startswith("openai:"):
        model_name = spec.removeprefix("openai:")
        if spec == settings.judge and settings.audit_base_url is None:
            model = judge_model(settings)  # the gate's judge, on its own endpoint with its own key
            assert model is not None
        else:
            base_url = settings.audit_base_url or settings.openai_base_url
            model = chat_model(settings, model_name, base_url=base_url, key=settings.audit_api_key)
        judge = LLMJudge(model)
        return AuditVerifier(judge, judge.name, spec)
    if spec.startswith("cross-encoder:"):
        encoder = CrossEncoderVerifier(load_cross_encoder(spec, allow_hub=settings.allow_model_download))
        return AuditVerifier(encoder, encoder.name, spec)
    if spec != "evidence":  # `Settings` validates it; a copy made with `model_copy(update=...)` is not
        raise ConfigError(
            f"CANDOR_AUDIT_VERIFIER: {spec!r} is none of auto, evidence, openai:<model>, cross-encoder:<model>"
        )
    offline = EvidenceVerifier(CachedEmbedder(embedder), min_support=settings.min_support)
    return AuditVerifier(offline, offline.name, "evidence")
