"""Slack and Teams: credentials, tenants, hand-offs to a person and the experts who answer them,
the review sample, and how chat answers are scheduled."""

from __future__ import annotations

import re
from typing import Literal, Self
from urllib.parse import unquote

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings

from rag.config.environment import _env, _list_items
from rag.errors import ConfigError
from rag.experts import Experts, parse_authority

_TEAMS_CHANNEL = re.compile(r"19:[^\s;:/@]+@thread\.(?:tacv2|skype)")
"""A Teams channel's conversation id (a team's General channel has the team's id, the same shape)."""


class ChatSettings(BaseSettings):
    """Slack and Teams."""

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

    @model_validator(mode="after")
    def _single_tenant_needs_tenant(self) -> Self:
        needs_tenant = self.microsoft_app_type in ("SingleTenant", "UserAssignedMSI")
        if needs_tenant and self.microsoft_app_id and not self.microsoft_app_tenant_id:
            raise ValueError(f"MICROSOFT_APP_TYPE={self.microsoft_app_type} needs MICROSOFT_APP_TENANT_ID")
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

    @property
    def teams_tenant_ids(self) -> frozenset[str]:
        """MICROSOFT_APP_TENANT_ID and CANDOR_TEAMS_TENANTS together (`*` among them: any)."""
        named = set(_list_items(self.teams_tenants))
        return frozenset(named | {self.microsoft_app_tenant_id} if self.microsoft_app_tenant_id else named)
