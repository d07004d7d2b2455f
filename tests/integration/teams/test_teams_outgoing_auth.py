"""The Teams answer's way out, authenticated: a token from (a fake) Microsoft login, then the Bot Connector.

With MICROSOFT_APP_ID / MICROSOFT_APP_PASSWORD (and, SingleTenant, MICROSOFT_APP_TENANT_ID) set, the
real botbuilder code gets the token: `MicrosoftAppCredentials` → MSAL's `ConfidentialClientApplication`
→ blocking `requests` calls to https://login.microsoftonline.com/<tenant>: the tenant's OpenID
metadata, then `POST /<tenant>/oauth2/v2.0/token` with client_credentials. Nothing in botbuilder,
MSAL or Candor is patched; the environment routes it, as a corporate proxy would:

- HTTPS_PROXY points `requests` at `tests.fakes.tunnel.TunnelProxy`, which tunnels CONNECT
  login.microsoftonline.com:443 to the fake's TLS port and refuses every other host (NO_PROXY keeps
  the local fakes direct);
- the fake (`ThreadedFakeConnector`: the Bot Connector and, over TLS, the login) presents a certificate
  for login.microsoftonline.com from a throwaway CA (`tests.fakes.tls.LocalCA`) that
  REQUESTS_CA_BUNDLE trusts. MSAL knows login.microsoftonline.com, so it does no instance discovery;
- the incoming token is signed by `tests.fakes.bot_auth.FakeBotAuth`, whose `auth_overrides` make
  botbuilder use its "parameterized" authentication. That one leaves the outgoing login URL and
  scope unset (MSAL would then use /common) unless given, so the test gives them the public cloud's
  own values, which is what `candor serve` (no overrides) uses: `test_the_overrides_reproduce_...`.

The fake runs on its own thread: MSAL's requests run synchronously inside botbuilder's
`signed_session`, blocking the bot's event loop while the token is fetched.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botbuilder.integration.aiohttp import CloudAdapter
from botframework.connector.auth import AuthenticationConstants, MicrosoftAppCredentials

from bot.teams.app import TeamsAdapter, TeamsConfig, teams_config
from rag.config import load_settings
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_auth import FakeBotAuth
from tests.fakes.bot_connector import Call, ThreadedFakeConnector
from tests.fakes.teams_activities import TENANT_ID, personal_message
from tests.fakes.teams_server import ingest_handbook, post_activity, serve_teams, teams_core
from tests.fakes.tls import LocalCA
from tests.fakes.tunnel import TunnelProxy

APP_ID = "00000000-0000-4000-8000-0000000b0t02"
APP_PASSWORD = "the-bots-client-secret"
BOT_TENANT = "11111111-2222-4333-8444-555555555555"
LOGIN_URL = AuthenticationConstants.TO_CHANNEL_FROM_BOT_LOGIN_URL_PREFIX  # "https://login.microsoftonline.com/"
LOGIN_HOST = "login.microsoftonline.com"
SCOPE = AuthenticationConstants.TO_CHANNEL_FROM_BOT_OAUTH_SCOPE  # "https://api.botframework.com"
OUTGOING = {"TO_CHANNEL_FROM_BOT_LOGIN_URL": LOGIN_URL, "TO_CHANNEL_FROM_BOT_OAUTH_SCOPE": SCOPE}
"""The public cloud's outgoing settings, made explicit (see the module docstring)."""
TENANTS = {"MultiTenant": AuthenticationConstants.DEFAULT_CHANNEL_AUTH_TENANT, "SingleTenant": BOT_TENANT}
"""The tenant whose authority issues the bot's tokens: botframework.com unless SingleTenant."""
PARENTAL_LEAVE = "How much paid parental leave does the primary carer get?"
SICK_LEAVE = "How many days of paid sick leave do employees get each year?"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-outgoing")


@pytest.fixture(scope="module")
def auth() -> Iterator[FakeBotAuth]:
    with FakeBotAuth() as fake:
        yield fake


@dataclass
class Login:
    """The fake: Bot Connector on `fake.service_url`, and login.microsoftonline.com through `proxy`."""

    fake: ThreadedFakeConnector
    proxy: TunnelProxy


@pytest.fixture
def login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Login]:
    ca = LocalCA()
    with (
        ThreadedFakeConnector(tls=ca.server_context(LOGIN_HOST), unique_tokens=True) as fake,
        TunnelProxy({f"{LOGIN_HOST}:443": ("127.0.0.1", fake.tls_port)}) as proxy,
    ):
        for name in ("HTTPS_PROXY", "https_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "127.0.0.1,localhost")
        for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "CURL_CA_BUNDLE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_bundle(tmp_path / "ca.pem")))
        yield Login(fake, proxy)


@pytest.fixture(params=list(TENANTS))
def tenancy(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(tenancy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TeamsConfig:
    """The bot's Teams configuration, read from the environment as `candor serve` reads it."""
    monkeypatch.setenv("MICROSOFT_APP_ID", APP_ID)
    monkeypatch.setenv("MICROSOFT_APP_PASSWORD", APP_PASSWORD)
    monkeypatch.setenv("MICROSOFT_APP_TYPE", tenancy)
    monkeypatch.setenv("CANDOR_TEAMS_TENANTS", TENANT_ID)  # the organisation the test's messages come from
    if tenancy == "SingleTenant":
        monkeypatch.setenv("MICROSOFT_APP_TENANT_ID", BOT_TENANT)
    else:
        monkeypatch.delenv("MICROSOFT_APP_TENANT_ID", raising=False)
    made = teams_config(load_settings(home=tmp_path / "home"))
    assert (made.app_id, made.app_password, made.app_type) == (APP_ID, APP_PASSWORD, tenancy)
    return made


@dataclass
class Served:
    url: str
    login: Login
    auth: FakeBotAuth
    tenant: str

    @property
    def fake(self) -> ThreadedFakeConnector:
        return self.login.fake

    async def ask(self, text: str, expected: str) -> Call:
        """Post the question `text` with a valid channel token; the answer's call to the Connector, once a
        message with `expected` in its text was delivered (a proactive answer replies to a fresh id)."""
        question = personal_message(text, service_url=self.fake.service_url)
        token = self.auth.sign(self.auth.channel_claims(APP_ID, question["serviceUrl"]))
        assert await post_activity(self.url, question, token) in (200, 201, 202)
        (answer,) = await asyncio.to_thread(
            self.fake.wait_for_sync, lambda call: expected in str(call.body.get("text")), 1, 60.0, "message"
        )
        assert answer.authorization != f"Bearer {token}"  # the channel's token stays incoming
        return answer

    def tokens(self) -> dict[str, Call]:
        """The token requests answered, by the token issued."""
        return {call.token: call for call in self.fake.calls_to("token") if call.token}

    def connector_calls(self) -> list[Call]:
        return [call for call in self.fake.calls if call.path.startswith("/v3/")]


@pytest.fixture
async def served(
    candor: Candor,
    handbook: KnowledgeBase,
    auth: FakeBotAuth,
    login: Login,
    config: TeamsConfig,
    tenancy: str,
    tmp_path: Path,
) -> AsyncIterator[Served]:
    core = teams_core(candor, handbook, tmp_path)
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    adapter = TeamsAdapter(config, core, ledger, drain_seconds=2, auth_overrides={**auth.overrides(), **OUTGOING})
    async with serve_teams(core, adapter) as url:
        yield Served(url, login, auth, TENANTS[tenancy])


async def _until(check: Callable[[], bool], within: float = 5.0) -> bool:
    for _ in range(int(within / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_the_answer_carries_a_token_from_the_tenants_authority(served: Served) -> None:
    answer = await served.ask(PARENTAL_LEAVE, "16 weeks")

    tokens = served.tokens()
    assert answer.authorization is not None and answer.authorization.startswith("Bearer ")
    used = answer.authorization.removeprefix("Bearer ")
    assert used in tokens, f"the answer's token {used!r} is not one the login issued: {list(tokens)}"
    assert tokens[used].at < answer.at
    for call in served.fake.calls_to("token"):
        assert (call.host, call.method, call.path, call.status) == (
            LOGIN_HOST,
            "POST",
            f"/{served.tenant}/oauth2/v2.0/token",
            200,
        )
        assert call.body["grant_type"] == "client_credentials"
        assert (call.body["client_id"], call.body["client_secret"]) == (APP_ID, APP_PASSWORD)
        assert call.body["scope"] == f"{SCOPE}/.default"
    # MSAL found the token endpoint in the tenant's OpenID metadata, on the same host
    openid = served.fake.calls_to("openid")
    assert openid and {(c.host, c.path) for c in openid} == {
        (LOGIN_HOST, f"/{served.tenant}/v2.0/.well-known/openid-configuration")
    }
    # every call to the Connector (typing indicators too) is authorised by an issued token
    for call in served.connector_calls():
        assert call.authorization is not None and call.authorization.removeprefix("Bearer ") in tokens
    # nothing else left the machine: no instance discovery, no other host
    assert set(served.login.proxy.connects) == {f"{LOGIN_HOST}:443"}
    assert served.login.proxy.refused == []


@pytest.mark.parametrize("tenancy", ["MultiTenant"], indirect=True)
async def test_one_token_serves_every_outgoing_activity_until_it_expires(served: Served) -> None:
    """botbuilder 4.17.1's `CloudAdapter` makes a connector client per `continue_conversation`, and
    its credentials factory new `MicrosoftAppCredentials` per client, hence a new MSAL application
    with an empty token cache: every typing indicator and every answer would cost the tenant's
    OpenID metadata and a token request, made synchronously on the bot's event loop. The adapter's
    `ReusedCredentials` keeps one set, so MSAL's cache serves the token (it lives 3600 s here)."""
    first = await served.ask(PARENTAL_LEAVE, "16 weeks")
    second = await served.ask(SICK_LEAVE, "10 days")
    assert first.authorization == second.authorization
    calls = served.connector_calls()
    assert len(calls) >= 3  # two answers and at least one typing indicator
    assert {call.authorization for call in calls} == {first.authorization}
    assert len(served.tokens()) == 1 and len(served.fake.calls_to("openid")) == 1


async def test_the_overrides_reproduce_candor_serves_outgoing_credentials(
    candor: Candor, auth: FakeBotAuth, config: TeamsConfig
) -> None:
    """What `candor serve` builds (no overrides: botbuilder's public cloud) and what the tests build
    (the fake's incoming overrides plus `OUTGOING`) give the same credentials: class, app id, secret,
    authority (https://login.microsoftonline.com/<tenant>) and scope. No network: MSAL starts lazily."""
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    served = TeamsAdapter(config, candor, ledger)
    tested = TeamsAdapter(config, candor, ledger, auth_overrides={**auth.overrides(), **OUTGOING})

    async def credentials(cloud: CloudAdapter) -> tuple[Any, ...]:
        factory = cloud.bot_framework_authentication.create_connector_factory(cloud.create_claims_identity(APP_ID))
        client = await factory.create("https://smba.trafficmanager.net/teams/", None)
        made = client.config.credentials
        assert isinstance(made, MicrosoftAppCredentials)
        return type(made), made.microsoft_app_id, made.microsoft_app_password, made.oauth_endpoint, made.oauth_scope

    expected = (
        MicrosoftAppCredentials,
        APP_ID,
        APP_PASSWORD,
        f"https://{LOGIN_HOST}/{TENANTS[config.app_type]}",
        SCOPE,
    )
    assert await credentials(served.cloud) == expected
    assert await credentials(tested.cloud) == expected
