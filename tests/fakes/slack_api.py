"""A fake Slack for the real `slack_sdk`/`slack_bolt` clients: Web API and Socket Mode on 127.0.0.1.

    async with FakeSlack() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.api_url)   # http://127.0.0.1:PORT/api/
        await client.chat_postMessage(channel="C1", text="hi")
        [call] = fake.calls_to("chat.postMessage")                          # call.params["text"] == "hi"

Web API: `/api/<method>`, GET or POST, parameters merged from the query string (slack_sdk sends
`params=` there even on POST), a form body or a JSON body; `blocks`, `view`, ... sent as JSON strings
inside form fields are decoded. The bearer token (or a `token` parameter) is recorded, not checked,
except that a call without one is `not_authed` and an app-level `xapp-` token is only accepted by
`apps.connections.open` (and only it), as on Slack. Unknown methods answer `unknown_method`.

Membership is enforced as on Slack: every conversation is one the bot is in unless declared
otherwise with `fake.channel(id, member=False, ...)`. Posting, updating, deleting or reacting where
the bot is not a member answers `not_in_channel` in a public channel and `channel_not_found` in a
private channel, DM or group DM (which do not exist for an outsider: `conversations.info` says
`channel_not_found` too; for a public channel it answers with `is_member: false`).

A `response_url` (`fake.response_url()`, for slash commands and block actions) takes posts as
Slack's does: JSON `text`/`blocks`, `response_type` ("ephemeral" by default, or "in_channel"),
`replace_original`/`delete_original`; at most 5 within 30 minutes of being issued. Past either limit
it answers 404 with `used_url` or `expired_url` as plain text (the way Slack's hooks answer errors;
the limits are documented, the exact reply less so, and the app reads only the status); a body
without text or blocks is 400 `no_text`. Posts are recorded as method "response_url" with the URL in
`Call.url`; `fake.response_url(age=...)` issues one that is already that old.

Threads: `conversations.replies` serves the messages the fake has seen in a thread (what the bot
posted there, as updated or deleted since) and those a test adds as people's (`fake.said(event)` files
a message event under its thread; `fake.thread_messages[(channel, thread_ts)]` holds them), oldest
first, in Slack's shape: `messages`, `has_more`, `response_metadata.next_cursor`, with `limit`
(default and maximum 1,000), `cursor`, `latest`, `oldest` and `inclusive`. As on Slack, it needs the
history scope of the conversation (`missing_scope` otherwise), the bot's membership (the rules
above), and a thread it knows (`thread_not_found`).

Failures are scripted per method and consumed in order, one per call:

    fake.rate_limit("chat.postMessage", retry_after=1)   # 429, Retry-After: 1, error "ratelimited"
    fake.error("chat.postMessage", "channel_not_found")  # 200, ok: false
    fake.fail("chat.update", status=500)                 # 500, ok: false, "fatal_error"
    fake.delay("views.open", 2.0)                        # every call answered 2 s late (times=n: next n)

Socket Mode: `apps.connections.open` returns `ws://127.0.0.1:PORT/socket-mode?ticket=...`; a client
connecting there gets Slack's `hello`; `send_envelope` pushes an envelope to every connected client and
the acks they send back land in `acks`. Pings are answered.

`FakeSlack` runs on the caller's event loop; `ThreadedFakeSlack` runs on its own loop in a daemon
thread, for tests whose client is another process (`candor serve`). Both record every call in `calls`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import itertools
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from aiohttp import WSCloseCode, WSMsgType, web

from tests.fakes.background import BackgroundLoop, until
from tests.fakes.slack_events import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID, next_ts

T = TypeVar("T")
Params = dict[str, Any]

_POLL = 0.01
_JSON_FIELDS = frozenset(
    {"blocks", "attachments", "view", "prompts", "metadata", "user_auth_blocks", "unfurls", "loading_messages"}
)
"""Parameters that may arrive as a JSON string inside a form field; recorded decoded."""
_SCOPES = (
    "app_mentions:read,channels:history,chat:write,commands,groups:history,im:history,mpim:history,reactions:write"
)


TRIGGER_SECONDS = 3.0
"""How long Slack accepts a `trigger_id` for `views.open`."""
RESPONSE_URL_USES = 5
"""How many posts Slack takes at one `response_url`."""
RESPONSE_URL_SECONDS = 30 * 60.0
"""How long after it was issued Slack takes posts at a `response_url`."""
_MEMBERS_ONLY = frozenset(
    {
        "chat.postMessage",
        "chat.postEphemeral",
        "chat.update",
        "chat.delete",
        "reactions.add",
        "reactions.remove",
        "conversations.replies",
    }
)
"""Methods Slack refuses in a conversation the bot is not a member of."""
_HIDDEN = ("is_private", "is_im", "is_mpim", "is_group")
"""What makes a conversation invisible to a bot that is not in it."""
REPLIES_LIMIT = 1000
"""`conversations.replies`' default and largest `limit`."""
_EVENT_ONLY = ("channel", "event_ts", "channel_type")
"""Keys of a message event that a message read back from the Web API does not have."""


@dataclass(frozen=True, slots=True)
class Call:
    """One Web API call as the fake saw it, and how it answered."""

    method: str
    params: Params
    """Query, form and JSON parameters merged (without `token`), JSON-string fields decoded."""
    token: str | None
    status: int
    at: float
    """`time.monotonic()` when it arrived."""
    error: str | None = None
    """The `error` of an `ok: false` answer."""
    url: str | None = None
    """For a "response_url" call: the URL posted to."""


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int = 200
    error: str | None = None
    retry_after: int | None = None
    delay: float = 0.0


@dataclass(slots=True)
class _ResponseUrl:
    issued: float
    """`time.monotonic()` when Slack would have sent it (with the command or action)."""
    uses: int = 0

    def refusal(self, now: float) -> str | None:
        if now - self.issued > RESPONSE_URL_SECONDS:
            return "expired_url"
        if self.uses >= RESPONSE_URL_USES:
            return "used_url"
        return None


class _FakeSlackCore:
    """State, scripting and the aiohttp handlers; the subclasses decide which loop runs them."""

    def __init__(self) -> None:
        self.channels: dict[str, Params] = {}
        """conversations.info overrides per channel id, e.g. {"is_private": True}; `channel()` sets them."""
        self.users: dict[str, Params] = {}
        """users.info per user id, e.g. {"real_name": "Ana Diaz"}; others are a user with no real name."""
        self.usergroups: dict[str, list[str]] = {}
        """usergroups.users.list per user group id (S…): its members; others are `no_such_subteam`."""
        self.scopes = _SCOPES
        """Sent as `x-oauth-scopes` (bolt reads the bot's scopes from auth.test's header)."""
        self.thread_messages: dict[tuple[str, str], list[Params]] = {}
        """People's messages by (channel, thread ts), the thread's first message among them when a
        person wrote it: what `conversations.replies` serves besides the bot's own posts."""
        self._posts: dict[str, dict[str, Params]] = {}
        """The bot's messages by channel and ts, as posted, updated and deleted through the fake."""
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._acks: dict[str, Params] = {}
        self._faults: dict[str, deque[_Fault]] = {}
        self._delays: dict[str, float] = {}
        self._tickets: set[str] = set()
        self._response_urls: dict[str, _ResponseUrl] = {}
        self._sockets: set[web.WebSocketResponse] = set()
        self._view_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._methods: dict[str, Callable[[Params], Params]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.update": self._update,
            "chat.delete": self._delete,
            "reactions.add": _ok,
            "reactions.remove": _ok,
            "views.open": self._open_view,
            "views.publish": self._view,
            "views.update": self._view,
            "conversations.info": self._conversation,
            "conversations.replies": self._replies,
            "users.info": self._user_info,
            "usergroups.users.list": self._usergroup_users,
            "assistant.threads.setStatus": _ok,
            "assistant.threads.setSuggestedPrompts": _ok,
            "assistant.threads.setTitle": _ok,
            "apps.connections.open": self._connections_open,
        }

    # --- where it listens ----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake Slack is not running")
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """What `AsyncWebClient(base_url=...)` and SLACK_API_URL take (with slack_sdk's trailing slash)."""
        return f"{self.base_url}/api/"

    def response_url(self, *, age: float = 0.0) -> str:
        """A fresh `response_url` on the fake, or (with `age`) one issued `age` seconds ago: past
        `RESPONSE_URL_SECONDS` it is expired. What is posted there is recorded as method "response_url"."""
        key = uuid.uuid4().hex
        with self._lock:
            self._response_urls[key] = _ResponseUrl(time.monotonic() - age)
        return f"{self.base_url}/response-url/{key}"

    # --- conversations -------------------------------------------------------------------

    def channel(self, channel: str, *, member: bool = True, **info: Any) -> None:
        """Declare a conversation: `member=False` for one the bot is not in; `info` is what
        conversations.info says of it beyond the defaults (`is_private`, `is_im`, `is_mpim`, ...).

            fake.channel("C0OUTSIDE", member=False)                            # public, bot not in it
            fake.channel("D0PEOPLE", member=False, is_im=True)                 # a DM between two people
            fake.channel("G0GROUP", member=False, is_mpim=True, is_private=True)
        """
        self.channels[channel] = {**info, "is_member": member}

    def said(self, event: Params) -> Params:
        """File a person's message event (`tests/fakes/slack_events.py`: `message`, `app_mention`) under
        its thread, for `conversations.replies` to serve; the event, for sending on."""
        thread = str(event.get("thread_ts") or event["ts"])
        with self._lock:
            self.thread_messages.setdefault((str(event["channel"]), thread), []).append(event)
        return event

    # --- recording -----------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [call for call in self._calls if call.method == method]

    @property
    def acks(self) -> dict[str, Params]:
        """Socket Mode acks by envelope id: {"envelope_id": ..., "payload"?: ...}."""
        with self._lock:
            return dict(self._acks)

    @property
    def socket_connections(self) -> int:
        return len(self._sockets)

    def reset(self) -> None:
        """Forget calls, acks and scripted failures (`channels`, response URLs and open sockets stay)."""
        with self._lock:
            self._calls.clear()
            self._acks.clear()
            self._faults.clear()
            self._delays.clear()

    def _matching(self, method: str, count: int, where: Callable[[Call], bool] | None) -> list[Call] | None:
        found = [call for call in self.calls_to(method) if where is None or where(call)]
        return found if len(found) >= count else None

    def _timed_out(self, method: str, count: int, timeout: float) -> AssertionError:
        seen = "\n".join(f"  {c.method} {c.status} {c.error or 'ok'} {c.params}" for c in self.calls) or "  (none)"
        return AssertionError(f"expected {count} call(s) to {method} within {timeout}s; calls seen:\n{seen}")

    # --- scripting -----------------------------------------------------------------------

    def rate_limit(self, method: str, retry_after: int = 1, *, times: int = 1) -> None:
        """The next `times` calls to `method` get 429, `Retry-After: retry_after` and error "ratelimited".

        `retry_after` is whole seconds: slack_sdk's retry handler does `int(header)`."""
        self._script(method, times, _Fault(status=429, error="ratelimited", retry_after=int(retry_after)))

    def error(self, method: str, error: str, *, times: int = 1) -> None:
        """The next `times` calls to `method` get HTTP 200 with `ok: false` and `error`."""
        self._script(method, times, _Fault(error=error))

    def fail(self, method: str, *, status: int = 500, times: int = 1) -> None:
        """The next `times` calls to `method` get HTTP `status` with `ok: false`, error "fatal_error"."""
        self._script(method, times, _Fault(status=status, error="fatal_error"))

    def delay(self, method: str, seconds: float, *, times: int | None = None) -> None:
        """Answer calls to `method` `seconds` late: every call, or (with `times`) the next `times` calls."""
        if times is None:
            with self._lock:
                self._delays[method] = seconds
        else:
            self._script(method, times, _Fault(delay=seconds))

    def _script(self, method: str, times: int, fault: _Fault) -> None:
        with self._lock:
            self._faults.setdefault(method, deque()).extend([fault] * times)

    # --- lifecycle (on the loop that serves) ---------------------------------------------

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket-mode", self._socket)
        app.router.add_post("/response-url/{key}", self._response_url)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self.api_url

    async def _stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self._port = None, None

    # --- Web API -------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        method = request.match_info["method"]
        params, bad_json = await _params(request)
        token = _bearer(request) or params.pop("token", None)
        with self._lock:
            queue = self._faults.get(method)
            fault = queue.popleft() if queue else _Fault()
            delay = fault.delay or self._delays.get(method, 0.0)
        headers = {"x-oauth-scopes": self.scopes}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        if fault.error is not None:
            body: Params = {"ok": False, "error": fault.error}
        elif bad_json:
            body = {"ok": False, "error": "invalid_json"}
        elif (problem := _token_problem(method, token)) is not None:
            body = {"ok": False, "error": problem}
        elif method in _MEMBERS_ONLY and (outside := self._outsider(str(params.get("channel") or ""))):
            body = {"ok": False, "error": outside}
        elif method in self._methods:
            body = self._methods[method](params)
        else:
            body = {"ok": False, "error": "unknown_method"}
        self._remember(method, body)
        error = None if body.get("ok") else str(body.get("error"))
        with self._lock:
            self._calls.append(Call(method, params, token, fault.status, arrived, error))
        if delay:
            await asyncio.sleep(delay)
        return web.json_response(body, status=fault.status, headers=headers)

    def _auth_test(self, params: Params) -> Params:
        return {
            "ok": True,
            "url": "https://acme.slack.com/",
            "team": "Acme",
            "user": "candor",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _post_message(self, params: Params) -> Params:
        if not params.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not any(params.get(key) for key in ("text", "blocks", "attachments", "markdown_text")):
            return {"ok": False, "error": "no_text"}
        ts = next_ts()
        return {"ok": True, "channel": params["channel"], "ts": ts, "message": _bot_message(params, ts)}

    def _post_ephemeral(self, params: Params) -> Params:
        if not params.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": next_ts()}

    def _update(self, params: Params) -> Params:
        if problem := _message_problem(params):
            return problem
        message = _bot_message(params, params["ts"])
        message["edited"] = {"user": BOT_USER_ID, "ts": next_ts()}
        text = params.get("text", "")
        return {"ok": True, "channel": params["channel"], "ts": params["ts"], "text": text, "message": message}

    def _delete(self, params: Params) -> Params:
        return _message_problem(params) or {"ok": True, "channel": params["channel"], "ts": params["ts"]}

    def _open_view(self, params: Params) -> Params:
        """`views.open`: a trigger id lives 3 s (one from tests/fakes/slack_events.py says when it was
        issued; any other is taken as fresh)."""
        issued = str(params.get("trigger_id") or "").split(".", 1)[0]
        if issued.isdigit() and len(issued) >= 13 and time.time() - int(issued) / 1000 > TRIGGER_SECONDS:
            return {"ok": False, "error": "expired_trigger_id"}
        return self._view(params)

    def _view(self, params: Params) -> Params:
        view = params.get("view")
        if not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        view_id = params.get("view_id") or f"V{next(self._view_ids):08d}"
        defaults = {"private_metadata": "", "callback_id": "", "external_id": "", "state": {"values": {}}}
        server_side = {"id": view_id, "team_id": TEAM_ID, "app_id": APP_ID, "bot_id": BOT_ID, "root_view_id": view_id}
        return {"ok": True, "view": {**defaults, **view, **server_side, "hash": uuid.uuid4().hex[:16]}}

    def _conversation(self, params: Params) -> Params:
        channel = str(params.get("channel") or "")
        if not channel or self._outsider(channel) == "channel_not_found":
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": self._info(channel)}

    def _info(self, channel: str) -> Params:
        """What conversations.info says of `channel`: D… is an IM, anything else a public channel the
        bot is in, unless `channels` says otherwise."""
        is_im = channel.startswith("D")
        info: Params = {
            "id": channel,
            "created": 1_700_000_000,
            "is_channel": not is_im,
            "is_group": False,
            "is_im": is_im,
            "is_mpim": False,
            "is_private": is_im,
            "is_archived": False,
            "is_general": False,
            "is_shared": False,
            "is_ext_shared": False,
            "is_org_shared": False,
            "is_member": True,
            **({"user": "U1"} if is_im else {"name": channel.lower(), "creator": "U1"}),
        }
        return {**info, **self.channels.get(channel, {})}

    def _usergroup_users(self, params: Params) -> Params:
        group = str(params.get("usergroup") or "")
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": list(self.usergroups[group])}

    def _outsider(self, channel: str) -> str | None:
        """Slack's error for the bot acting in `channel` when it is not a member (None: it is): a
        public channel says so; a private one, a DM or a group DM does not exist for an outsider."""
        info = self._info(channel)
        if info.get("is_member", True):
            return None
        return "channel_not_found" if any(info.get(key) for key in _HIDDEN) else "not_in_channel"

    def _remember(self, method: str, body: Params) -> None:
        """Keep the bot's messages as Slack would show them in `conversations.replies`."""
        if not body.get("ok") or method not in ("chat.postMessage", "chat.update", "chat.delete"):
            return
        channel, ts = str(body["channel"]), str(body["ts"])
        with self._lock:
            posts = self._posts.setdefault(channel, {})
            if method == "chat.postMessage":
                posts[ts] = dict(body["message"])
            elif method == "chat.update" and ts in posts:
                posts[ts] = {**posts[ts], **body["message"], "thread_ts": posts[ts].get("thread_ts")}
            elif method == "chat.delete":
                posts.pop(ts, None)

    def _replies(self, params: Params) -> Params:
        """`conversations.replies`: a thread's messages, oldest first, a page at a time."""
        channel, thread = str(params.get("channel") or ""), str(params.get("ts") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        needed = _history_scope(self._info(channel))
        if needed not in self.scopes.split(","):
            return {"ok": False, "error": "missing_scope", "needed": needed, "provided": self.scopes}
        try:
            limit = min(max(int(params.get("limit") or REPLIES_LIMIT), 1), REPLIES_LIMIT)
            latest, oldest = _ts_or_none(params.get("latest")), _ts_or_none(params.get("oldest"))
        except (ValueError, InvalidOperation):
            return {"ok": False, "error": "invalid_arguments"}
        messages = self._thread(channel, thread)
        if not messages:
            return {"ok": False, "error": "thread_not_found"}
        inclusive = str(params.get("inclusive", "")).lower() in ("1", "true")
        window = [m for m in messages if _within(Decimal(m["ts"]), latest, oldest, inclusive)]
        start = 0
        if params.get("cursor"):
            after = _cursor_ts(str(params["cursor"]))
            if after is None:
                return {"ok": False, "error": "invalid_cursor"}
            start = next((i for i, m in enumerate(window) if Decimal(m["ts"]) >= after), len(window))
        page, rest = window[start : start + limit], window[start + limit :]
        body: Params = {"ok": True, "messages": page, "has_more": bool(rest)}
        if rest:
            body["response_metadata"] = {"next_cursor": _cursor(rest[0]["ts"])}
        return body

    def _thread(self, channel: str, thread: str) -> list[Params]:
        """Every message of a thread the fake knows, oldest first, shaped as the Web API returns them."""
        with self._lock:
            people = [dict(m) for m in self.thread_messages.get((channel, thread), [])]
            bots = [
                dict(m)
                for ts, m in self._posts.get(channel, {}).items()
                if ts == thread or m.get("thread_ts") == thread
            ]
        by_ts = {str(m["ts"]): {k: v for k, v in m.items() if k not in _EVENT_ONLY} for m in people + bots}
        messages = sorted(by_ts.values(), key=lambda m: Decimal(m["ts"]))
        parent = by_ts.get(thread)
        replies = [m for m in messages if m["ts"] != thread]
        for m in replies:
            m["thread_ts"] = thread
            if parent is not None and parent.get("user"):
                m["parent_user_id"] = parent["user"]
        if parent is not None and replies:
            parent.update(thread_ts=thread, reply_count=len(replies), latest_reply=replies[-1]["ts"])
        return messages

    def _user_info(self, params: Params) -> Params:
        user = str(params.get("user") or "")
        if not user.startswith(("U", "W")):
            return {"ok": False, "error": "user_not_found"}
        known = self.users.get(user, {})
        profile = {"real_name": known.get("real_name", ""), "display_name": known.get("display_name", "")}
        info = {"id": user, "team_id": TEAM_ID, "name": user.lower(), "deleted": False, "is_bot": False}
        return {"ok": True, "user": {**info, "real_name": profile["real_name"], "profile": profile}}

    def _connections_open(self, params: Params) -> Params:
        ticket = str(uuid.uuid4())
        with self._lock:
            self._tickets.add(ticket)
        return {"ok": True, "url": f"ws://127.0.0.1:{self._port}/socket-mode?ticket={ticket}&app_id={APP_ID}"}

    async def _response_url(self, request: web.Request) -> web.Response:
        """A post to a `response_url`: refused past Slack's limits or without content, else taken (one
        use). A URL the fake did not issue counts as issued at its first post."""
        arrived = time.monotonic()
        params, bad_json = await _params(request)
        with self._lock:
            issued = self._response_urls.setdefault(request.match_info["key"], _ResponseUrl(arrived))
            error = issued.refusal(arrived) or _response_problem(params, bad_json)
            status = 200 if error is None else 404 if error in ("expired_url", "used_url") else 400
            if error is None:
                issued.uses += 1
            self._calls.append(Call("response_url", params, None, status, arrived, error, url=str(request.url)))
        if error is not None:
            return web.Response(status=status, text=error)
        return web.json_response({"ok": True})

    # --- Socket Mode ---------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            known = request.query.get("ticket") in self._tickets
        if not known:
            return web.Response(status=401, text="invalid ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await ws.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {"host": "fake-slack", "build_number": 1, "approximate_connection_time": 18060},
                    "connection_info": {"app_id": APP_ID},
                }
            )
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    ack = json.loads(message.data)
                except json.JSONDecodeError:
                    continue
                if isinstance(ack, dict) and "envelope_id" in ack:
                    with self._lock:
                        self._acks[str(ack["envelope_id"])] = ack
        finally:
            self._sockets.discard(ws)
        return ws

    async def _push(self, message: Params) -> None:
        sockets = list(self._sockets)
        if not sockets:
            raise RuntimeError("no Socket Mode client is connected to the fake Slack")
        await asyncio.gather(*(ws.send_json(message) for ws in sockets))

    @staticmethod
    def _envelope(type_: str, payload: Params, accepts_response_payload: bool) -> Params:
        envelope: Params = {
            "envelope_id": str(uuid.uuid4()),
            "payload": payload,
            "type": type_,
            "accepts_response_payload": accepts_response_payload,
        }
        if type_ == "events_api":
            envelope.update(retry_attempt=0, retry_reason="")
        return envelope


class FakeSlack(_FakeSlackCore):
    """The fake Slack on the caller's event loop; `await start()` returns `api_url`."""

    async def start(self) -> str:
        return await self._start()

    async def stop(self) -> None:
        await self._stop()

    async def __aenter__(self) -> FakeSlack:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_for(
        self,
        method: str,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 (a polling deadline, the twin of wait_for_sync's)
        where: Callable[[Call], bool] | None = None,
    ) -> list[Call]:
        """The calls to `method` (matching `where`) once there are at least `count`."""
        found = await _until(lambda: self._matching(method, count, where), timeout)
        if found is None:
            raise self._timed_out(method, count, timeout)
        return found

    async def send_envelope(self, type_: str, payload: Params, *, accepts_response_payload: bool = False) -> str:
        """Push an envelope ("events_api", "slash_commands", "interactive") to every socket; its id."""
        envelope = self._envelope(type_, payload, accepts_response_payload)
        await self._push(envelope)
        return str(envelope["envelope_id"])

    async def send_disconnect(self, reason: str = "refresh_requested") -> None:
        """Slack's `disconnect` message: the client should open a new connection."""
        await self._push({"type": "disconnect", "reason": reason, "debug_info": {"host": "fake-slack"}})

    async def wait_for_ack(self, envelope_id: str, timeout: float = 10.0) -> Params:  # noqa: ASYNC109
        found = await _until(lambda: self.acks.get(envelope_id), timeout)
        if found is None:
            raise AssertionError(f"no ack for envelope {envelope_id} within {timeout}s; acks: {list(self.acks)}")
        return found

    async def wait_for_socket(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        if await _until(lambda: self.socket_connections or None, timeout) is None:
            raise AssertionError(f"no Socket Mode client connected within {timeout}s")


class ThreadedFakeSlack(_FakeSlackCore):
    """The fake Slack on its own event loop in a daemon thread (for subprocess clients); blocking API.

    with ThreadedFakeSlack() as fake:
        subprocess.run(..., env={"SLACK_API_URL": fake.api_url})
        fake.wait_for_sync("chat.postMessage")
    """

    def __init__(self) -> None:
        super().__init__()
        self._background = BackgroundLoop("fake-slack")

    def start(self) -> str:
        return self._background.start(self._start())
        return self._run(self._start())

    def stop(self) -> None:
        self._background.stop(self._stop())

    def __enter__(self) -> ThreadedFakeSlack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return self._background.run(coroutine, timeout)

    def wait_for_sync(
        self, method: str, count: int = 1, timeout: float = 10.0, where: Callable[[Call], bool] | None = None
    ) -> list[Call]:
        """Block until at least `count` calls to `method` (matching `where`) arrived; those calls."""
        found = until(lambda: self._matching(method, count, where), timeout)
        if found is None:
            raise self._timed_out(method, count, timeout)
        return found

    def send_envelope_sync(self, type_: str, payload: Params, *, accepts_response_payload: bool = False) -> str:
        envelope = self._envelope(type_, payload, accepts_response_payload)
        self._run(self._push(envelope))
        return str(envelope["envelope_id"])

    def wait_for_ack_sync(self, envelope_id: str, timeout: float = 10.0) -> Params:
        found = until(lambda: self.acks.get(envelope_id), timeout)
        if found is None:
            raise AssertionError(f"no ack for envelope {envelope_id} within {timeout}s; acks: {list(self.acks)}")
        return found

    def wait_for_socket_sync(self, timeout: float = 10.0) -> None:
        if until(lambda: self.socket_connections or None, timeout) is None:
            raise AssertionError(f"no Socket Mode client connected within {timeout}s")


# --- helpers -----------------------------------------------------------------------------------


async def _until(check: Callable[[], T | None], within: float) -> T | None:
    """`check()` once it is not None, polling; None after `within` seconds."""
    deadline = time.monotonic() + within
    while (found := check()) is None:
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(_POLL)
    return found


async def _params(request: web.Request) -> tuple[Params, bool]:
    """Query, then body parameters (JSON or form), JSON-string fields decoded; and whether the JSON was bad."""
    params: Params = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except json.JSONDecodeError:
                return params, True
            if isinstance(body, dict):
                params.update(body)
        else:
            for key, value in (await request.post()).items():
                if isinstance(value, web.FileField):
                    params[key] = {"filename": value.filename, "size": len(value.file.read())}
                else:
                    params[key] = value
    for key in _JSON_FIELDS & params.keys():
        if isinstance(params[key], str):
            with contextlib.suppress(json.JSONDecodeError):
                params[key] = json.loads(params[key])
    return params, False


def _bearer(request: web.Request) -> str | None:
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


def _token_problem(method: str, token: str | None) -> str | None:
    if not token:
        return "not_authed"
    if (method == "apps.connections.open") != token.startswith("xapp-"):
        return "not_allowed_token_type"
    return None


def _response_problem(params: Params, bad_json: bool) -> str | None:
    """What Slack refuses in a `response_url` body: bad JSON, an unknown `response_type`, no content."""
    if bad_json or params.get("response_type") not in (None, "ephemeral", "in_channel"):
        return "invalid_payload"
    if not (params.get("text") or params.get("blocks") or params.get("delete_original")):
        return "no_text"
    return None


def _message_problem(params: Params) -> Params | None:
    if not params.get("channel"):
        return {"ok": False, "error": "channel_not_found"}
    if not params.get("ts"):
        return {"ok": False, "error": "message_not_found"}
    return None


def _bot_message(params: Params, ts: str) -> Params:
    message: Params = {
        "type": "message",
        "user": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "team": TEAM_ID,
        "text": params.get("text", ""),
        "ts": ts,
    }
    for key in ("blocks", "attachments", "thread_ts", "metadata"):
        if params.get(key):
            message[key] = params[key]
    return message


def _ok(params: Params) -> Params:
    return {"ok": True}


def _history_scope(info: Params) -> str:
    """The scope reading a conversation's messages takes."""
    if info.get("is_im"):
        return "im:history"
    if info.get("is_mpim"):
        return "mpim:history"
    if info.get("is_private") or info.get("is_group"):
        return "groups:history"
    return "channels:history"


def _ts_or_none(value: Any) -> Decimal | None:
    return Decimal(str(value)) if value not in (None, "") else None


def _within(ts: Decimal, latest: Decimal | None, oldest: Decimal | None, inclusive: bool) -> bool:
    if latest is not None and (ts > latest or (ts == latest and not inclusive)):
        return False
    return oldest is None or ts > oldest or (ts == oldest and inclusive)


def _cursor(ts: str) -> str:
    """A `next_cursor` the way Slack's look: base64 of "next_ts:<ts>"."""
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _cursor_ts(cursor: str) -> Decimal | None:
    try:
        kind, _, ts = base64.b64decode(cursor, validate=True).decode().partition(":")
        return Decimal(ts) if kind == "next_ts" else None
    except (binascii.Error, UnicodeDecodeError, InvalidOperation):
        return None
