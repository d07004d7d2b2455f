"""A fake Bot Framework Connector (what a bot calls to talk to Teams) on 127.0.0.1, a random free port.

Put `fake.service_url` in an incoming activity's `serviceUrl` and the bot's real `ConnectorClient`
sends its replies here:

    async with FakeConnector() as fake:
        await post_to_bot(personal_message("hi", service_url=fake.service_url))
        [call] = await fake.wait_for(lambda call: call.body["text"] == "echo: hi")

REST API v3 (conversation and activity ids arrive URL-encoded, e.g. `a%3Apersonal-1`, and are recorded
decoded):

    POST   /v3/conversations                                   create  -> 201 {"id", "activityId", "serviceUrl"}
           (with `channelData.channel.id` and an `activity`: a new thread in that Teams channel, its
           id "<channel id>;messageid=<activityId>", the activity its first post: `channel_posts()`)
    POST   /v3/conversations/{conversationId}/activities       send    -> 201 {"id": <new activity id>}
    POST   /v3/conversations/{conversationId}/activities/{id}  reply   -> 201 {"id": <new activity id>}
    PUT    /v3/conversations/{conversationId}/activities/{id}  update  -> 200 {"id": id}
    DELETE /v3/conversations/{conversationId}/activities/{id}  delete  -> 200
    GET    /v3/conversations/{conversationId}/members          members -> 200 [member, ...]
    GET    /v3/conversations/{conversationId}/members/{id}     member  -> 200 member (404 if unknown)
    GET    /v3/conversations/{conversationId}/pagedmembers     paged_members -> 200 {"members": [...]}

Anything else under /v3 answers 404 with the Bot Framework's `{"error": {"code", "message"}}`.

A client-credentials token endpoint lives on the same server: `POST <anything>/oauth2/v2.0/token`
answers `{"token_type": "Bearer", "access_token": FAKE_ACCESS_TOKEN, ...}` (with `unique_tokens=True`,
a new token each time: FAKE_ACCESS_TOKEN + "-1", "-2", ...; the `Call` records it as `token`), and
`GET <tenant>/v2.0/.well-known/openid-configuration` points at `<tenant>/oauth2/v2.0/token` on the
scheme and host the request came in on. MSAL, which botframework-connector uses for tokens, refuses
an `http://` authority: with `tls=<ssl.SSLContext>` the fake also serves everything over HTTPS on a
second port (`tls_port`), e.g. behind `tests.fakes.tunnel.TunnelProxy` as login.microsoftonline.com.

Failures are scripted for the /v3 endpoints and consumed in order, one per request:

    fake.fail(status=500, times=2)           # two 500s
    fake.throttle(retry_after=1)             # one 429 with Retry-After: 1
    fake.delay(2.0)                          # every request answered 2 s late (times=n: the next n)

Every request is recorded in `fake.calls` as a `Call`, with the status it got. `activities()`,
`typing()` and `wait_for` only look at activities that were delivered (send or reply answered 2xx);
`wait_for(operation="update")` (or "delete") at the updates (deletions) answered 2xx instead.
`FakeConnector` runs on the caller's event loop; `ThreadedFakeConnector` on its own loop in a daemon
thread, for tests whose bot is another process.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import unquote

from aiohttp import web

from tests.fakes.background import BackgroundLoop, until
from tests.fakes.teams_activities import TENANT_ID, USER_AAD_ID, USER_ID, USER_NAME, next_activity_id

T = TypeVar("T")
Json = dict[str, Any]
Operation = Literal[
    "send",
    "reply",
    "update",
    "delete",
    "create",
    "members",
    "member",
    "paged_members",
    "token",
    "openid",
    "identity",
    "unknown",
]

FAKE_ACCESS_TOKEN = "fake-bot-framework-access-token"
IDENTITY_HEADER = "fake-app-service-identity-secret"
_POLL = 0.01
_DELIVERED = frozenset({"send", "reply"})
_DEFAULT_MEMBERS: list[Json] = [
    {
        "id": USER_ID,
        "name": USER_NAME,
        "aadObjectId": USER_AAD_ID,
        "givenName": USER_NAME,
        "surname": "Lovelace",
        "email": "ada@example.com",
        "userPrincipalName": "ada@example.com",
        "tenantId": TENANT_ID,
        "userRole": "user",
    }
]


@dataclass(frozen=True, slots=True)
class Call:
    """One request as the fake saw it, and how it answered."""

    method: str
    path: str
    """The path as sent, still URL-encoded."""
    conversation_id: str | None
    """Decoded: "a:personal-1", "19:channel-1@thread.tacv2;messageid=1700000000001"."""
    activity_id: str | None
    """Decoded; for a reply, the activity replied to (not the new id: `new_id`); for "member", the member id."""
    body: Json
    """The JSON body (an activity for send/reply/update), the form fields of a token request, or {}."""
    authorization: str | None
    status: int
    at: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when it arrived."""
    operation: Operation = "unknown"
    new_id: str | None = None
    """The id the fake gave a sent/replied activity or a created conversation."""
    token: str | None = None
    """The access token the fake issued (a "token" call answered 200)."""
    host: str = ""
    """The Host header: "127.0.0.1:<port>", or the name a TLS client asked for ("login.microsoftonline.com")."""

    @property
    def delivered(self) -> bool:
        return self.operation in _DELIVERED and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int = 200
    retry_after: int | None = None
    delay: float = 0.0


class _FakeConnectorCore:
    """State, scripting and the aiohttp handler; the subclasses decide which loop serves them."""

    def __init__(self, *, tls: ssl.SSLContext | None = None, unique_tokens: bool = False) -> None:
        """`tls`: also serve over HTTPS (on `tls_port`); `unique_tokens`: a new access token per token request."""
        self.tls = tls
        self.unique_tokens = unique_tokens
        self.members: dict[str, list[Json]] = {}
        """Members per conversation id; conversations not listed have one user, Ada (`USER_ID`)."""
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._faults: deque[_Fault] = deque()
        self._delay = 0.0
        self._tokens_issued = 0
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._tls_port: int | None = None

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake Bot Connector is not running")
        return f"http://127.0.0.1:{self._port}"

    @property
    def tls_port(self) -> int:
        """The port of the HTTPS site (only with `tls`)."""
        if self._tls_port is None:
            raise RuntimeError("the fake Bot Connector is not serving TLS")
        return self._tls_port

    @property
    def service_url(self) -> str:
        """What goes into an incoming activity's `serviceUrl` (with the trailing slash Teams sends)."""
        return f"{self.base_url}/"

    @property
    def identity_endpoint(self) -> str:
        """An Azure App Service managed-identity endpoint (`IDENTITY_ENDPOINT`; `IDENTITY_HEADER` is
        `IDENTITY_HEADER` below): tokens for the identity whose client id is asked for."""
        return f"{self.base_url}/msi/token"

    @property
    def token_url(self) -> str:
        """A client-credentials token endpoint on the fake (any `.../oauth2/v2.0/token` path works)."""
        return f"{self.base_url}/botframework.com/oauth2/v2.0/token"

    # --- recording -----------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_to(self, operation: Operation) -> list[Call]:
        with self._lock:
            return [call for call in self._calls if call.operation == operation]

    def activities(self) -> list[Json]:
        """The bodies of the activities delivered (sent or replied, answered 2xx), in arrival order."""
        return [call.body for call in self.calls if call.delivered]

    def channel_posts(self, channel_id: str | None = None) -> list[Call]:
        """The threads started in a Teams channel (answered 2xx), in arrival order; the post is
        `call.body["activity"]`, its id `call.new_id.split(";messageid=")[1]`."""
        return [
            call
            for call in self.calls_to("create")
            if 200 <= call.status < 300
            and ";messageid=" in (call.new_id or "")
            and (channel_id is None or (call.new_id or "").split(";", 1)[0] == channel_id)
        ]

    def typing(self) -> list[Json]:
        """The delivered activities of type "typing"."""
        return [body for body in self.activities() if body.get("type") == "typing"]

    def reset(self) -> None:
        """Forget calls and scripted failures (`members` stays)."""
        with self._lock:
            self._calls.clear()
            self._faults.clear()
            self._delay = 0.0

    def _matching(
        self, predicate: Callable[[Call], bool] | None, count: int, kind: str | None, operation: Operation | None = None
    ) -> list[Call] | None:
        found = [
            call
            for call in self.calls
            if (call.delivered if operation is None else call.operation == operation and 200 <= call.status < 300)
            and (kind is None or call.body.get("type") == kind)
            and (predicate is None or predicate(call))
        ]
        return found if len(found) >= count else None

    def _timed_out(self, count: int, kind: str | None, timeout: float) -> AssertionError:
        seen = "\n".join(
            f"  {call.method} {call.operation} {call.status} conversation={call.conversation_id!r} "
            f"type={call.body.get('type')!r} text={call.body.get('text')!r}"
            for call in self.calls
        )
        what = f"{kind!r} activities" if kind else "activities"
        return AssertionError(
            f"expected {count} matching {what} within {timeout}s; requests seen:\n{seen or '  (none)'}"
        )

    # --- scripting -----------------------------------------------------------------------

    def fail(self, status: int = 500, *, times: int = 1) -> None:
        """Answer the next `times` /v3 requests with `status` and a Bot Framework error body."""
        self._script(times, _Fault(status=status))

    def throttle(self, retry_after: int = 1, *, times: int = 1) -> None:
        """Answer the next `times` /v3 requests with 429 and `Retry-After: retry_after` (whole seconds)."""
        self._script(times, _Fault(status=429, retry_after=int(retry_after)))

    def delay(self, seconds: float, *, times: int | None = None) -> None:
        """Answer /v3 requests `seconds` late: every one from now on, or (with `times`) the next `times`."""
        if times is None:
            with self._lock:
                self._delay = seconds
        else:
            self._script(times, _Fault(delay=seconds))

    def _script(self, times: int, fault: _Fault) -> None:
        with self._lock:
            self._faults.extend([fault] * times)

    # --- lifecycle (on the loop that serves) ---------------------------------------------

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        self._port = await _serve(self._runner)
        if self.tls is not None:
            self._tls_port = await _serve(self._runner, self.tls)
        return self.service_url

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self._port, self._tls_port = None, None, None

    # --- the server ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        path = request.rel_url.raw_path
        segments = [unquote(segment) for segment in path.strip("/").split("/")]
        authorization = request.headers.get("Authorization")
        if path.endswith("/oauth2/v2.0/token"):
            return await self._token(request, path, authorization, arrived)
        if request.path == "/msi/token":
            return self._identity_token(request, arrived)
        if path.endswith("/v2.0/.well-known/openid-configuration"):
            self._record(
                Call(request.method, path, None, None, {}, authorization, 200, arrived, "openid", host=request.host)
            )
            return web.json_response(self._openid_configuration(path, f"{request.scheme}://{request.host}"))
        body = await _json_body(request)
        operation, conversation_id, activity_id = _route(request.method, segments)
        is_v3 = segments[0] == "v3"
        with self._lock:
            fault = self._faults.popleft() if self._faults and is_v3 else _Fault()
            delay = fault.delay or (self._delay if is_v3 else 0.0)
        if fault.status != 200:
            headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
            code = "Throttled" if fault.status == 429 else "ServiceError"
            answer: Json | list[Json] | web.Response = _error(fault.status, code, f"simulated {fault.status}", headers)
            status, new_id = fault.status, None
        else:
            status, answer, new_id = self._answer(operation, conversation_id, activity_id, body)
        self._record(
            Call(
                request.method,
                path,
                conversation_id,
                activity_id,
                body,
                authorization,
                status,
                arrived,
                operation,
                new_id,
                host=request.host,
            )
        )
        if delay:
            await asyncio.sleep(delay)
        return answer if isinstance(answer, web.Response) else web.json_response(answer, status=status)

    def _answer(
        self, operation: Operation, conversation_id: str | None, activity_id: str | None, body: Json
    ) -> tuple[int, Json | list[Json] | web.Response, str | None]:
        """The status, the answer and the new id (if any) of one well-formed, unscripted request."""
        if operation in ("send", "reply"):
            if not body.get("type"):
                return 400, _error(400, "BadArgument", "the activity has no type"), None
            new_id = next_activity_id()
            return 201, {"id": new_id}, new_id
        if operation == "update":
            return 200, {"id": activity_id}, None
        if operation == "delete":
            return 200, web.Response(status=200), None
        if operation == "create":
            activity_id = next_activity_id() if body.get("activity") else None
            channel = ((body.get("channelData") or {}).get("channel") or {}).get("id")
            if channel and activity_id:  # a new thread in a Teams channel, its first post the activity
                conversation_id = f"{channel};messageid={activity_id}"
            else:
                conversation_id = f"a:fake-conversation-{next_activity_id()}"
            answer = {"id": conversation_id, "activityId": activity_id, "serviceUrl": self.service_url}
            return 201, answer, conversation_id
        members = self.members.get(conversation_id or "", _DEFAULT_MEMBERS)
        if operation == "members":
            return 200, members, None
        if operation == "paged_members":
            return 200, {"continuationToken": None, "members": members}, None
        if operation == "member":
            for member in members:
                if activity_id in (member.get("id"), member.get("aadObjectId")):
                    return 200, member, None
            return 404, _error(404, "MemberNotFoundInConversation", f"no member {activity_id}"), None
        return 404, _error(404, "BadArgument", "unknown Bot Connector operation"), None

    async def _token(self, request: web.Request, path: str, authorization: str | None, arrived: float) -> web.Response:
        form = {key: str(value) for key, value in (await request.post()).items()}
        host = request.host
        if form.get("grant_type") != "client_credentials" or not form.get("client_id"):
            self._record(Call(request.method, path, None, None, form, authorization, 400, arrived, "token", host=host))
            description = "only client_credentials with a client_id is supported by the fake"
            return web.json_response({"error": "unsupported_grant_type", "error_description": description}, status=400)
        with self._lock:
            self._tokens_issued += 1
            token = f"{FAKE_ACCESS_TOKEN}-{self._tokens_issued}" if self.unique_tokens else FAKE_ACCESS_TOKEN
        self._record(
            Call(request.method, path, None, None, form, authorization, 200, arrived, "token", token=token, host=host)
        )
        return web.json_response(
            {"token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600, "access_token": token}
        )

    def _identity_token(self, request: web.Request, arrived: float) -> web.Response:
        """App Service's managed-identity protocol (api-version 2019-08-01): GET with the resource and the
        identity's client id, the secret header; `expires_on` in epoch seconds."""
        query = dict(request.query)
        secret_ok = request.headers.get("X-IDENTITY-HEADER") == IDENTITY_HEADER
        if not secret_ok or not query.get("resource") or query.get("api-version") != "2019-08-01":
            self._record(Call(request.method, request.path, None, None, query, None, 400, arrived, "identity"))
            return web.json_response({"statusCode": 400, "message": "bad managed identity request"}, status=400)
        with self._lock:
            self._tokens_issued += 1
            token = f"{FAKE_ACCESS_TOKEN}-msi-{self._tokens_issued}"
        self._record(Call(request.method, request.path, None, None, query, None, 200, arrived, "identity", token=token))
        return web.json_response(
            {
                "access_token": token,
                "expires_on": str(int(time.time()) + 3600),
                "resource": query["resource"],
                "token_type": "Bearer",
                "client_id": query.get("client_id", ""),
            }
        )

    def _openid_configuration(self, path: str, origin: str) -> Json:
        """Entra ID's tenant metadata, on `origin` (the scheme and host the request came in on)."""
        tenant = path.removesuffix("/v2.0/.well-known/openid-configuration").strip("/") or "botframework.com"
        return {
            "issuer": f"{origin}/{tenant}/v2.0",
            "token_endpoint": f"{origin}/{tenant}/oauth2/v2.0/token",
            "authorization_endpoint": f"{origin}/{tenant}/oauth2/v2.0/authorize",
            "jwks_uri": f"{origin}/{tenant}/discovery/v2.0/keys",
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
        }

    def _record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)


class FakeConnector(_FakeConnectorCore):
    """The fake Bot Connector on the caller's event loop; `await start()` returns `service_url`."""

    async def start(self) -> str:
        return await self._start()

    async def stop(self) -> None:
        await self._stop()

    async def __aenter__(self) -> FakeConnector:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_for(
        self,
        predicate: Callable[[Call], bool] | None = None,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 (a polling deadline, the twin of wait_for_sync's)
        kind: str | None = "message",
        operation: Operation | None = None,
    ) -> list[Call]:
        """The delivered activity calls of type `kind` (None: any) matching `predicate`, once there are `count`;
        with `operation` ("update", "delete", ...), the calls of that operation answered 2xx instead."""
        found = await _until(lambda: self._matching(predicate, count, kind, operation), timeout)
        if found is None:
            raise self._timed_out(count, kind, timeout)
        return found

    async def wait_for_channel_posts(
        self,
        channel_id: str,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 (a polling deadline, as wait_for's)
    ) -> list[Call]:
        """The threads started in `channel_id` (`channel_posts`), once there are `count`."""

        def posted() -> list[Call] | None:
            found = self.channel_posts(channel_id)
            return found if len(found) >= count else None

        found = await _until(posted, timeout)
        if found is None:
            raise self._timed_out(count, "channel post", timeout)
        return found


class ThreadedFakeConnector(_FakeConnectorCore):
    """The fake Bot Connector on its own event loop in a daemon thread (for subprocess bots, and for
    clients that block their own loop, as MSAL's token requests do); blocking API.

    with ThreadedFakeConnector() as fake:
        ... post personal_message("hi", service_url=fake.service_url) to the bot process ...
        fake.wait_for_sync(lambda call: "hi" in call.body["text"])
    """

    def __init__(self, *, tls: ssl.SSLContext | None = None, unique_tokens: bool = False) -> None:
        super().__init__(tls=tls, unique_tokens=unique_tokens)
        self._background = BackgroundLoop("fake-bot-connector")

    def start(self) -> str:
        return self._background.start(self._start())

    def stop(self) -> None:
        self._background.stop(self._stop())

    def __enter__(self) -> ThreadedFakeConnector:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return self._background.run(coroutine, timeout)

    def wait_for_sync(
        self,
        predicate: Callable[[Call], bool] | None = None,
        count: int = 1,
        timeout: float = 10.0,
        kind: str | None = "message",
        operation: Operation | None = None,
    ) -> list[Call]:
        """Block until `count` delivered activity calls of type `kind` match `predicate` (with `operation`:
        calls of that operation answered 2xx); those calls."""
        found = until(lambda: self._matching(predicate, count, kind, operation), timeout)
        if found is None:
            raise self._timed_out(count, kind, timeout)
        return found


# --- helpers -----------------------------------------------------------------------------------


def _route(method: str, segments: list[str]) -> tuple[Operation, str | None, str | None]:
    """The operation, conversation id and activity (or member) id of a decoded /v3 path."""
    if segments[:2] != ["v3", "conversations"]:
        return "unknown", None, None
    rest = segments[2:]
    if not rest or rest == [""]:
        return ("create" if method == "POST" else "unknown"), None, None
    conversation_id, tail = rest[0], rest[1:]
    match method, tail:
        case "POST", ["activities"]:
            return "send", conversation_id, None
        case "POST", ["activities", activity_id]:
            return "reply", conversation_id, activity_id
        case "PUT", ["activities", activity_id]:
            return "update", conversation_id, activity_id
        case "DELETE", ["activities", activity_id]:
            return "delete", conversation_id, activity_id
        case "GET", ["members"]:
            return "members", conversation_id, None
        case "GET", ["members", member_id]:
            return "member", conversation_id, member_id
        case "GET", ["pagedmembers"]:
            return "paged_members", conversation_id, None
    return "unknown", conversation_id, None


async def _serve(runner: web.AppRunner, tls: ssl.SSLContext | None = None) -> int:
    """Serve `runner` on a free port of 127.0.0.1 (over TLS with `tls`); the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    await web.SockSite(runner, sock, ssl_context=tls).start()
    return port


async def _json_body(request: web.Request) -> Json:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"_unparsed": await request.text()}
    return body if isinstance(body, dict) else {"_json": body}


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status, headers=headers or {})


async def _until(check: Callable[[], T | None], within: float) -> T | None:
    """`check()` once it is not None, polling; None after `within` seconds."""
    deadline = time.monotonic() + within
    while (found := check()) is None:
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(_POLL)
    return found
