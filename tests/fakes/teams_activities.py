"""What Teams posts to a bot's `/api/messages`, built for tests, shaped as the Bot Framework sends it.

Every builder returns the JSON body (camelCase, as on the wire) of one incoming activity:

    body = personal_message("how do I reset my password?", service_url=fake.service_url)
    await session.post(bot_url, json=body)

- `personal_message`: a 1:1 chat with the bot (`conversationType` "personal", `a:...` conversation id).
- `channel_mention`: a channel post (or thread reply, `reply_to_id`) that @mentions the bot: the text starts
  with `<at>Candor</at>` and a `mention` entity names the bot, as Teams sends it.
- `group_chat_mention`: the same in a group chat (`conversationType` "groupChat"); `group_chat_message`:
  a group-chat message that does not mention the bot.
- `members_added`: the `conversationUpdate` Teams sends when the bot (or a user) is added.
- `feedback_invoke`: the `message/submitAction` invoke of Teams' 👍/👎 feedback loop on a bot message.
- `message_edited`, `message_deleted`: the `messageUpdate` (`editMessage`) and `messageDelete`
  (`softDeleteMessage`) Teams sends when the user edits or deletes a message they sent.
- `card_action`: the `adaptiveCard/action` invoke of an `Action.Execute` click on a bot message's card.

Activity ids come from one process-wide counter (`next_activity_id`), shared with the fake Bot Connector,
so ids are unique across incoming and bot-sent activities and look like Teams' (epoch milliseconds).
Timestamps are ISO 8601 UTC with a `Z`, as the Bot Framework serialises them.
"""

from __future__ import annotations

import itertools
import json
import threading
from datetime import UTC, datetime
from typing import Any, Literal

ConversationType = Literal["personal", "channel", "groupChat"]
Reaction = Literal["like", "dislike"]
Activity = dict[str, Any]

BOT_ID = "28:bot-id"
BOT_NAME = "Candor"
USER_ID = "29:user-1"
USER_NAME = "Ada"
USER_AAD_ID = "00000000-0000-4000-8000-00000000a0a1"
TENANT_ID = "tenant-1"
TEAM_ID = "19:team-1@thread.tacv2"
CHANNEL_ID = "19:channel-1@thread.tacv2"
GROUP_CHAT_ID = "19:group-chat-1@thread.v2"
PERSONAL_CONVERSATION_ID = "a:personal-1"
DEFAULT_SERVICE_URL = "https://smba.trafficmanager.net/teams/"

_ID_BASE = 1_700_000_000_000
_ids = itertools.count(1)
_ids_lock = threading.Lock()


def next_activity_id() -> str:
    """A fresh Teams-style message id: "1700000000001", "1700000000002", ... (unique per process)."""
    with _ids_lock:
        return str(_ID_BASE + next(_ids))


def now_iso() -> str:
    """The current time as the Bot Framework writes it: "2024-05-01T12:00:00.123Z"."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def mention_text(name: str = BOT_NAME) -> str:
    """How Teams writes an @mention inside `text`: `<at>Candor</at>`."""
    return f"<at>{name}</at>"


def personal_message(
    text: str,
    *,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    conversation_id: str = PERSONAL_CONVERSATION_ID,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
) -> Activity:
    """A message a user sends the bot in a 1:1 chat."""
    conversation = {"conversationType": "personal", "tenantId": tenant_id, "id": conversation_id}
    return _message(
        text,
        activity_id=activity_id,
        service_url=service_url,
        sender=_user(user_id, user_name),
        recipient={"id": bot_id, "name": bot_name},
        conversation=conversation,
        channel_data={"tenant": {"id": tenant_id}},
    )


def channel_mention(
    text: str,
    *,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    team_id: str = TEAM_ID,
    channel_id: str = CHANNEL_ID,
    conversation_id: str | None = None,
    reply_to_id: str | None = None,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """A channel post (or, with `reply_to_id`, a reply in that post's thread) that @mentions the bot.

    The conversation id is the channel's with `;messageid=<thread root>`: the root is `reply_to_id` for a
    reply, the activity itself for a new post."""
    activity_id = activity_id or next_activity_id()
    root = reply_to_id or activity_id
    conversation = {
        "isGroup": True,
        "conversationType": "channel",
        "tenantId": tenant_id,
        "id": conversation_id or f"{channel_id};messageid={root}",
    }
    channel_data = {
        "teamsChannelId": channel_id,
        "teamsTeamId": team_id,
        "channel": {"id": channel_id},
        "team": {"id": team_id},
        "tenant": {"id": tenant_id},
    }
    activity = _message(
        f"{mention_text(bot_name)} {text}",
        activity_id=activity_id,
        service_url=service_url,
        sender=_user(user_id, user_name),
        recipient={"id": bot_id, "name": bot_name},
        conversation=conversation,
        channel_data=channel_data,
        mentioned=(bot_id, bot_name),
    )
    if reply_to_id is not None:
        activity["replyToId"] = reply_to_id
    return activity


def group_chat_mention(
    text: str,
    *,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    conversation_id: str = GROUP_CHAT_ID,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """A group-chat message that @mentions the bot."""
    conversation = {"isGroup": True, "conversationType": "groupChat", "tenantId": tenant_id, "id": conversation_id}
    return _message(
        f"{mention_text(bot_name)} {text}",
        activity_id=activity_id,
        service_url=service_url,
        sender=_user(user_id, user_name),
        recipient={"id": bot_id, "name": bot_name},
        conversation=conversation,
        channel_data={"tenant": {"id": tenant_id}},
        mentioned=(bot_id, bot_name),
    )


def group_chat_message(
    text: str,
    *,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    conversation_id: str = GROUP_CHAT_ID,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """A group-chat message that does not mention the bot (Teams delivers these to a bot whose app has
    the chat's resource-specific consent, `ChatMessage.Read.Chat`)."""
    conversation = {"isGroup": True, "conversationType": "groupChat", "tenantId": tenant_id, "id": conversation_id}
    return _message(
        text,
        activity_id=activity_id,
        service_url=service_url,
        sender=_user(user_id, user_name),
        recipient={"id": bot_id, "name": bot_name},
        conversation=conversation,
        channel_data={"tenant": {"id": tenant_id}},
    )


def members_added(
    *,
    bot_added: bool = True,
    conversation_type: ConversationType = "personal",
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    conversation_id: str | None = None,
    team_id: str = TEAM_ID,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """The `conversationUpdate` for the bot (`bot_added`) or the user joining a conversation."""
    conversation: Activity = {"conversationType": conversation_type, "tenantId": tenant_id}
    channel_data: Activity = {"tenant": {"id": tenant_id}}
    if conversation_type == "personal":
        conversation["id"] = conversation_id or PERSONAL_CONVERSATION_ID
    elif conversation_type == "channel":
        # A team's General channel has the team's id; the bot is added to the team as a whole.
        conversation.update(isGroup=True, id=conversation_id or team_id)
        channel_data.update(
            eventType="teamMemberAdded",
            team={"id": team_id, "name": "Team 1", "aadGroupId": "00000000-0000-4000-8000-0000000071e1"},
            settings={"selectedChannel": {"id": team_id}},
        )
    else:
        conversation.update(isGroup=True, id=conversation_id or GROUP_CHAT_ID)
    added = {"id": bot_id} if bot_added else {"id": user_id, "aadObjectId": USER_AAD_ID}
    return {
        "type": "conversationUpdate",
        "id": activity_id or next_activity_id(),
        "timestamp": now_iso(),
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": _user(user_id, user_name),
        "recipient": {"id": bot_id, "name": bot_name},
        "conversation": conversation,
        "membersAdded": [added],
        "channelData": channel_data,
    }


def feedback_invoke(
    reply_to_id: str,
    reaction: Reaction = "like",
    text: str | None = None,
    *,
    conversation_id: str = PERSONAL_CONVERSATION_ID,
    conversation_type: ConversationType = "personal",
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """Teams' feedback-loop invoke for the bot message `reply_to_id`: 👍 ("like") or 👎 ("dislike").

    `feedback` is a JSON string, as Teams sends it; without a comment its `feedbackText` is ""."""
    conversation: Activity = {"conversationType": conversation_type, "tenantId": tenant_id, "id": conversation_id}
    if conversation_type != "personal":
        conversation["isGroup"] = True
    return {
        "type": "invoke",
        "name": "message/submitAction",
        "id": activity_id or next_activity_id(),
        "timestamp": now_iso(),
        "localTimestamp": now_iso(),
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": _user(user_id, user_name),
        "recipient": {"id": bot_id, "name": bot_name},
        "conversation": conversation,
        "replyToId": reply_to_id,
        "value": {
            "actionName": "feedback",
            "actionValue": {"reaction": reaction, "feedback": json.dumps({"feedbackText": text or ""})},
        },
        "channelData": {"tenant": {"id": tenant_id}, "source": {"name": "message"}, "legacy": {"replyToId": ""}},
        "entities": [_client_info()],
        "locale": "en-US",
    }


def card_action(
    reply_to_id: str,
    verb: str,
    data: dict[str, Any],
    *,
    conversation_id: str = PERSONAL_CONVERSATION_ID,
    conversation_type: ConversationType = "personal",
    team_id: str = TEAM_ID,
    channel_id: str | None = None,
    user_id: str = USER_ID,
    user_name: str = USER_NAME,
    user_aad_id: str = USER_AAD_ID,
    bot_id: str = BOT_ID,
    bot_name: str = BOT_NAME,
    service_url: str = DEFAULT_SERVICE_URL,
    tenant_id: str = TENANT_ID,
    activity_id: str | None = None,
) -> Activity:
    """The ``adaptiveCard/action`` invoke of an ``Action.Execute`` click on the card of the bot message
    `reply_to_id`: `data` is the action's data with the card's inputs merged in, as Teams sends it.
    In a channel (`channel_id`), `conversation_id` is the thread's ("<channel>;messageid=<root>")."""
    conversation: Activity = {"conversationType": conversation_type, "tenantId": tenant_id, "id": conversation_id}
    channel_data: Activity = {"tenant": {"id": tenant_id}, "source": {"name": "message"}, "legacy": {"replyToId": ""}}
    if conversation_type != "personal":
        conversation["isGroup"] = True
    if channel_id is not None:
        channel_data.update(
            teamsChannelId=channel_id, teamsTeamId=team_id, channel={"id": channel_id}, team={"id": team_id}
        )
    return {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "id": activity_id or next_activity_id(),
        "timestamp": now_iso(),
        "localTimestamp": now_iso(),
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": {"id": user_id, "name": user_name, "aadObjectId": user_aad_id},
        "recipient": {"id": bot_id, "name": bot_name},
        "conversation": conversation,
        "replyToId": reply_to_id,
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}, "trigger": "manual"},
        "channelData": channel_data,
        "entities": [_client_info()],
        "locale": "en-US",
    }


# --- parts ---------------------------------------------------------------------------------------


def _message(
    text: str,
    *,
    activity_id: str | None,
    service_url: str,
    sender: Activity,
    recipient: Activity,
    conversation: Activity,
    channel_data: Activity,
    mentioned: tuple[str, str] | None = None,
) -> Activity:
    entities: list[Activity] = [_client_info()]
    if mentioned is not None:
        mentioned_id, mentioned_name = mentioned
        entities.insert(
            0,
            {
                "type": "mention",
                "mentioned": {"id": mentioned_id, "name": mentioned_name},
                "text": mention_text(mentioned_name),
            },
        )
    timestamp = now_iso()
    return {
        "type": "message",
        "id": activity_id or next_activity_id(),
        "timestamp": timestamp,
        "localTimestamp": timestamp,
        "localTimezone": "Etc/UTC",
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": sender,
        "conversation": conversation,
        "recipient": recipient,
        "textFormat": "plain",
        "text": text,
        "attachments": [{"contentType": "text/html", "content": f"<p>{text}</p>"}],
        "entities": entities,
        "channelData": channel_data,
        "locale": "en-US",
    }


def _user(user_id: str, user_name: str) -> Activity:
    return {"id": user_id, "name": user_name, "aadObjectId": USER_AAD_ID}


def _client_info() -> Activity:
    return {"type": "clientInfo", "locale": "en-US", "country": "US", "platform": "Web", "timezone": "Etc/UTC"}


def message_deleted(message: Activity) -> Activity:
    """Teams' `messageDelete` (`softDeleteMessage`) for `message`, a message the user sent earlier:
    the same id and conversation, no text."""
    return {
        "type": "messageDelete",
        "id": message["id"],
        "timestamp": now_iso(),
        "serviceUrl": message["serviceUrl"],
        "channelId": "msteams",
        "from": message["from"],
        "conversation": message["conversation"],
        "recipient": message["recipient"],
        "channelData": {**message["channelData"], "eventType": "softDeleteMessage"},
    }


def message_edited(message: Activity, text: str) -> Activity:
    """Teams' `messageUpdate` (`editMessage`) for `message`, a message the user sent earlier, now reading
    `text`: the same id, conversation and mentions (a mention of the bot stays in front), every field of
    the revised message, and the time of the edit."""
    mentions = [e for e in message.get("entities", ()) if e.get("type") == "mention"]
    revised = " ".join([*(m["text"] for m in mentions), text])
    timestamp = now_iso()
    return {
        **message,
        "type": "messageUpdate",
        "timestamp": timestamp,
        "localTimestamp": timestamp,
        "text": revised,
        "attachments": [{"contentType": "text/html", "content": f"<p>{revised}</p>"}],
        "channelData": {**message["channelData"], "eventType": "editMessage"},
    }
