"""What operators run Candor with: the dashboard's token, rate limits, the spool, retention, how
askers are stored and exported, the chat page's sign-in, and logging."""

from __future__ import annotations

import ipaddress
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

from rag.config.environment import _env, _list_items


class OperatorSettings(BaseSettings):
    """Operating Candor: access to the dashboard, limits, records, the chat page, exports and logs."""

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

    @field_validator("web_trusted_proxies", mode="after")
    @classmethod
    def _proxy_networks(cls, value: str | None) -> str | None:
        for item in _list_items(value):
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an address or a network (10.0.0.5, 10.1.0.0/16)") from None
        return value

    @model_validator(mode="after")
    def _proxy_login_needs_the_proxy(self) -> Self:
        if self.web_chat == "proxy" and not _list_items(self.web_trusted_proxies):
            raise ValueError(
                "CANDOR_WEB_CHAT=proxy needs CANDOR_WEB_TRUSTED_PROXIES: the sign-in proxy's addresses "
                "(a user header from anywhere else could be typed by anyone)"
            )
        return self

    @property
    def trusted_proxies(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """CANDOR_WEB_TRUSTED_PROXIES as networks (an address is a network of one)."""
        return tuple(ipaddress.ip_network(item, strict=False) for item in _list_items(self.web_trusted_proxies))
