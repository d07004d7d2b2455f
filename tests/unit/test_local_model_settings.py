"""A model served on this machine gets minutes per request and answer, unless the operator set them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_settings


@pytest.mark.parametrize(
    ("base_url", "local"),
    [
        ("http://127.0.0.1:8090/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://10.0.4.7:8000/v1", True),
        ("http://llama:8080/v1", True),  # a compose service
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://my-resource.openai.azure.com/openai/v1", False),
    ],
)
def test_a_local_model_gets_minutes_a_hosted_one_seconds(
    base_url: str, local: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CANDOR_LLM_TIMEOUT", "CANDOR_ANSWER_BUDGET_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CANDOR_WRITER", "openai:qwen")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    settings = load_settings(home=tmp_path)
    assert (settings.llm_timeout, settings.answer_budget) == ((300.0, 900.0) if local else (30.0, 60.0))


def test_limits_the_operator_set_are_kept_for_a_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANDOR_WRITER", "openai:qwen")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8090/v1")
    monkeypatch.setenv("CANDOR_LLM_TIMEOUT", "45")
    monkeypatch.setenv("CANDOR_ANSWER_BUDGET_SECONDS", "120")
    settings = load_settings(home=tmp_path)
    assert (settings.llm_timeout, settings.answer_budget) == (45.0, 120.0)
