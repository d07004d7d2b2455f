"""deploy/: the compose file against the Compose Specification's schema, every Kubernetes manifest
against the Kubernetes API schema (strict: an unknown field is an error), and what each must hold:
among it, the compose file's opt-in `local-model` profile and the settings that point Candor at it."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
import tomllib
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from rag.config import LOCAL_ANSWER_BUDGET, LOCAL_LLM_TIMEOUT, load_settings
from rag.ingest.sources.config import parse_sources
from tests.conftest import REPO

DEPLOY = REPO / "deploy"
KUBERNETES_VERSION = "1.30"
MANIFESTS = sorted(p for p in (DEPLOY / "kubernetes").glob("*.yaml") if p.name != "kustomization.yaml")


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def compose_schema() -> dict[str, Any]:
    schema = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    return json.loads(schema.read_text(encoding="utf-8"))


def example_env() -> str:
    return (DEPLOY / "candor.env.example").read_text(encoding="utf-8")


def local_model_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scripts_local_model", REPO / "scripts" / "local_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_compose_file_follows_the_compose_specification() -> None:
    (compose,) = documents(DEPLOY / "compose.yaml")
    jsonschema.validate(compose, compose_schema())
    broken = copy.deepcopy(compose)
    broken["services"]["candor"]["restart_policy"] = "always"  # not a service key: the check can fail
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, compose_schema())


def test_the_compose_file_waits_for_the_schema_and_keeps_secrets_out() -> None:
    (compose,) = documents(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert {name for name, service in services.items() if "profiles" not in service} == {
        "postgres",
        "migrate",
        "ingest",
        "candor",
    }
    for name in ("ingest", "candor"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[name]["env_file"] == "candor.env"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthz" in " ".join(services["candor"]["healthcheck"]["test"])
    assert "pgdata" in compose["volumes"]
    text = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    assert "PASSWORD:" not in text and "TOKEN=" not in text and "SECRET=" not in text


def test_the_local_model_profile_is_opt_in_and_serves_what_candor_is_pointed_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (compose,) = documents(DEPLOY / "compose.yaml")
    services = compose["services"]
    llm = services["llm"]
    assert llm["profiles"] == ["local-model"]
    assert llm["image"] == "ghcr.io/ggml-org/llama.cpp:server"
    default = {name for name, service in services.items() if "profiles" not in service}
    for name in default:  # `docker compose up` without the profile must not need it
        assert set(services[name].get("depends_on", {})) <= default, name
    flags = dict(zip(llm["command"][::2], llm["command"][1::2], strict=True))
    assert flags["--host"] == "0.0.0.0" and flags["--port"] == "8080"
    assert llm["volumes"] == ["models:/models:ro"] and "models" in compose["volumes"]
    assert llm["healthcheck"]["test"][-1] == f"http://127.0.0.1:{flags['--port']}/health"
    script = local_model_script()
    model = script.MODELS["qwen-1.5b"]  # the file `scripts/local_model.py fetch` assembles
    assert flags["--model"] == f"/models/{script.gguf_path(model).name}" and flags["--alias"] == model.alias

    block = example_env().split("# A language model writes the answers", 1)[1]
    pointed = dict(
        line.removeprefix("# ").split("=", 1) for line in block.splitlines() if line.startswith("# ") and "=" in line
    )
    assert set(pointed) == {"CANDOR_WRITER", "OPENAI_BASE_URL"}
    address = urlsplit(pointed["OPENAI_BASE_URL"])
    assert (address.hostname, address.port, address.path) == ("llm", int(flags["--port"]), "/v1")
    for name in ("CANDOR_LLM_TIMEOUT", "CANDOR_ANSWER_BUDGET_SECONDS", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(home=tmp_path, writer=pointed["CANDOR_WRITER"], openai_base_url=pointed["OPENAI_BASE_URL"])
    assert settings.writer == f"openai:{flags['--alias']}"
    assert (settings.llm_timeout, settings.answer_budget) == (LOCAL_LLM_TIMEOUT, LOCAL_ANSWER_BUDGET)


def test_the_example_env_file_is_a_valid_configuration(tmp_path: Path) -> None:
    values = {}
    for line in example_env().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    overrides = {
        "home": tmp_path,
        "database_url": values.pop("CANDOR_DATABASE_URL"),
        "admin_token": values.pop("CANDOR_ADMIN_TOKEN"),
        "retention_days": values.pop("CANDOR_RETENTION_DAYS"),
    }
    assert values == {}, "every uncommented setting is checked here"
    settings = load_settings(**overrides)
    assert settings.retention_days == 90 and settings.slack_bot_token is None


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_kubernetes_manifest_is_valid(path: Path) -> None:
    for doc in documents(path):
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_an_unknown_field_fails_the_kubernetes_check() -> None:
    (deployment,) = documents(DEPLOY / "kubernetes" / "deployment.yaml")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    (kustomization,) = documents(DEPLOY / "kubernetes" / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(p.name for p in MANIFESTS)


def test_the_server_runs_replicated_probed_bounded_and_unprivileged_with_secrets_by_reference() -> None:
    (deployment,) = documents(DEPLOY / "kubernetes" / "deployment.yaml")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] >= 2
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert spec["securityContext"]["runAsNonRoot"] and container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["envFrom"] == [{"secretRef": {"name": "candor"}}]
    assert all(
        "value" not in e or not any(w in e["name"] for w in ("TOKEN", "SECRET", "PASSWORD", "URL"))
        for e in container["env"]
    )
    kinds = {doc["kind"] for path in MANIFESTS for doc in documents(path)}
    assert {"Deployment", "Service", "PodDisruptionBudget", "Job", "CronJob"} <= kinds
    assert "kind: Secret" not in "".join(p.read_text(encoding="utf-8") for p in MANIFESTS)


def test_the_sync_cronjob_reads_a_valid_sources_file_and_credentials_only_by_reference() -> None:
    (configmap,) = documents(DEPLOY / "kubernetes" / "sources-configmap.yaml")
    sources = parse_sources(yaml.safe_load(configmap["data"]["sources.yaml"]), where="the ConfigMap")
    assert {s.kind for s in sources} == {"website", "confluence"}
    assert all(name.isupper() for s in sources for name in s.credentials.values())  # variable names only
    (cronjob,) = documents(DEPLOY / "kubernetes" / "sync-cronjob.yaml")
    spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"] == ["sync", "--config", "/etc/candor/sources.yaml"]
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"  # two syncs of one source never overlap
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert mounted["sources"] == "/etc/candor" and volumes["sources"]["configMap"]["name"] == "candor-sources"
    assert [ref["secretRef"]["name"] for ref in container["envFrom"]] == ["candor", "candor-sources"]
    assert container["securityContext"]["readOnlyRootFilesystem"] and spec["securityContext"]["runAsNonRoot"]


def test_the_image_recipe_is_multi_stage_non_root_and_health_checked() -> None:
    recipe = (DEPLOY / "Containerfile").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM \$\{BASE\}(?: AS (\S+))?$", recipe, re.MULTILINE)
    assert stages == ["build", "runtime-venv", ""] and "ARG BASE=" in recipe
    assert "candor prepare" in recipe  # the model's export baked in at build time
    # torch only in the build stage: the image copies the runtime stage's environment, which is
    # checked to have no torch and to load the export without it
    final = recipe.split("AS runtime-venv", 1)[1].split("\nFROM ${BASE}\n", 1)[1]
    assert "COPY --from=runtime-venv /opt/candor /opt/candor" in final and "--from=build" not in final
    runtime = recipe.split("AS runtime-venv", 1)[1].split("\nFROM ${BASE}\n", 1)[0]
    assert "runtime_requirements.py" in runtime and 'import torch" 2>/dev/null' in runtime and "torch==" not in runtime
    assert "USER 10001:10001" in recipe and "HEALTHCHECK" in recipe and "/healthz" in recipe


def _runtime_requirements() -> ModuleType:
    spec = importlib.util.spec_from_file_location("runtime_requirements", DEPLOY / "runtime_requirements.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_runtime_stage_installs_no_torch() -> None:
    """What deploy/runtime_requirements.py lets the runtime stage install, followed through the
    installed distributions' own requirements (extras and markers as pip reads them), reaches
    neither torch nor sentence-transformers; and it leaves out only what the build stage needs."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    module = _runtime_requirements()
    listed = module.runtime_requirements(REPO / "pyproject.toml")
    everything = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert {module.name(r) for r in everything} - {module.name(r) for r in listed} == module.BUILD_ONLY
    seen: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in listed]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        key = module.name(requirement.name)
        for wanted in ("", *sorted(requirement.extras)):
            if (key, wanted) in seen:
                continue
            seen.add((key, wanted))
            try:
                todo += [(Requirement(r), wanted) for r in requires(key) or []]
            except PackageNotFoundError:
                continue
    reached = {key for key, _ in seen}
    assert "torch" not in reached and "sentence-transformers" not in reached and "transformers" not in reached
    assert {"onnxruntime", "tokenizers", "sqlalchemy", "slack-bolt"} <= reached
