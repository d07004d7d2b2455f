"""`Settings`, composed of the sections by concern, and `load_settings`, which builds it."""

from __future__ import annotations

from typing import Any, Self

from pydantic import AliasChoices, ValidationError, model_validator
from pydantic_settings import SettingsConfigDict

from rag.config.answering import AnswerSettings
from rag.config.chat import ChatSettings
from rag.config.models import ModelSettings
from rag.config.operators import OperatorSettings
from rag.config.search import SearchSettings
from rag.config.storage import StorageSettings
from rag.errors import ConfigError

ANSWER_SETTINGS = tuple(
    "retrieval_threshold answer_threshold focus_threshold min_support shortlist retry rescue "  # noqa: SIM905
    "section_extracts extractive_first model_role rules_off self_consistency_kbs fusion dense_weight candidates "
    "writer judge reranker answer_budget".split()
)
"""The settings an answer depends on: stored with every trace and eval run, so that a report can tell
runs apart by what they were answered with."""


class Settings(OperatorSettings, ModelSettings, ChatSettings, AnswerSettings, SearchSettings, StorageSettings):
    """Every setting Candor has, typed. Field docs say which variable sets each one.

    One object, composed of a section per concern (each in its own module of `rag.config`, with the
    checks of its own fields); what checks settings of several sections is here. The sections are
    listed last first: pydantic declares the fields of the last base first, and the declared order is
    the order of docs/configuration.md (storage, search, answering, chat, models, operators).
    """

    # No `populate_by_name`: with it pydantic-settings also reads each field's own name from the
    # environment, and `home` would come from $HOME. Code passes field names through `load_settings`.
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    @model_validator(mode="after")
    def _openai_needs_key(self) -> Self:
        if self.embedder.startswith("openai:") and self.openai_api_key is None and not self.openai_base_url:
            raise ValueError("CANDOR_EMBEDDER=openai:... needs OPENAI_API_KEY (or OPENAI_BASE_URL)")
        if self.writer.startswith("openai:") and self.openai_api_key is None and not self.openai_base_url:
            raise ValueError("CANDOR_WRITER=openai:... needs OPENAI_API_KEY (or OPENAI_BASE_URL)")
        judge_endpoint = self.judge_base_url or self.openai_base_url
        if self.judge.startswith("openai:") and self.openai_api_key is None and not judge_endpoint:
            raise ValueError(
                "CANDOR_JUDGE=openai:... needs OPENAI_API_KEY (or CANDOR_JUDGE_BASE_URL / OPENAI_BASE_URL)"
            )
        audit_endpoint = self.audit_base_url or self.openai_base_url
        if self.audit_verifier.startswith("openai:") and self.openai_api_key is None and not audit_endpoint:
            raise ValueError(
                "CANDOR_AUDIT_VERIFIER=openai:... needs OPENAI_API_KEY (or CANDOR_AUDIT_BASE_URL / OPENAI_BASE_URL)"
            )
        return self

    def answer_settings(self) -> dict[str, Any]:
        """The settings an answer depends on, stored with every trace and eval run (no secrets)."""
        return {name: getattr(self, name) for name in ANSWER_SETTINGS}


def load_settings(**overrides: object) -> Settings:
    """Build the settings, translating validation errors into one `ConfigError` naming the variables.

    `overrides` use field names (`home=...`); they win over the environment.
    """
    try:
        return Settings(**{_variable_name(name): value for name, value in overrides.items()})  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "settings"
            problems.append(f"{_variable_name(field)}: {error['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from exc


def _variable_name(field: str) -> str:
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices) and alias.choices:
        return str(alias.choices[0])
    return field
