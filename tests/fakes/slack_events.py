"""What Slack sends to an app, built and signed for tests: Events API bodies, interactivity, slash commands.

Event builders (`app_mention`, `message`, ...) return the inner `event`; wrap it with `event_callback` for
the envelope Slack posts (or sends as a Socket Mode `events_api` payload). Bodies go over HTTP as JSON
(`json_body`), interactivity as `payload=<json>` form fields (`form_body`), slash commands as plain form
fields (`command_body`); `signed_headers` signs any of them the way Slack does.

    envelope = event_callback(app_mention("how do I reset my password?"))
    body = json_body(envelope)
    request = AsyncBoltRequest(body=body.decode(), headers=signed_headers(SECRET, body))

Every `ts` comes from one process-wide clock (`next_ts`), shared with the fake Web API, so message
timestamps are unique and a bot's reply sorts after the message it answers.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
import threading
import time
import uuid
from typing import Any, Literal
from urllib.parse import urlencode

ChannelType = Literal["channel", "group", "im", "mpim"]

TEAM_ID = "T0001"
TEAM_DOMAIN = "acme"
APP_ID = "A0001"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
VERIFICATION_TOKEN = "verification-token"
"""The deprecated per-app token Slack still puts in every payload."""

_TS_BASE = 1_700_000_000
_ts_counter = itertools.count(100)
_ts_lock = threading.Lock()
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


UNREACHABLE = "http://127.0.0.1:9"
"""Where a payload's `response_url` points unless a test gives the fake's (`FakeSlack.response_url()`):
a closed local port, so an app that posts there is refused at once, never reaching the real Slack."""


def next_ts() -> str:
    """A fresh message timestamp: "1700000000.000100", "1700000000.000101", ... (unique per process)."""
    with _ts_lock:
        n = next(_ts_counter)
    return f"{_TS_BASE + n // 1_000_000}.{n % 1_000_000:06d}"


def channel_type_of(channel: str) -> ChannelType:
    """The `channel_type` assumed for a channel id: D… is an IM, anything else a public channel."""
    return "im" if channel.startswith("D") else "channel"


# --- signing -----------------------------------------------------------------------------------


def signed_headers(
    secret: str, body: bytes, *, timestamp: int | None = None, content_type: str | None = None
) -> dict[str, str]:
    """Headers Slack sends with `body`: timestamp, `v0=` HMAC-SHA256 signature and content type.

    The content type is JSON for a body starting with `{` (Events API), form-urlencoded otherwise.
    """
    ts = int(time.time()) if timestamp is None else timestamp
    base = b"v0:" + str(ts).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    if content_type is None:
        content_type = "application/json" if body.lstrip().startswith(b"{") else "application/x-www-form-urlencoded"
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": f"v0={digest}", "Content-Type": content_type}


def json_body(payload: dict[str, Any]) -> bytes:
    """An Events API body as Slack posts it."""
    return json.dumps(payload, separators=(",", ":")).encode()


def form_body(payload: dict[str, Any]) -> bytes:
    """An interactivity body as Slack posts it: `payload=<json>`, form-urlencoded."""
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()


def command_body(command: dict[str, str]) -> bytes:
    """A slash command body as Slack posts it: its fields, form-urlencoded."""
    return urlencode(command).encode()


# --- Events API --------------------------------------------------------------------------------


def event_callback(
    event: dict[str, Any], *, event_id: str | None = None, team_id: str = TEAM_ID, api_app_id: str = APP_ID
) -> dict[str, Any]:
    """The `event_callback` envelope around `event` (the HTTP body, or a Socket Mode `events_api` payload)."""
    event_ts = event.get("event_ts") or event.get("ts")
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(float(event_ts)) if event_ts else int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{uuid.uuid4().hex}",
    }


def rich_text_blocks(text: str) -> list[dict[str, Any]]:
    """The `rich_text` block Slack attaches to a user's message, with `<@U…>` mentions as user elements."""
    elements: list[dict[str, Any]] = []
    position = 0
    for match in _MENTION.finditer(text):
        if match.start() > position:
            elements.append({"type": "text", "text": text[position : match.start()]})
        elements.append({"type": "user", "user_id": match.group(1)})
        position = match.end()
    if position < len(text):
        elements.append({"type": "text", "text": text[position:]})
    section = {"type": "rich_text_section", "elements": elements}
    return [{"type": "rich_text", "block_id": uuid.uuid4().hex[:5], "elements": [section]}]


def _user_message(text: str, user: str, ts: str, thread_ts: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "user": user,
        "type": "message",
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "text": text,
        "team": TEAM_ID,
        "blocks": rich_text_blocks(text),
    }
    if thread_ts is not None:
        message["thread_ts"] = thread_ts
    return message


def app_mention(
    text: str, *, user: str = "U1", channel: str = "C1", ts: str | None = None, thread_ts: str | None = None
) -> dict[str, Any]:
    """An `app_mention` event. Slack's text always holds the mention: `<@UBOT> ` is prepended if absent."""
    if f"<@{BOT_USER_ID}>" not in text:
        text = f"<@{BOT_USER_ID}> {text}"
    ts = ts or next_ts()
    event = _user_message(text, user, ts, thread_ts)
    event.update(type="app_mention", channel=channel, event_ts=ts)
    return event


def message(
    text: str,
    *,
    user: str = "U1",
    channel: str = "C1",
    channel_type: ChannelType | None = None,
    ts: str | None = None,
    thread_ts: str | None = None,
    bot_id: str | None = None,
    subtype: str | None = None,
) -> dict[str, Any]:
    """A `message` event; `channel_type` defaults from the channel id (D… → "im").

    With `bot_id`, the message looks like one a bot posted (`bot_id`, `app_id`); with
    `subtype="bot_message"` it also loses its `user`, as legacy bot messages do.
    """
    ts = ts or next_ts()
    event = _user_message(text, user, ts, thread_ts)
    if bot_id is not None:
        event.pop("client_msg_id")
        event.update(bot_id=bot_id, app_id=APP_ID)
    if subtype is not None:
        event["subtype"] = subtype
        if subtype == "bot_message":
            event.pop("user")
    event.update(channel=channel, event_ts=ts, channel_type=channel_type or channel_type_of(channel))
    return event


def message_changed(
    channel: str,
    ts: str,
    new_text: str,
    *,
    user: str = "U1",
    thread_ts: str | None = None,
    previous_text: str = "",
) -> dict[str, Any]:
    """A `message_changed` event: the message at `ts` now reads `new_text`."""
    event_ts = next_ts()
    edited = _user_message(new_text, user, ts, thread_ts)
    edited["edited"] = {"user": user, "ts": event_ts}
    previous = _user_message(previous_text, user, ts, thread_ts)
    return {
        "type": "message",
        "subtype": "message_changed",
        "message": edited,
        "previous_message": previous,
        "channel": channel,
        "hidden": True,
        "ts": event_ts,
        "event_ts": event_ts,
        "channel_type": channel_type_of(channel),
    }


def message_deleted(
    channel: str, ts: str, *, user: str = "U1", thread_ts: str | None = None, previous_text: str = ""
) -> dict[str, Any]:
    """A `message_deleted` event for the message at `ts`."""
    event_ts = next_ts()
    return {
        "type": "message",
        "subtype": "message_deleted",
        "previous_message": _user_message(previous_text, user, ts, thread_ts),
        "channel": channel,
        "hidden": True,
        "deleted_ts": ts,
        "ts": event_ts,
        "event_ts": event_ts,
        "channel_type": channel_type_of(channel),
    }


def app_home_opened(user: str = "U1", *, channel: str | None = None, tab: str = "home") -> dict[str, Any]:
    """An `app_home_opened` event (the user's DM with the app is `D<user>` unless given)."""
    return {
        "type": "app_home_opened",
        "user": user,
        "channel": channel or f"D{user}",
        "tab": tab,
        "event_ts": next_ts(),
    }


def assistant_thread_started(
    channel: str = "D1", thread_ts: str | None = None, user: str = "U1", *, context_channel: str | None = None
) -> dict[str, Any]:
    """An `assistant_thread_started` event; `context_channel` is the channel the user opened it from."""
    context: dict[str, Any] = {}
    if context_channel is not None:
        context = {"channel_id": context_channel, "team_id": TEAM_ID, "enterprise_id": None}
    return {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": user,
            "context": context,
            "channel_id": channel,
            "thread_ts": thread_ts or next_ts(),
        },
        "event_ts": next_ts(),
    }


# --- interactivity and slash commands ----------------------------------------------------------


def _trigger_id() -> str:
    """Shaped like Slack's; the first part is when it was issued (epoch milliseconds), so the fake
    can refuse a `views.open` more than 3 s later, as Slack does."""
    return f"{int(time.time() * 1000)}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}"


def _user(user: str) -> dict[str, str]:
    return {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID}


def block_action(
    action_id: str,
    value: str,
    *,
    user: str = "U1",
    channel: str = "C1",
    message_ts: str | None = None,
    trigger_id: str | None = None,
    block_id: str = "actions",
    response_url: str | None = None,
    thread_ts: str | None = None,
    ephemeral: bool = False,
) -> dict[str, Any]:
    """A `block_actions` payload: `user` clicked the button `action_id` (with `value`) on a bot message
    (in the thread `thread_ts`).

    With `ephemeral`, the message was one only `user` sees (a slash command's answer, a note after a
    vote): the container says so, and Slack sends no `message` with it."""
    message_ts = message_ts or next_ts()
    message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "ts": message_ts, "text": ""}
    if thread_ts is not None:
        message["thread_ts"] = thread_ts
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": ephemeral},
        "trigger_id": trigger_id or _trigger_id(),
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url or f"{UNREACHABLE}/actions/{TEAM_ID}/1/{uuid.uuid4().hex}",
        "actions": [
            {
                "action_id": action_id,
                "block_id": block_id,
                "text": {"type": "plain_text", "text": action_id, "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": next_ts(),
            }
        ],
    }
    if ephemeral:
        del payload["message"]
    return payload


def view_submission(
    callback_id: str,
    private_metadata: str,
    values: dict[str, dict[str, Any]],
    *,
    user: str = "U1",
    view_id: str = "V0001",
) -> dict[str, Any]:
    """A `view_submission` payload. `values` is `state.values`: {block_id: {action_id: state}}, where a
    plain string state stands for a plain-text input holding it."""
    state = {
        block_id: {
            action_id: {"type": "plain_text_input", "value": v} if isinstance(v, str) else v
            for action_id, v in actions.items()
        }
        for block_id, actions in values.items()
    }
    return {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": _trigger_id(),
        "view": {
            "id": view_id,
            "team_id": TEAM_ID,
            "type": "modal",
            "blocks": [],
            "private_metadata": private_metadata,
            "callback_id": callback_id,
            "state": {"values": state},
            "hash": uuid.uuid4().hex[:16],
            "title": {"type": "plain_text", "text": "Candor"},
            "clear_on_close": False,
            "notify_on_close": False,
            "close": None,
            "submit": {"type": "plain_text", "text": "Submit"},
            "previous_view_id": None,
            "root_view_id": view_id,
            "app_id": APP_ID,
            "external_id": "",
            "app_installed_team_id": TEAM_ID,
            "bot_id": BOT_ID,
        },
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def slash_command(
    text: str,
    *,
    command: str = "/candor",
    user: str = "U1",
    channel: str = "C1",
    response_url: str | None = None,
    trigger_id: str | None = None,
) -> dict[str, str]:
    """A slash command's fields, all strings (`command_body` for HTTP; as-is for a Socket Mode payload)."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel,
        "channel_name": "directmessage" if channel.startswith("D") else channel.lower(),
        "user_id": user,
        "user_name": user.lower(),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url or f"{UNREACHABLE}/commands/{TEAM_ID}/1/{uuid.uuid4().hex}",
        "trigger_id": trigger_id or _trigger_id(),
    }
