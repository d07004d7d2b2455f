"""What a claimed Teams question carries (the ledger's payload), read from the activity that asked it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from botbuilder.core import TurnContext
from botbuilder.schema import Activity

from rag.model.answers import Audience

_COMMAND_WORD = re.compile(r"^\s*(?:ask|help)\b[\s:,-]*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TeamsJob:
    """One question to answer, as the claim's payload stores it."""

    reference: dict[str, Any]
    """The serialised `ConversationReference` the answer is sent to."""
    text: str
    user: str
    conversation: str
    conversation_type: str
    tenant: str
    team_id: str = ""
    """A channel's team (`channelData.team.id`); empty outside teams."""
    channel_id: str = ""
    """A channel's id without the thread (`channelData.channel.id`); empty outside teams."""

    def as_payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> TeamsJob:
        return cls(**{k: v for k, v in payload.items() if k in cls.__dataclass_fields__})

    @property
    def audience(self) -> Audience:
        """Personal chats are direct; group chats and team channels are private: read by their
        members only, whom the tenant controls (Slack's public channels are open to the whole
        workspace, Teams channels to their team). The access policy decides what each may read."""
        return "direct" if self.conversation_type == "personal" else "private"

    @property
    def where(self) -> str:
        """The conversation as the access policy sees it: `tenant/team/channel` for a team channel
        (every thread of it), `tenant/conversation` for a chat."""
        if self.conversation_type == "channel" and self.team_id and self.channel_id:
            return f"{self.tenant}/{self.team_id}/{self.channel_id}"
        return f"{self.tenant}/{self.conversation}"


def job_of(activity: Activity, text: str) -> TeamsJob:
    """The job of the question `activity` asks (or, edited, now asks), its text `text`."""
    conversation = activity.conversation
    return TeamsJob(
        reference=TurnContext.get_conversation_reference(activity).serialize(),
        text=text,
        user=activity.from_property.id if activity.from_property else "",
        conversation=conversation.id if conversation else "",
        conversation_type=(conversation.conversation_type if conversation else None) or "personal",
        tenant=channel_data(activity, "tenant"),
        team_id=channel_data(activity, "team"),
        channel_id=channel_data(activity, "channel"),
    )


def mentions_recipient(activity: Activity) -> bool:
    """Whether the message @mentions whom it was sent to (the bot)."""
    recipient = activity.recipient.id if activity.recipient else None
    for mention in TurnContext.get_mentions(activity):
        mentioned = (getattr(mention, "additional_properties", None) or {}).get("mentioned")
        if recipient and isinstance(mentioned, dict) and mentioned.get("id") == recipient:
            return True
    return False


def revision_of(activity: Activity) -> str:
    """The order of a question's edits: the edit's time in UTC ISO form (sorts as it was made); ""
    when Teams gives none."""
    timestamp = activity.timestamp
    if not isinstance(timestamp, datetime):
        return ""
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=UTC)
    return timestamp.astimezone(UTC).isoformat(timespec="microseconds")


def event_type(activity: Activity) -> str:
    """`channelData.eventType`: what a `messageUpdate` or `messageDelete` is ("editMessage",
    "undeleteMessage", "softDeleteMessage"); "" when absent."""
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    return str(data.get("eventType") or "")


def channel_data(activity: Activity, field: str) -> str:
    """`channelData.<field>.id`: the tenant (botbuilder 4.17 drops `conversation.tenantId` when
    reading), the team, the channel."""
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    value = data.get(field)
    return str(value.get("id") or "") if isinstance(value, dict) else ""


def question_text(activity: Activity) -> str:
    """The message without the bot's @mention and without a leading command word ("ask", "help")."""
    text = TurnContext.remove_recipient_mention(activity) if activity.recipient else activity.text
    return _COMMAND_WORD.sub("", (text or "").replace("&nbsp;", " ")).strip()
