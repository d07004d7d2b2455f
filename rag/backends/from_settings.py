"""The model-backed stages the settings ask for, each wrapped so that it degrades to the offline one.

    CANDOR_WRITER=openai:<model>      → FallbackSynthesizer(LLMSynthesizer, the extractive writer)
      CANDOR_MODEL_ROLE=select        → FallbackSynthesizer(LLMSelector, the extractive writer)
    CANDOR_JUDGE=openai:<model>       → FallbackVerifier(PrefilteredVerifier(offline, LLMJudge), offline);
                                        the same model compares self-consistency samples (LLMFactComparer)
    CANDOR_JUDGE=cross-encoder:<m>    → FallbackVerifier(CrossEncoderVerifier, offline) (numbers still exact)
    CANDOR_RERANKER=cross-encoder:<m> → CrossEncoderReranker over the offline reranker's sentences

Every chat model gets its own circuit breaker, its price from CANDOR_LLM_COSTS, and the timeouts
and attempts of the settings; all calls of one answer share CANDOR_ANSWER_BUDGET_SECONDS.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from rag.backends.cross_encoders import CrossEncoderReranker, CrossEncoderVerifier, load_cross_encoder
from rag.backends.llm import ChatModel, ChatSettings, StructuredModel, close_all
from rag.backends.llm_judge import FallbackVerifier, LLMJudge, PrefilteredVerifier
from rag.backends.llm_writer import FallbackSynthesizer, LLMSynthesizer
from rag.config import Settings
from rag.model.ports import Reranker, Synthesizer, Verifier

OPENED: list[ChatModel] = []
"""Every chat model built by this process, closed by `close_chat_models` (their HTTP clients)."""


async def close_chat_models() -> None:
    models, OPENED[:] = list(OPENED), []
    await close_all(models)


def chat_model(settings: Settings, model: str, *, base_url: str | None, key: SecretStr | None = None) -> ChatModel:
    """A model on `base_url`, with `key` (default: OPENAI_API_KEY, which goes to OPENAI_BASE_URL only)."""
    if key is None and base_url == settings.openai_base_url:
        key = settings.openai_api_key
    made = _chat_model(settings, model, base_url=base_url, key=key)
    OPENED.append(made)
    return made


def _chat_model(settings: Settings, model: str, *, base_url: str | None, key: SecretStr | None) -> ChatModel:
    return ChatModel(
        ChatSettings(
            model,
            base_url=base_url,
            api_key=key.get_secret_value() if key is not None else None,
            timeout=settings.llm_timeout,
            attempts=settings.llm_attempts,
            max_tokens=settings.llm_max_tokens,
            price=settings.llm_costs.get(model),
        )
    )


def build_writer(
    settings: Settings, offline: Synthesizer, selector: Callable[[StructuredModel], Synthesizer] | None = None
) -> Synthesizer:
    """The model writer of CANDOR_WRITER, or with CANDOR_MODEL_ROLE=select the `selector` over its model
    (rag/pipeline/selection.py, built by the caller: the answer path is not a backend's to import)."""
    if not settings.writer.startswith("openai:"):
        return offline
    model = chat_model(settings, settings.writer.removeprefix("openai:"), base_url=settings.openai_base_url)
    if settings.model_role == "select" and selector is not None:
        return FallbackSynthesizer(selector(model), offline)
    return FallbackSynthesizer(LLMSynthesizer(model, refusal=settings.refusal), offline)


def judge_model(settings: Settings) -> ChatModel | None:
    """The LLM judge's model (one circuit breaker for its verdicts and its fact comparisons), if any."""
    if not settings.judge.startswith("openai:"):
        return None
    base_url = settings.judge_base_url or settings.openai_base_url
    return chat_model(settings, settings.judge.removeprefix("openai:"), base_url=base_url, key=settings.judge_api_key)


def build_verifier(settings: Settings, offline: Verifier, judge: ChatModel | None = None) -> Verifier:
    if judge is not None:
        verifier: Verifier = LLMJudge(judge)
        if settings.judge_prefilter == "evidence":
            verifier = PrefilteredVerifier(offline, verifier)
        elif settings.judge_prefilter.startswith("cross-encoder:"):
            model = load_cross_encoder(settings.judge_prefilter, allow_hub=settings.allow_model_download)
            verifier = PrefilteredVerifier(FallbackVerifier(CrossEncoderVerifier(model), offline), verifier)
        return FallbackVerifier(verifier, offline)
    if settings.judge.startswith("cross-encoder:"):
        model = load_cross_encoder(settings.judge, allow_hub=settings.allow_model_download)
        return FallbackVerifier(CrossEncoderVerifier(model), offline)
    return offline


def build_reranker(settings: Settings, offline: Reranker) -> Reranker:
    """A cross-encoder orders the passages; the offline reranker still scores their sentences."""
    if settings.reranker.startswith("cross-encoder:"):
        return CrossEncoderReranker(
            load_cross_encoder(settings.reranker, allow_hub=settings.allow_model_download), offline
        )
    return offline
