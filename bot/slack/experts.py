"""Slack's side of the expert role (`rag.experts`): is this person an expert, what are they called,
and is the triage channel private.

A user is an expert when `CANDOR_EXPERTS` names them (`slack:U…`) or a user group they belong to
(`slack-group:S…`, read with `usergroups.users.list`, scope ``usergroups:read``; kept a minute).
A group that cannot be read counts as no members: the refusal is logged with Slack's error.

The triage channel shows questions that may come from private conversations, and whoever reads it
can see the hand-off form's buttons: it must be a private channel that is not shared with another
organisation. `conversations.info` is asked at start-up and before the first post.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.people import display_name
from rag.errors import ConfigError
from rag.experts import Experts

log = logging.getLogger("candor.slack")

GROUP_SECONDS = 60.0
_SHARED = ("is_shared", "is_ext_shared", "is_org_shared", "is_pending_ext_shared")


class SlackExperts:
    def __init__(self, client: AsyncWebClient, experts: Experts, *, group_seconds: float = GROUP_SECONDS) -> None:
        self.client = client
        self.experts = experts
        self.group_seconds = group_seconds
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    async def is_expert(self, user: str) -> bool:
        if self.experts.listed("slack", user):
            return True
        for group in self.experts.groups_of("slack"):
            if user in await self._group_members(group):
                return True
        return False

    async def name(self, user: str, given: Mapping[str, Any]) -> str:
        """What a kept answer is signed with: the operator's name for them, else Slack's, read now
        and stored with the answer (a later change of profile does not rewrite it)."""
        return self.experts.name_of("slack", user) or await display_name(self.client, user, given)

    async def _group_members(self, group: str) -> frozenset[str]:
        now = time.monotonic()
        cached = self._members.get(group)
        if cached is not None and now - cached[0] < self.group_seconds:
            return cached[1]
        try:
            users = frozenset(str(u) for u in (await self.client.usergroups_users_list(usergroup=group))["users"])
        except SlackApiError as exc:
            log.error("could not read the members of expert group %s: %s", group, exc.response.get("error"))
            return frozenset()
        self._members[group] = (now, users)
        return users


async def check_triage_channel(client: AsyncWebClient, channel: str) -> None:
    """A `ConfigError` naming the channel unless it is private and not shared; Slack unreachable
    raises `SlackApiError` (the caller tries again before the first post)."""
    try:
        info = (await client.conversations_info(channel=channel))["channel"]
    except SlackApiError as exc:
        if exc.response.get("error") == "channel_not_found":
            raise ConfigError(
                f"SLACK_TRIAGE_CHANNEL {channel}: no such channel, or Candor is not a member of it (invite it)"
            ) from exc
        raise
    if not (info.get("is_private") or info.get("is_group")):
        raise ConfigError(
            f"SLACK_TRIAGE_CHANNEL {channel} (#{info.get('name', channel)}) is a public channel: hand-offs show "
            "questions from private conversations and who may answer them; use a private channel"
        )
    shared = [flag for flag in _SHARED if info.get(flag)]
    if shared:
        raise ConfigError(
            f"SLACK_TRIAGE_CHANNEL {channel} (#{info.get('name', channel)}) is shared with another workspace or "
            f"organisation ({', '.join(shared)}): use a private channel of your own"
        )
