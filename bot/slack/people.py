"""Two small things every Slack listener does with people: say something only they see, and find the
name to show for them (a curated answer's author, a labeller)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("candor.slack")


async def whisper(
    client: AsyncWebClient, channel: str, user: str, text: str, blocks: list[dict[str, Any]] | None = None
) -> None:
    """An ephemeral note to `user` in `channel`; a failure is logged, never raised (it is a courtesy)."""
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=text, blocks=blocks)
    except SlackApiError as exc:
        log.warning("could not send an ephemeral note: %s", exc)


async def display_name(client: AsyncWebClient, user: str, given: Mapping[str, Any]) -> str:
    """The person's name as Slack shows it (`users.info`, scope `users:read`): the real name, else the
    display name, else the payload's name, else the id."""
    try:
        info = (await client.users_info(user=user)).get("user") or {}
    except SlackApiError as exc:
        log.warning("users.info failed for %s: %s", user, exc)
        info = {}
    profile = info.get("profile") or {}
    for name in (profile.get("real_name"), info.get("real_name"), profile.get("display_name"), given.get("name")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return user
