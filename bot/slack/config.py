"""Slack's part of the settings: `SlackConfig`, read from `Settings` by `slack_config`, which refuses
what cannot work (a bot token without a way to receive events; a triage channel nobody may answer)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag.config import Settings
from rag.errors import ConfigError
from rag.experts import Experts


@dataclass(frozen=True, slots=True)
class SlackConfig:
    bot_token: str
    signing_secret: str | None = None
    app_token: str | None = None
    api_url: str | None = None
    ask_human: str | None = None
    triage_channel: str | None = None
    """Where "Ask a person" hands questions to the team (`bot.slack.handoff`); None: no hand-offs."""
    experts: Experts = field(default_factory=Experts)
    """Who may answer hand-offs and keep curated answers (CANDOR_EXPERTS)."""
    public_url: str | None = None
    """CANDOR_PUBLIC_URL: triage posts link to the trace's dashboard page there."""
    review_channel: str | None = None
    """Where the weekly review sample is posted (`bot.slack.review`); None: no post."""
    review_sample: int = 10
    review_every_days: int = 7
    concurrency: int | None = None
    """Answers made at once (None: the CPU count)."""
    answers_here: bool = True
    """False: this process only acknowledges; questions are left in the ledger for an answering
    process (`candor serve` starts one: `bot/slack/process.py`)."""


def slack_config(settings: Settings, *, answers_here: bool | None = None) -> SlackConfig:
    """The Slack part of the settings; a bot token needs a signing secret (HTTP) or an app token (Socket Mode).

    `answers_here` overrides `CANDOR_SLACK_ANSWER_PROCESS` (the answering child process sets it)."""
    if settings.slack_bot_token is None:
        raise ConfigError("SLACK_BOT_TOKEN is not set")
    secret, app_token = settings.slack_signing_secret, settings.slack_app_token
    if secret is None and app_token is None:
        raise ConfigError("SLACK_BOT_TOKEN needs SLACK_SIGNING_SECRET (HTTP mode) or SLACK_APP_TOKEN (Socket Mode)")
    experts = Experts.parse(settings.experts)
    if settings.slack_triage_channel and not experts.configured("slack"):
        raise ConfigError(
            f"SLACK_TRIAGE_CHANNEL is set but CANDOR_EXPERTS names no Slack expert: nobody could answer the "
            f"hand-offs posted to {settings.slack_triage_channel}. Add slack:<user id> or slack-group:<group id> "
            "entries to CANDOR_EXPERTS, or unset SLACK_TRIAGE_CHANNEL"
        )
    return SlackConfig(
        experts=experts,
        bot_token=settings.slack_bot_token.get_secret_value(),
        signing_secret=secret.get_secret_value() if secret is not None else None,
        app_token=app_token.get_secret_value() if app_token is not None else None,
        api_url=settings.slack_api_url,
        ask_human=settings.slack_ask_human,
        triage_channel=settings.slack_triage_channel,
        public_url=settings.public_url,
        review_channel=settings.slack_review_channel,
        review_sample=settings.review_sample,
        review_every_days=settings.review_every_days,
        concurrency=settings.answer_concurrency,
        answers_here=not settings.slack_answer_process if answers_here is None else answers_here,
    )


__all__ = ["SlackConfig", "slack_config"]
