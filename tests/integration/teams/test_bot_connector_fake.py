"""The fake Bot Connector, proven with the real botbuilder stack: no patching, real HTTP both ways.

A real `CloudAdapter` (anonymous local-development auth: empty APP_ID/APP_PASSWORD) serves an echo bot
on 127.0.0.1; Teams-shaped activities are posted to it with `serviceUrl` pointing at the fake, and the
bot's real `ConnectorClient` calls the fake back. The scripted failures are checked against the same
real `ConnectorClient` directly.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from botbuilder.core import ActivityHandler, InvokeResponse, TurnContext
from botbuilder.integration.aiohttp import CloudAdapter, ConfigurationBotFrameworkAuthentication
from botbuilder.schema import Activity, ActivityTypes, ChannelAccount, ConversationParameters, ConversationReference
from botframework.connector.aio import ConnectorClient
from botframework.connector.auth import MicrosoftAppCredentials
from botframework.connector.models import ErrorResponseException

from tests.fakes.bot_connector import FAKE_ACCESS_TOKEN, FakeConnector, ThreadedFakeConnector
from tests.fakes.teams_activities import (
    BOT_ID,
    CHANNEL_ID,
    feedback_invoke,
    group_chat_mention,
    members_added,
    personal_message,
)
from tests.fakes.teams_activities import channel_mention as channel_mention_activity


class AnonymousConfig:
    """What `ConfigurationBotFrameworkAuthentication` reads: no app id and no password disable auth."""

    APP_ID = ""
    APP_PASSWORD = ""


class EchoBot(ActivityHandler):  # type: ignore[misc]  # botbuilder ships no type hints
    """Sends typing, then "echo: <text>"; keeps conversation references and feedback invokes."""

    def __init__(self) -> None:
        self.references: list[ConversationReference] = []
        self.feedback: list[dict[str, Any]] = []

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        self.references.append(TurnContext.get_conversation_reference(turn_context.activity))
        await turn_context.send_activity(Activity(type=ActivityTypes.typing))
        await turn_context.send_activity("echo: " + (turn_context.activity.text or ""))

    async def on_invoke_activity(self, turn_context: TurnContext) -> InvokeResponse | None:
        # botbuilder 4.17.1 routes no "message/submitAction" (Teams' feedback loop): handle it here.
        if turn_context.activity.name == "message/submitAction":
            self.feedback.append({"reply_to_id": turn_context.activity.reply_to_id, **turn_context.activity.value})
            # The body must be None or an msrest Model: CloudAdapter.process serialises it with
            # serializer_helper, and a plain dict makes it answer 500.
            return InvokeResponse(status=HTTPStatus.OK)
        return await super().on_invoke_activity(turn_context)


@dataclass
class BotServer:
    url: str
    adapter: CloudAdapter
    bot: EchoBot
    session: aiohttp.ClientSession
    errors: list[BaseException] = field(default_factory=list)

    async def post(self, activity: dict[str, Any]) -> tuple[int, str]:
        async with self.session.post(self.url, json=activity) as response:
            return response.status, await response.text()


@pytest.fixture
async def fake() -> AsyncIterator[FakeConnector]:
    async with FakeConnector() as connector:
        yield connector


@pytest.fixture
async def server() -> AsyncIterator[BotServer]:
    adapter = CloudAdapter(ConfigurationBotFrameworkAuthentication(AnonymousConfig()))
    bot = EchoBot()
    errors: list[BaseException] = []

    async def on_error(context: TurnContext, error: Exception) -> None:
        errors.append(error)

    adapter.on_turn_error = on_error

    async def messages(request: web.Request) -> web.StreamResponse:
        response = await adapter.process(request, bot)
        return response if response is not None else web.Response(status=201)

    app = web.Application()
    app.router.add_post("/api/messages", messages)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield BotServer(f"http://127.0.0.1:{port}/api/messages", adapter, bot, session, errors)
    await runner.cleanup()


def connector_client(fake: FakeConnector) -> ConnectorClient:
    """The bot's own client class, as the anonymous adapter builds it: no credentials, no token."""
    return ConnectorClient(MicrosoftAppCredentials.empty(), base_url=fake.service_url)


# --- the real adapter against the fake ------------------------------------------------------------


async def test_a_reply_to_a_personal_message_lands_in_the_fake(fake: FakeConnector, server: BotServer) -> None:
    incoming = personal_message("how do I reset my password?", service_url=fake.service_url)

    status, _ = await server.post(incoming)

    assert status == 201
    [call] = await fake.wait_for(lambda call: call.body.get("text", "").startswith("echo:"))
    assert call.method == "POST"
    assert call.operation == "reply"
    assert call.path == f"/v3/conversations/a%3Apersonal-1/activities/{incoming['id']}"
    assert call.conversation_id == "a:personal-1"
    assert call.activity_id == incoming["id"]
    assert call.authorization is None  # anonymous mode: no token is fetched or sent
    assert call.status == 201
    assert call.new_id and call.new_id != incoming["id"]
    assert call.body["text"] == "echo: how do I reset my password?"
    assert call.body["replyToId"] == incoming["id"]
    assert call.body["from"]["id"] == BOT_ID
    assert call.body["recipient"]["id"] == "29:user-1"
    assert server.errors == []


async def test_channel_conversation_ids_are_decoded(fake: FakeConnector, server: BotServer) -> None:
    root = channel_mention_activity("where is the VPN guide?", service_url=fake.service_url)
    reply = channel_mention_activity("and for Linux?", reply_to_id=root["id"], service_url=fake.service_url)

    await server.post(root)
    await server.post(reply)

    first, second = await fake.wait_for(count=2)
    assert first.conversation_id == f"{CHANNEL_ID};messageid={root['id']}"
    assert "%3B" in first.path and "%40" in first.path and ";" not in first.path
    assert first.body["text"] == "echo: <at>Candor</at> where is the VPN guide?"
    assert second.conversation_id == first.conversation_id  # the thread reply stays in the root's thread
    assert second.activity_id == reply["id"]


async def test_a_typing_activity_lands_in_typing(fake: FakeConnector, server: BotServer) -> None:
    incoming = group_chat_mention("anyone?", service_url=fake.service_url)

    await server.post(incoming)

    [typing] = await fake.wait_for(kind="typing")
    assert fake.typing() == [typing.body]
    assert typing.conversation_id == "19:group-chat-1@thread.v2"
    assert [body["type"] for body in fake.activities()] == ["typing", "message"]


async def test_a_proactive_message_after_the_turn(fake: FakeConnector, server: BotServer) -> None:
    await server.post(personal_message("remind me later", service_url=fake.service_url))
    [reference] = server.bot.references
    assert reference.service_url == fake.service_url

    async def later(turn_context: TurnContext) -> None:
        await turn_context.send_activity("here is your reminder")

    await server.adapter.continue_conversation(reference, later, bot_app_id="")

    [call] = await fake.wait_for(lambda call: call.body.get("text") == "here is your reminder")
    assert call.conversation_id == "a:personal-1"
    # The continuation activity gets a fresh uuid id and the message is sent as a reply to it.
    assert call.operation == "reply"
    assert call.activity_id == call.body["replyToId"]
    assert call.authorization is None


async def test_continue_conversation_needs_no_app_id_when_anonymous(fake: FakeConnector, server: BotServer) -> None:
    await server.post(personal_message("hello", service_url=fake.service_url))
    [reference] = server.bot.references

    async def ping(turn_context: TurnContext) -> None:
        await turn_context.send_activity("ping")

    await server.adapter.continue_conversation(reference, ping)

    await fake.wait_for(lambda call: call.body.get("text") == "ping")


async def test_a_feedback_invoke_gets_the_handlers_invoke_response(fake: FakeConnector, server: BotServer) -> None:
    invoke = feedback_invoke("1700000000042", "dislike", "outdated", service_url=fake.service_url)

    status, text = await server.post(invoke)

    assert status == 200
    assert json.loads(text) is None  # CloudAdapter writes a None body as JSON null
    [feedback] = server.bot.feedback
    assert feedback["reply_to_id"] == "1700000000042"
    assert feedback["actionValue"]["reaction"] == "dislike"
    assert json.loads(feedback["actionValue"]["feedback"]) == {"feedbackText": "outdated"}
    assert fake.calls == []  # the invoke's answer is the HTTP response, nothing goes to the connector


async def test_an_unhandled_invoke_is_not_implemented(fake: FakeConnector, server: BotServer) -> None:
    invoke = {**feedback_invoke("1", service_url=fake.service_url), "name": "composeExtension/unknown"}

    status, _ = await server.post(invoke)

    assert status == HTTPStatus.NOT_IMPLEMENTED


async def test_members_added_is_a_conversation_update(fake: FakeConnector, server: BotServer) -> None:
    update = members_added(conversation_type="channel", service_url=fake.service_url)

    status, _ = await server.post(update)

    assert status == 201
    assert update["type"] == "conversationUpdate"
    assert update["membersAdded"] == [{"id": BOT_ID}]
    assert update["channelData"]["eventType"] == "teamMemberAdded"
    assert fake.calls == []  # ActivityHandler's default welcomes nobody


async def test_a_failed_send_reaches_the_turn_error_handler(fake: FakeConnector, server: BotServer) -> None:
    fake.fail(status=503)

    status, _ = await server.post(personal_message("hi", service_url=fake.service_url))

    assert status == 201  # the adapter's on_turn_error handled it
    [typing] = fake.calls
    assert (typing.status, typing.body["type"]) == (503, "typing")
    assert fake.activities() == []  # the failed send raised, so the echo was never attempted
    [error] = server.errors
    assert isinstance(error, ErrorResponseException)


# --- every endpoint and every scripted failure, with the real ConnectorClient ---------------------


async def test_update_delete_create_and_members(fake: FakeConnector) -> None:
    client = connector_client(fake)
    conversation = "19:channel-1@thread.tacv2;messageid=1700000000001"
    message = Activity(type=ActivityTypes.message, text="first draft")

    sent = await client.conversations.send_to_conversation(conversation, message)
    await client.conversations.update_activity(conversation, sent.id, Activity(type="message", text="final"))
    await client.conversations.delete_activity(conversation, sent.id)
    created = await client.conversations.create_conversation(
        ConversationParameters(bot=ChannelAccount(id=BOT_ID), members=[ChannelAccount(id="29:user-1")])
    )
    members = await client.conversations.get_conversation_members(conversation)

    send, update, delete, create, listing = fake.calls
    assert (send.operation, send.activity_id, send.new_id) == ("send", None, sent.id)
    assert (update.method, update.operation, update.activity_id) == ("PUT", "update", sent.id)
    assert update.body["text"] == "final"
    assert (delete.method, delete.operation, delete.activity_id, delete.status) == ("DELETE", "delete", sent.id, 200)
    assert all(call.conversation_id == conversation for call in (send, update, delete, listing))
    assert create.operation == "create" and created.id == create.new_id and created.id.startswith("a:")
    assert [member.id for member in members] == ["29:user-1"]
    assert fake.activities() == [send.body]  # updates and deletes are calls, not new activities


async def test_activity_ids_are_unique(fake: FakeConnector) -> None:
    client = connector_client(fake)
    responses = await asyncio.gather(
        *(client.conversations.send_to_conversation("a:1", Activity(type="message", text=str(n))) for n in range(5))
    )
    assert len({response.id for response in responses}) == 5


async def test_scripted_failures_are_consumed_in_order(fake: FakeConnector) -> None:
    client = connector_client(fake)
    fake.fail(status=500)
    fake.throttle(retry_after=2)

    with pytest.raises(ErrorResponseException) as failed:
        await client.conversations.send_to_conversation("a:1", Activity(type="message", text="one"))
    assert failed.value.response.status_code == 500
    with pytest.raises(ErrorResponseException) as throttled:
        await client.conversations.send_to_conversation("a:1", Activity(type="message", text="two"))
    assert throttled.value.response.status_code == 429
    assert throttled.value.response.headers["Retry-After"] == "2"
    await client.conversations.send_to_conversation("a:1", Activity(type="message", text="three"))

    assert [call.status for call in fake.calls] == [500, 429, 201]
    assert [body["text"] for body in fake.activities()] == ["three"]


async def test_delay_holds_the_answer(fake: FakeConnector) -> None:
    client = connector_client(fake)
    fake.delay(0.3, times=1)

    started = time.monotonic()
    await client.conversations.send_to_conversation("a:1", Activity(type="message", text="slow"))
    slow = time.monotonic() - started
    started = time.monotonic()
    await client.conversations.send_to_conversation("a:1", Activity(type="message", text="fast"))
    fast = time.monotonic() - started

    assert slow >= 0.3 > fast


async def test_wait_for_lists_what_arrived_on_timeout(fake: FakeConnector) -> None:
    await connector_client(fake).conversations.send_to_conversation("a:1", Activity(type="message", text="nope"))

    with pytest.raises(AssertionError, match=r"(?s)requests seen:.*'nope'"):
        await fake.wait_for(lambda call: call.body.get("text") == "yes", timeout=0.1)


async def test_the_token_endpoint_answers_client_credentials(fake: FakeConnector) -> None:
    form = {
        "grant_type": "client_credentials",
        "client_id": "00000000-0000-0000-0000-000000000001",
        "client_secret": "s3cret",
        "scope": "https://api.botframework.com/.default",
    }
    async with aiohttp.ClientSession() as session:
        async with session.post(fake.token_url, data=form) as response:
            token = await response.json()
        async with session.post(f"{fake.base_url}/tenant-1/oauth2/v2.0/token", data={"grant_type": "password"}) as bad:
            assert bad.status == 400

    assert token == {
        "token_type": "Bearer",
        "expires_in": 3600,
        "ext_expires_in": 3600,
        "access_token": FAKE_ACCESS_TOKEN,
    }
    first, second = fake.calls_to("token")
    assert first.body["client_id"] == form["client_id"] and first.status == 200
    assert second.status == 400


# --- the threaded variant ---------------------------------------------------------------------------


def test_the_threaded_fake_serves_from_its_own_thread() -> None:
    with ThreadedFakeConnector() as fake:
        body = json.dumps({"type": "message", "text": "from another process"}).encode()
        request = urllib.request.Request(
            f"{fake.service_url}v3/conversations/a%3Apersonal-1/activities",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {FAKE_ACCESS_TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 201
            new_id = json.load(response)["id"]

        [call] = fake.wait_for_sync(lambda call: call.conversation_id == "a:personal-1")
        assert call.new_id == new_id
        assert call.authorization == f"Bearer {FAKE_ACCESS_TOKEN}"
        with pytest.raises(AssertionError, match=r"within 0\.05s"):
            fake.wait_for_sync(kind="typing", timeout=0.05)
    with pytest.raises(RuntimeError):
        _ = fake.service_url
