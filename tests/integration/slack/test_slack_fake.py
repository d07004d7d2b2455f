"""The fake Slack, proven with the real clients: slack_sdk's Web API and Socket Mode clients and slack_bolt."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import parse_qs

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tests.fakes.slack_api import RESPONSE_URL_SECONDS, RESPONSE_URL_USES, FakeSlack, ThreadedFakeSlack
from tests.fakes.slack_events import (
    app_home_opened,
    app_mention,
    assistant_thread_started,
    block_action,
    command_body,
    event_callback,
    form_body,
    json_body,
    message,
    message_changed,
    message_deleted,
    signed_headers,
    slash_command,
    view_submission,
)

SECRET = "signing-secret"
BLOCKS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Answer*"}},
    {"type": "context", "elements": [{"type": "mrkdwn", "text": "source: handbook"}]},
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as running:
        yield running


def web_client(fake: FakeSlack, **kwargs: Any) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=fake.api_url, **kwargs)


def bolt_request(body: bytes, secret: str = SECRET) -> AsyncBoltRequest:
    """What bolt's HTTP adapters build from Slack's request: the raw body and the signed headers."""
    headers: dict[str, str | Sequence[str]] = {**signed_headers(secret, body)}
    return AsyncBoltRequest(body=body.decode(), headers=headers)


# --- Web API -------------------------------------------------------------------------------------


async def test_post_message_records_decoded_blocks_and_token(fake: FakeSlack) -> None:
    assert fake.api_url.startswith("http://127.0.0.1:") and fake.api_url.endswith("/api/")
    client = web_client(fake)
    first = await client.chat_postMessage(channel="C1", text="hi", blocks=BLOCKS, thread_ts="1700000000.000001")
    second = await client.chat_postMessage(channel="C1", text="again")

    [call, _] = fake.calls_to("chat.postMessage")
    assert call.token == "xoxb-test"
    assert call.params["blocks"] == BLOCKS
    assert call.params["thread_ts"] == "1700000000.000001"
    assert first["channel"] == "C1" and first["message"]["blocks"] == BLOCKS
    assert first["message"]["bot_id"] == "BBOT"
    assert float(second["ts"]) > float(first["ts"])


async def test_blocks_sent_as_a_json_string_in_a_form_are_decoded(fake: FakeSlack) -> None:
    await web_client(fake).api_call("chat.postMessage", data={"channel": "C1", "blocks": json.dumps(BLOCKS)})
    [call] = await fake.wait_for("chat.postMessage")
    assert call.params == {"channel": "C1", "blocks": BLOCKS}


async def test_query_string_params_get_and_auth_test(fake: FakeSlack) -> None:
    client = web_client(fake)
    fake.channels["C9"] = {"is_private": True, "is_ext_shared": True}
    auth = await client.auth_test()
    assert (auth["team_id"], auth["user_id"], auth["bot_id"]) == ("T0001", "UBOT", "BBOT")
    assert (await client.conversations_info(channel="C9"))["channel"]["is_ext_shared"] is True
    assert (await client.conversations_info(channel="D5"))["channel"]["is_im"] is True
    assert (await client.conversations_info(channel="C5"))["channel"]["is_private"] is False
    await client.reactions_add(channel="C1", timestamp="1700000000.000001", name="eyes")  # POST, query string
    await client.assistant_threads_setTitle(channel_id="D1", thread_ts="1.2", title="Question")
    assert fake.calls_to("reactions.add")[0].params == {
        "channel": "C1",
        "timestamp": "1700000000.000001",
        "name": "eyes",
    }
    assert fake.calls_to("assistant.threads.setTitle")[0].params["title"] == "Question"


async def test_other_methods_answer_like_slack(fake: FakeSlack) -> None:
    client = web_client(fake)
    posted = await client.chat_postMessage(channel="C1", text="v1")
    updated = await client.chat_update(channel="C1", ts=posted["ts"], text="v2", blocks=BLOCKS)
    assert updated["ts"] == posted["ts"] and updated["message"]["blocks"] == BLOCKS
    assert (await client.chat_delete(channel="C1", ts=posted["ts"]))["ts"] == posted["ts"]
    assert (await client.chat_postEphemeral(channel="C1", user="U1", text="psst"))["message_ts"]
    view = {"type": "modal", "callback_id": "feedback", "title": {"type": "plain_text", "text": "x"}, "blocks": []}
    opened = await client.views_open(trigger_id="t", view=view)
    assert opened["view"]["id"].startswith("V") and opened["view"]["callback_id"] == "feedback"
    await client.views_publish(user_id="U1", view={"type": "home", "blocks": BLOCKS})
    assert fake.calls_to("views.publish")[0].params["view"]["blocks"] == BLOCKS
    await client.assistant_threads_setStatus(channel_id="D1", thread_ts="1.2", status="is thinking...")
    await client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=[{"title": "a", "message": "b"}])
    with pytest.raises(SlackApiError) as unknown:
        await client.api_call("chat.frobnicate")
    assert unknown.value.response["error"] == "unknown_method"
    with pytest.raises(SlackApiError) as no_text, pytest.warns(UserWarning, match="`text` argument is missing"):
        await client.chat_postMessage(channel="C1")
    assert no_text.value.response["error"] == "no_text"


async def test_rate_limit_is_retried_after_retry_after(fake: FakeSlack) -> None:
    fake.rate_limit("chat.postMessage", retry_after=1)
    client = web_client(fake, retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)])
    started = time.monotonic()
    response = await client.chat_postMessage(channel="C1", text="hi")
    elapsed = time.monotonic() - started

    assert response["ok"] is True
    assert [call.status for call in fake.calls_to("chat.postMessage")] == [429, 200]
    assert fake.calls_to("chat.postMessage")[0].error == "ratelimited"
    assert elapsed >= 0.95


async def test_scripted_errors_failures_and_delays(fake: FakeSlack) -> None:
    client = web_client(fake)
    fake.error("chat.postMessage", "channel_not_found")
    with pytest.raises(SlackApiError) as error:
        await client.chat_postMessage(channel="C404", text="hi")
    assert error.value.response["error"] == "channel_not_found"
    fake.fail("chat.update", status=500)
    with pytest.raises(SlackApiError) as failed:
        await client.chat_update(channel="C1", ts="1.2", text="x")
    assert failed.value.response.status_code == 500
    fake.delay("reactions.add", 0.3, times=1)
    started = time.monotonic()
    await client.reactions_add(channel="C1", timestamp="1.2", name="eyes")
    assert time.monotonic() - started >= 0.29
    await client.chat_postMessage(channel="C1", text="scripts are consumed")
    assert [c.status for c in fake.calls] == [200, 500, 200, 200]

    fake.reset()
    assert fake.calls == []
    with pytest.raises(AssertionError, match="expected 1 call"):
        await fake.wait_for("chat.postMessage", timeout=0.05)


async def test_wait_for_with_predicate(fake: FakeSlack) -> None:
    client = web_client(fake)

    async def later() -> None:
        await asyncio.sleep(0.05)
        await client.chat_postMessage(channel="C1", text="first")
        await client.chat_postMessage(channel="C2", text="second")

    task = asyncio.create_task(later())
    [call] = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "C2", timeout=5)
    assert call.params["text"] == "second"
    await task


async def test_the_bot_is_refused_where_it_is_not_a_member(fake: FakeSlack) -> None:
    client = web_client(fake)
    fake.channel("C0OUT", member=False)
    fake.channel("C0PRIV", member=False, is_private=True)
    fake.channel("D0PEOPLE", member=False, is_im=True)
    fake.channel("G0GROUP", member=False, is_mpim=True, is_private=True)
    refusals = {"C0OUT": "not_in_channel", "C0PRIV": "channel_not_found", "D0PEOPLE": "channel_not_found"}
    refusals["G0GROUP"] = "channel_not_found"  # a conversation the bot is not in does not exist for it
    attempts = {
        "chat.postMessage": {"text": "hi"},
        "chat.postEphemeral": {"user": "U1", "text": "psst"},
        "chat.update": {"ts": "1.2", "text": "v2"},
        "reactions.add": {"timestamp": "1.2", "name": "eyes"},
        "conversations.replies": {"ts": "1.2"},
    }
    for channel, error in refusals.items():
        for method, params in attempts.items():
            with pytest.raises(SlackApiError) as refused:
                await client.api_call(method, params={"channel": channel, **params})
            assert refused.value.response["error"] == error, (method, channel)
    assert (await client.conversations_info(channel="C0OUT"))["channel"]["is_member"] is False
    for hidden in ("C0PRIV", "D0PEOPLE", "G0GROUP"):
        with pytest.raises(SlackApiError) as unseen:
            await client.conversations_info(channel=hidden)
        assert unseen.value.response["error"] == "channel_not_found"

    # any other conversation is one the bot is in
    assert (await client.chat_postMessage(channel="C1", text="hi"))["ok"] is True
    assert (await client.conversations_info(channel="C1"))["channel"]["is_member"] is True
    fake.channel("C0OUT")  # the bot was invited
    assert (await client.chat_postMessage(channel="C0OUT", text="hi"))["ok"] is True


async def test_conversations_replies_serves_a_thread_page_by_page_as_slack_does(fake: FakeSlack) -> None:
    client = web_client(fake)
    root = fake.said(message("Does anyone know the parental leave for adoptive parents?", user="U2", channel="C5"))
    chat = fake.said(message("no idea, ask Candor", user="U3", channel="C5", thread_ts=root["ts"]))
    answer = await client.chat_postMessage(channel="C5", thread_ts=root["ts"], text="16 weeks [1]")
    gone = await client.chat_postMessage(channel="C5", thread_ts=root["ts"], text="(continued)")
    await client.chat_update(channel="C5", ts=answer["ts"], text="16 weeks, also for adoption [1]")
    await client.chat_delete(channel="C5", ts=gone["ts"])
    await client.chat_postMessage(channel="C5", text="elsewhere in the channel")

    whole = await client.conversations_replies(channel="C5", ts=root["ts"])
    assert [m["ts"] for m in whole["messages"]] == [root["ts"], chat["ts"], answer["ts"]]
    assert whole["has_more"] is False
    first, person, bot = whole["messages"]
    assert first["reply_count"] == 2 and first["thread_ts"] == root["ts"] and "channel" not in first
    assert person["user"] == "U3" and person["parent_user_id"] == "U2" and person["thread_ts"] == root["ts"]
    assert bot["bot_id"] and bot["text"] == "16 weeks, also for adoption [1]" and "edited" in bot

    page = await client.conversations_replies(channel="C5", ts=root["ts"], limit=2)
    assert len(page["messages"]) == 2 and page["has_more"] is True
    rest = await client.conversations_replies(
        channel="C5", ts=root["ts"], limit=2, cursor=page["response_metadata"]["next_cursor"]
    )
    assert [m["ts"] for m in rest["messages"]] == [answer["ts"]] and rest["has_more"] is False
    before = await client.conversations_replies(channel="C5", ts=root["ts"], latest=answer["ts"])
    assert [m["ts"] for m in before["messages"]] == [root["ts"], chat["ts"]]  # latest is exclusive by default
    inclusive = await client.conversations_replies(channel="C5", ts=root["ts"], latest=answer["ts"], inclusive=True)
    assert len(inclusive["messages"]) == 3

    for params, error in [
        ({"channel": "C5", "ts": "1690000000.000001"}, "thread_not_found"),
        ({"channel": "C5", "ts": root["ts"], "cursor": "not a cursor"}, "invalid_cursor"),
    ]:
        with pytest.raises(SlackApiError) as refused:
            await client.conversations_replies(**params)
        assert refused.value.response["error"] == error
    fake.scopes = "app_mentions:read,chat:write"  # installed without the history scopes
    with pytest.raises(SlackApiError) as refused:
        await client.conversations_replies(channel="C5", ts=root["ts"])
    assert refused.value.response["error"] == "missing_scope" and refused.value.response["needed"] == "channels:history"


async def test_a_response_url_takes_five_posts_within_thirty_minutes(fake: FakeSlack) -> None:
    url = fake.response_url()
    webhook = AsyncWebhookClient(url)
    for n in range(RESPONSE_URL_USES):
        sent = await webhook.send(text=f"part {n}", blocks=BLOCKS, response_type="ephemeral", replace_original=False)
        assert (sent.status_code, sent.body) == (200, '{"ok": true}')
    over = await webhook.send(text="one too many")
    assert (over.status_code, over.body) == (404, "used_url")
    late = await AsyncWebhookClient(fake.response_url(age=RESPONSE_URL_SECONDS + 1)).send(text="late")
    assert (late.status_code, late.body) == (404, "expired_url")
    empty = await AsyncWebhookClient(fake.response_url()).send(response_type="ephemeral")
    assert (empty.status_code, empty.body) == (400, "no_text")
    odd = await AsyncWebhookClient(fake.response_url()).send(text="hi", response_type="everyone")
    assert (odd.status_code, odd.body) == (400, "invalid_payload")

    calls = fake.calls_to("response_url")
    assert [c.error for c in calls] == [None] * 5 + ["used_url", "expired_url", "no_text", "invalid_payload"]
    assert calls[0].url == url
    assert calls[0].params == {
        "text": "part 0",
        "blocks": BLOCKS,
        "response_type": "ephemeral",
        "replace_original": False,
    }


async def test_app_tokens_only_open_connections(fake: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as wrong:
        await web_client(fake).apps_connections_open(app_token="xoxb-test")
    assert wrong.value.response["error"] == "not_allowed_token_type"
    with pytest.raises(SlackApiError) as anonymous:
        await AsyncWebClient(base_url=fake.api_url).auth_test()
    assert anonymous.value.response["error"] == "not_authed"


# --- Socket Mode ---------------------------------------------------------------------------------


async def test_socket_mode_client_receives_an_envelope_and_acks(fake: FakeSlack) -> None:
    received: list[SocketModeRequest] = []

    async def listener(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        received.append(request)
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    client = SocketModeClient(app_token="xapp-test", web_client=AsyncWebClient(base_url=fake.api_url))
    client.socket_mode_request_listeners.append(listener)
    try:
        await client.connect()  # type: ignore[no-untyped-call]
        await fake.wait_for_socket()
        assert fake.socket_connections == 1
        assert fake.calls_to("apps.connections.open")[0].token == "xapp-test"

        body = event_callback(app_mention("what is the refund policy?"))
        envelope_id = await fake.send_envelope("events_api", body)
        ack = await fake.wait_for_ack(envelope_id)
    finally:
        await client.close()  # type: ignore[no-untyped-call]

    assert ack == {"envelope_id": envelope_id}
    assert [r.type for r in received] == ["events_api"]
    assert received[0].payload["event"]["text"] == "<@UBOT> what is the refund policy?"


async def test_socket_mode_client_reconnects_on_disconnect(fake: FakeSlack) -> None:
    client = SocketModeClient(app_token="xapp-test", web_client=AsyncWebClient(base_url=fake.api_url))
    try:
        await client.connect()  # type: ignore[no-untyped-call]
        await fake.wait_for_socket()
        await fake.send_disconnect()
        await fake.wait_for("apps.connections.open", count=2)
        await fake.wait_for_socket()
    finally:
        await client.close()  # type: ignore[no-untyped-call]


# --- slack_bolt over HTTP ------------------------------------------------------------------------


async def test_bolt_dispatches_a_signed_mention_and_say_lands_in_the_fake(fake: FakeSlack) -> None:
    app = AsyncApp(signing_secret=SECRET, client=web_client(fake))

    @app.event("app_mention")
    async def answer(event: dict[str, Any], say: Any) -> None:
        await say(text=f"you said: {event['text']}", thread_ts=event["ts"])

    mention = app_mention("hello", channel="C7")
    body = json_body(event_callback(mention))
    response = await app.async_dispatch(bolt_request(body))
    assert response.status == 200

    [call] = await fake.wait_for("chat.postMessage")
    assert call.params["channel"] == "C7"
    assert call.params["thread_ts"] == mention["ts"]
    assert call.params["text"] == "you said: <@UBOT> hello"
    assert call.token == "xoxb-test"
    assert fake.calls_to("auth.test"), "bolt authorizes with auth.test before the first listener"


async def test_bolt_rejects_a_wrong_signature(fake: FakeSlack) -> None:
    app = AsyncApp(signing_secret=SECRET, client=web_client(fake))
    body = json_body(event_callback(app_mention("hello")))
    assert (await app.async_dispatch(bolt_request(body, "not-the-secret"))).status == 401
    assert fake.calls == []


async def test_bolt_parses_slash_commands_and_block_actions(fake: FakeSlack) -> None:
    app = AsyncApp(signing_secret=SECRET, client=web_client(fake))
    seen: list[str] = []

    @app.command("/candor")
    async def command(ack: Any, command: dict[str, Any]) -> None:
        await ack()
        seen.append(command["text"])

    @app.action("helpful")
    async def helpful(ack: Any, action: dict[str, Any]) -> None:
        await ack()
        seen.append(action["value"])

    for body in (command_body(slash_command("where is the vpn guide")), form_body(block_action("helpful", "yes"))):
        response = await app.async_dispatch(bolt_request(body))
        assert response.status == 200
    assert seen == ["where is the vpn guide", "yes"]


async def test_bolt_matches_every_built_payload(fake: FakeSlack) -> None:
    app = AsyncApp(signing_secret=SECRET, client=web_client(fake))
    seen: list[str] = []

    @app.event("app_home_opened")
    async def home(event: dict[str, Any]) -> None:
        seen.append(f"home:{event['user']}")

    @app.event("assistant_thread_started")
    async def started(event: dict[str, Any]) -> None:
        seen.append(f"assistant:{event['assistant_thread']['channel_id']}")

    @app.event({"type": "message", "subtype": "message_changed"})
    async def changed(event: dict[str, Any]) -> None:
        seen.append(f"changed:{event['message']['text']}")

    @app.event({"type": "message", "subtype": "message_deleted"})
    async def deleted(event: dict[str, Any]) -> None:
        seen.append(f"deleted:{event['deleted_ts']}")

    @app.message("vpn")
    async def dm(message: dict[str, Any]) -> None:
        seen.append(f"message:{message['channel_type']}")

    @app.view("feedback")
    async def submitted(ack: Any, view: dict[str, Any]) -> None:
        await ack()
        seen.append(f"view:{view['private_metadata']}:{view['state']['values']['note']['text']['value']}")

    @app.command("/candor")
    async def command(ack: Any, respond: Any) -> None:
        await ack()
        await respond("only you can see this")

    bodies = [
        json_body(event_callback(app_home_opened("U2"))),
        json_body(event_callback(assistant_thread_started("D3"))),
        json_body(event_callback(message_changed("C1", "1700000000.000001", "edited"))),
        json_body(event_callback(message_deleted("C1", "1700000000.000001"))),
        json_body(event_callback(message("where is the vpn guide", channel="D1"))),
        form_body(view_submission("feedback", "q-42", {"note": {"text": "great"}})),
        command_body(slash_command("hi", response_url=fake.response_url())),
    ]
    for body in bodies:
        assert (await app.async_dispatch(bolt_request(body))).status == 200

    [responded] = await fake.wait_for("response_url")
    assert responded.params["text"] == "only you can see this"
    expected = [
        "home:U2",
        "assistant:D3",
        "changed:edited",
        "deleted:1700000000.000001",
        "message:im",
        "view:q-42:great",
    ]
    for _ in range(100):
        if len(seen) == len(expected):
            break
        await asyncio.sleep(0.01)
    assert sorted(seen) == sorted(expected)


# --- helpers and the threaded variant ------------------------------------------------------------


def test_signed_headers_verify_with_slack_sdk() -> None:
    body = command_body(slash_command("hi"))
    headers = signed_headers(SECRET, body)
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert not SignatureVerifier("other").is_valid_request(body, headers)
    stale = signed_headers(SECRET, body, timestamp=int(time.time()) - 600)
    assert not SignatureVerifier(SECRET).is_valid_request(body, stale)
    assert parse_qs(form_body({"type": "block_actions"}).decode()) == {"payload": ['{"type":"block_actions"}']}


def test_message_builders_have_unique_increasing_ts() -> None:
    first, second = message("a"), message("b", channel="D1", thread_ts="1700000000.000001")
    assert float(second["ts"]) > float(first["ts"])
    assert first["channel_type"] == "channel" and second["channel_type"] == "im"
    assert second["thread_ts"] == "1700000000.000001"
    bot = message("from a bot", user="UBOT", bot_id="BBOT")
    assert bot["bot_id"] == "BBOT" and "client_msg_id" not in bot


def test_threaded_fake_with_the_sync_web_client() -> None:
    with ThreadedFakeSlack() as fake:
        client = WebClient(token="xoxb-test", base_url=fake.api_url)
        fake.channels["C2"] = {"is_private": True}
        response = client.chat_postMessage(channel="C2", text="from a sync client", blocks=BLOCKS)
        assert response["ok"] is True
        [call] = fake.wait_for_sync("chat.postMessage", timeout=5)
        assert call.params["blocks"] == BLOCKS and call.token == "xoxb-test"
        assert client.conversations_info(channel="C2")["channel"]["is_private"] is True
    with pytest.raises(RuntimeError):
        _ = fake.api_url


async def test_threaded_fake_socket_mode() -> None:
    with ThreadedFakeSlack() as fake:
        acked: list[str] = []

        async def listener(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
            acked.append(request.envelope_id)
            await client.send_socket_mode_response({"envelope_id": request.envelope_id, "payload": {"text": "ok"}})

        client = SocketModeClient(app_token="xapp-test", web_client=AsyncWebClient(base_url=fake.api_url))
        client.socket_mode_request_listeners.append(listener)
        try:
            await client.connect()  # type: ignore[no-untyped-call]
            await asyncio.to_thread(fake.wait_for_socket_sync, 5)
            command = slash_command("hi")
            envelope_id = fake.send_envelope_sync("slash_commands", command, accepts_response_payload=True)
            ack = await asyncio.to_thread(fake.wait_for_ack_sync, envelope_id, 5)
        finally:
            await client.close()  # type: ignore[no-untyped-call]
    assert ack == {"envelope_id": envelope_id, "payload": {"text": "ok"}}
    assert acked == [envelope_id]
