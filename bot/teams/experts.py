"""Teams' side of the expert role (`rag.experts`): is this person an expert, what are they called, and
is the triage channel's team free of guests.

A user is an expert when `CANDOR_EXPERTS` names their Entra object id (`teams:<id>`) or a team they
belong to (`teams-team:<team id>`), asked of the Bot Connector (`GET /v3/conversations/{team}/members/
{user}`; kept a minute). The triage channel's team is read once before the first post
(`pagedmembers`): a team with guests is refused, naming the channel, because the triage card shows
questions from private conversations to everyone in the team.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from botbuilder.core import BotAdapter, TurnContext
from msrest.exceptions import HttpOperationError

from rag.errors import ConfigError
from rag.experts import Experts

log = logging.getLogger("candor.teams")

MEMBER_SECONDS = 60.0
PAGE_SIZE = 500


class TeamsExperts:
    def __init__(self, experts: Experts, *, member_seconds: float = MEMBER_SECONDS) -> None:
        self.experts = experts
        self.member_seconds = member_seconds
        self._members: dict[tuple[str, str], tuple[float, bool]] = {}

    async def is_expert(self, context: TurnContext, user: str) -> bool:
        """`user` (an Entra object id, or a Teams id where there is none) is named, or is a member
        of a configured team."""
        account = context.activity.from_property
        ids = {user, *(str(i) for i in (account.id, account.aad_object_id) if i)} if account else {user}
        if any(self.experts.listed("teams", i) for i in ids):
            return True
        for team in self.experts.groups_of("teams"):
            if await self._member(context, team, user):
                return True
        return False

    def name(self, user: str, given: str | None) -> str:
        """What a kept answer is signed with: the operator's name for them, else Teams' (from the
        authenticated activity), stored with the answer when it is kept."""
        return self.experts.name_of("teams", user) or (given or "").strip() or user

    async def _member(self, context: TurnContext, team: str, user: str) -> bool:
        now = time.monotonic()
        cached = self._members.get((team, user))
        if cached is not None and now - cached[0] < self.member_seconds:
            return cached[1]
        try:
            await _connector(context).conversations.get_conversation_member(team, user)
            member = True
        except HttpOperationError as exc:
            status = getattr(exc.response, "status_code", None)
            if status != 404:
                log.error("could not ask whether %s is in expert team %s: %s", user, team, exc)
                return False
            member = False
        self._members[(team, user)] = (now, member)
        return member


async def check_triage_team(context: TurnContext, channel: str) -> None:
    """A `ConfigError` naming the channel when its team has guests (`userRole: guest`)."""
    conversations = _connector(context).conversations
    token: str | None = None
    while True:
        page = await conversations.get_teams_conversation_paged_members(channel, PAGE_SIZE, token)
        guests = [m for m in page.members or () if str(getattr(m, "user_role", "") or "").lower() == "guest"]
        if guests:
            raise ConfigError(
                f"TEAMS_TRIAGE_CHANNEL {channel} is in a team with guests ({len(guests)}): hand-offs show questions "
                "from private conversations to the whole team; use a channel of a team without guests"
            )
        token = page.continuation_token
        if not token:
            return


def _connector(context: TurnContext) -> Any:
    client = context.turn_state.get(BotAdapter.BOT_CONNECTOR_CLIENT_KEY)
    if client is None:
        raise ConfigError("this turn has no Bot Connector client")
    return client
