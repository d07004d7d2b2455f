"""The settings object: names the variable that is wrong, never reads a field's bare name, hides secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_settings
from rag.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("CANDOR_HOME", "CANDOR_CHUNK_TOKENS", "CANDOR_EMBEDDER", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_home_comes_from_candor_home_not_from_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "somebody"))
    assert load_settings().home != (tmp_path / "somebody").resolve()
    monkeypatch.setenv("CANDOR_HOME", str(tmp_path / "candor"))
    assert load_settings().home == (tmp_path / "candor").resolve()


def test_overrides_by_field_name_win_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CANDOR_CHUNK_TOKENS", "300")
    assert load_settings().chunk_tokens == 300
    assert load_settings(chunk_tokens=120).chunk_tokens == 120


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CANDOR_CHUNK_TOKENS", "abc"),
        ("CANDOR_CHUNK_TOKENS", "5"),
        ("CANDOR_FUSION", "max"),
        ("CANDOR_DENSE_WEIGHT", "2"),
        ("CANDOR_AUDIT_VERIFIER", "evidnce"),
        ("CANDOR_AUDIT_VERIFIER", "Auto"),
        ("CANDOR_AUDIT_VERIFIER", "openai:"),
        ("CANDOR_AUDIT_VERIFIER", "cross-encoder"),
        ("CANDOR_AUDIT_VERIFIER", "llm:gpt-4o"),
        ("CANDOR_EMBEDDER_BACKEND", "onnx-int4"),
        ("CANDOR_ONNX_TARGET", "avx3"),
        ("CANDOR_WEB_CHAT", "on"),
        ("CANDOR_WEB_TRUSTED_PROXIES", "10.0.0.300"),
        ("SLACK_SIGNING_SECRET", ""),
        ("SLACK_SIGNING_SECRET", "   "),
        ("SLACK_SIGNING_SECRET", "abc123"),
        ("SLACK_BOT_TOKEN", ""),
        ("SLACK_BOT_TOKEN", "xoxb-"),
        ("SLACK_BOT_TOKEN", "my-token"),
        ("SLACK_APP_TOKEN", "xoxb-the-wrong-kind"),
        ("MICROSOFT_APP_PASSWORD", ""),
    ],
)
def test_a_bad_value_names_its_variable(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


@pytest.mark.parametrize("value", ["auto", "evidence", " evidence ", "openai:gpt-x", "cross-encoder:/models/nli"])
def test_the_audit_verifier_is_one_of_its_forms(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CANDOR_AUDIT_VERIFIER", value)
    monkeypatch.setenv("CANDOR_AUDIT_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_settings().audit_verifier == value.strip()


def test_openai_embeddings_need_a_key_or_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANDOR_EMBEDDER", "openai:text-embedding-3-small")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        load_settings()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    settings = load_settings()
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in str(settings.model_dump())


@pytest.mark.parametrize("app_type", ["SingleTenant", "UserAssignedMSI"])
def test_a_single_tenant_or_managed_identity_bot_needs_its_tenant(
    monkeypatch: pytest.MonkeyPatch, app_type: str
) -> None:
    monkeypatch.setenv("MICROSOFT_APP_ID", "00000000-0000-0000-0000-000000000001")
    monkeypatch.setenv("MICROSOFT_APP_TYPE", app_type)
    with pytest.raises(ConfigError, match="MICROSOFT_APP_TENANT_ID"):
        load_settings()
    monkeypatch.setenv("MICROSOFT_APP_TENANT_ID", "00000000-0000-0000-0000-0000000000aa")
    assert load_settings().microsoft_app_type == app_type
    monkeypatch.setenv("MICROSOFT_APP_TYPE", "Sideways")
    with pytest.raises(ConfigError, match="MICROSOFT_APP_TYPE"):
        load_settings()


@pytest.mark.parametrize(
    ("given", "read"),
    [("true", "evidence"), ("false", "off"), ("cross-encoder:/models/nli", "cross-encoder:/models/nli")],
)
def test_the_judge_prefilter_is_named(monkeypatch: pytest.MonkeyPatch, given: str, read: str) -> None:
    monkeypatch.setenv("CANDOR_JUDGE_PREFILTER", given)
    assert load_settings().judge_prefilter == read


def test_an_unknown_judge_prefilter_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANDOR_JUDGE_PREFILTER", "sometimes")
    with pytest.raises(ConfigError, match="CANDOR_JUDGE_PREFILTER"):
        load_settings()


def test_the_models_folder_is_the_homes_unless_one_is_shared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CANDOR_MODELS_DIR", raising=False)
    monkeypatch.setenv("CANDOR_HOME", str(tmp_path / "candor"))
    assert load_settings().model_cache == (tmp_path / "candor" / "models").resolve()
    monkeypatch.setenv("CANDOR_MODELS_DIR", str(tmp_path / "shared"))
    assert load_settings().model_cache == (tmp_path / "shared").resolve()


def test_the_int8_target_setting_reaches_the_embedder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rag.backends.embeddings import SentenceTransformerEmbedder, build_embedder

    monkeypatch.setenv("CANDOR_ONNX_TARGET", "avx2")
    chosen = build_embedder(load_settings(home=tmp_path))
    assert isinstance(chosen, SentenceTransformerEmbedder) and chosen.onnx_target == "avx2"
    assert chosen.backend == "onnx-int8" and chosen._model is None  # the default backend, not loaded yet
    monkeypatch.setenv("CANDOR_ONNX_TARGET", "auto")
    detected = build_embedder(load_settings(home=tmp_path))
    assert isinstance(detected, SentenceTransformerEmbedder) and detected.onnx_target is None  # this CPU's


def test_an_empty_slack_secret_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "")
    with pytest.raises(ConfigError, match=r"SLACK_SIGNING_SECRET: .*is set but empty"):
        load_settings()
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "0123456789abcdef")
    assert load_settings().slack_signing_secret is not None


def test_the_proxy_login_needs_the_proxys_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANDOR_WEB_CHAT", "proxy")
    monkeypatch.delenv("CANDOR_WEB_TRUSTED_PROXIES", raising=False)
    with pytest.raises(ConfigError, match="CANDOR_WEB_CHAT=proxy needs CANDOR_WEB_TRUSTED_PROXIES"):
        load_settings()
    monkeypatch.setenv("CANDOR_WEB_TRUSTED_PROXIES", "10.0.0.5, 10.1.0.0/16 fd00::/8")
    assert [str(n) for n in load_settings().trusted_proxies] == ["10.0.0.5/32", "10.1.0.0/16", "fd00::/8"]
