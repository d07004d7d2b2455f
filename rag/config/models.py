"""The model-backed stages: the OpenAI-compatible endpoint, the writer, the judge, the reranker,
the audit verifier, and the limits every model call keeps."""

from __future__ import annotations

from typing import Self

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings

from rag.config.environment import _env, _local_host

LOCAL_LLM_TIMEOUT, LOCAL_ANSWER_BUDGET = 300.0, 900.0
"""The model limits when OPENAI_BASE_URL is a local server and they are not set."""


class ModelSettings(BaseSettings):
    """The language models and cross-encoders."""

    # The endpoint is listed on docs/configuration.md with the platforms, as it always was.
    # --- platforms and LLM (used by the adapters and model-backed stages) -----------------
    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("OPENAI_API_KEY"))
    """OPENAI_API_KEY: the key for OPENAI_BASE_URL, used by `openai:` embeddings, writer, judge and audit
    verifier (sent to OPENAI_BASE_URL only)."""
    openai_base_url: str | None = Field(None, validation_alias=_env("OPENAI_BASE_URL"))
    """OPENAI_BASE_URL: any OpenAI-compatible endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, a llama.cpp
    server); unset: OpenAI's."""

    # --- model-backed stages (offline by default) -------------------------------------------
    writer: str = Field("extractive", validation_alias=_env("CANDOR_WRITER"))
    """CANDOR_WRITER: `extractive` (offline) or `openai:<model>` on OPENAI_BASE_URL (any
    OpenAI-compatible endpoint: OpenAI, Azure OpenAI, vLLM, Ollama, a llama.cpp server)."""
    judge: str = Field("evidence", validation_alias=_env("CANDOR_JUDGE"))
    """CANDOR_JUDGE: the critic's verifier: `evidence` (offline), `openai:<model>` (an LLM judge,
    a different model from the writer) or `cross-encoder:<model path or name>` (NLI / fact-check)."""
    judge_base_url: str | None = Field(None, validation_alias=_env("CANDOR_JUDGE_BASE_URL"))
    """CANDOR_JUDGE_BASE_URL: the judge's endpoint when it is not OPENAI_BASE_URL."""
    judge_api_key: SecretStr | None = Field(None, validation_alias=_env("CANDOR_JUDGE_API_KEY"))
    """CANDOR_JUDGE_API_KEY: the key for CANDOR_JUDGE_BASE_URL (OPENAI_API_KEY is sent only to
    OPENAI_BASE_URL)."""
    judge_prefilter: str = Field("evidence", validation_alias=_env("CANDOR_JUDGE_PREFILTER"))
    """CANDOR_JUDGE_PREFILTER: what decides the clear cases before an LLM judge: `evidence` (the
    offline verifier), `cross-encoder:<model>`, or `off` (the judge sees every sentence)."""
    reranker: str = Field("evidence", validation_alias=_env("CANDOR_RERANKER"))
    """CANDOR_RERANKER: `evidence` (offline) or `cross-encoder:<model path or name>`."""
    audit_verifier: str = Field("auto", validation_alias=_env("CANDOR_AUDIT_VERIFIER"))
    """CANDOR_AUDIT_VERIFIER: what `candor audit answers` re-verifies delivered sentences with: `auto`
    (the strongest configured: the gate's LLM judge, else its cross-encoder judge, else the offline
    verifier), `evidence`, `openai:<model>` (on CANDOR_AUDIT_BASE_URL, else OPENAI_BASE_URL) or
    `cross-encoder:<model>`. Independent of the gate only when it is none of the gate's models."""
    audit_base_url: str | None = Field(None, validation_alias=_env("CANDOR_AUDIT_BASE_URL"))
    """CANDOR_AUDIT_BASE_URL: the audit model's endpoint when it is not OPENAI_BASE_URL."""
    audit_api_key: SecretStr | None = Field(None, validation_alias=_env("CANDOR_AUDIT_API_KEY"))
    """CANDOR_AUDIT_API_KEY: the key for CANDOR_AUDIT_BASE_URL (OPENAI_API_KEY goes to OPENAI_BASE_URL only)."""
    allow_model_download: bool = Field(False, validation_alias=_env("CANDOR_ALLOW_MODEL_DOWNLOAD"))
    """CANDOR_ALLOW_MODEL_DOWNLOAD: cross-encoders named by hub id may be fetched (default: disk only)."""
    self_consistency_kbs: list[str] = Field(default_factory=list, validation_alias=_env("CANDOR_SELF_CONSISTENCY_KBS"))
    """CANDOR_SELF_CONSISTENCY_KBS: JSON list of high-stakes knowledge bases (`["*"]`: all) whose
    answers a model writer must give again, consistently, to be delivered as confident."""
    self_consistency_samples: int = Field(3, ge=2, le=10, validation_alias=_env("CANDOR_SELF_CONSISTENCY_SAMPLES"))
    """CANDOR_SELF_CONSISTENCY_SAMPLES: how many more times the model writer answers a question of a
    CANDOR_SELF_CONSISTENCY_KBS knowledge base; a fact most samples do not state makes it low confidence."""
    llm_timeout: float = Field(30.0, gt=0, le=600, validation_alias=_env("CANDOR_LLM_TIMEOUT"))
    """CANDOR_LLM_TIMEOUT: seconds per model request. Unset with a model on this machine or the local
    network (OPENAI_BASE_URL on a loopback, private or `.local` host): 300, since a small model on a
    CPU takes minutes where a hosted one takes seconds."""
    llm_attempts: int = Field(3, ge=1, le=10, validation_alias=_env("CANDOR_LLM_ATTEMPTS"))
    """CANDOR_LLM_ATTEMPTS: tries per model call (timeouts, 429, 5xx, malformed output)."""
    llm_max_tokens: int = Field(1024, ge=16, le=32768, validation_alias=_env("CANDOR_LLM_MAX_TOKENS"))
    """CANDOR_LLM_MAX_TOKENS: the most tokens a model may write in one reply (`max_tokens`); a reply cut
    off there is malformed and retried."""
    answer_budget: float = Field(60.0, gt=0, le=3600, validation_alias=_env("CANDOR_ANSWER_BUDGET_SECONDS"))
    """CANDOR_ANSWER_BUDGET_SECONDS: the time all model calls of one answer share, retries included;
    past it the stage falls back (extractive writer, offline critic). Unset with a local model (as for
    CANDOR_LLM_TIMEOUT): 900."""
    llm_costs: dict[str, tuple[float, float]] = Field(default_factory=dict, validation_alias=_env("CANDOR_LLM_COSTS"))
    """CANDOR_LLM_COSTS: JSON, model → [price per million tokens in, out], e.g.
    `{"gpt-4o-mini": [0.15, 0.60]}`; the trace, `candor eval` and the report cost answers with it."""

    @field_validator("judge_prefilter", mode="before")
    @classmethod
    def _prefilter_named(cls, value: object) -> object:
        if isinstance(value, bool) or str(value).strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            on = value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1", "yes")
            return "evidence" if on else "off"
        text = str(value).strip()
        if text not in ("evidence", "off") and not (text.startswith("cross-encoder:") and len(text) > 14):
            raise ValueError("must be evidence, off or cross-encoder:<model>")
        return text

    @field_validator("writer", "judge", "reranker", "audit_verifier", mode="after")
    @classmethod
    def _stage_named(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        kinds = {
            "writer": ("extractive", "openai:"),
            "judge": ("evidence", "openai:", "cross-encoder:"),
            "reranker": ("evidence", "cross-encoder:"),
            "audit_verifier": ("auto", "evidence", "openai:", "cross-encoder:"),
        }[info.field_name or ""]
        if not any(value == kind or (kind.endswith(":") and value.startswith(kind)) for kind in kinds):
            raise ValueError(f"must be one of {', '.join(k + ('<model>' if k.endswith(':') else '') for k in kinds)}")
        if value.endswith(":"):
            raise ValueError(f"{value} needs a model name")
        return value

    @model_validator(mode="after")
    def _judge_is_not_the_writer(self) -> Self:
        same_endpoint = (self.judge_base_url or self.openai_base_url) == self.openai_base_url
        if self.writer.startswith("openai:") and self.judge == self.writer and same_endpoint:
            raise ValueError("CANDOR_JUDGE must be a different model from CANDOR_WRITER (a model grading itself)")
        return self

    @model_validator(mode="after")
    def _local_model_has_time(self) -> Self:
        """A model served on this machine or the local network gets minutes, not seconds, unless the
        operator set the limits (docs/local-model.md)."""
        if self.openai_base_url and _local_host(self.openai_base_url):
            if "llm_timeout" not in self.model_fields_set:
                self.llm_timeout = LOCAL_LLM_TIMEOUT
            if "answer_budget" not in self.model_fields_set:
                self.answer_budget = LOCAL_ANSWER_BUDGET
        return self
