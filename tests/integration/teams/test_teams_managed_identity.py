"""The Teams answer's way out with a user-assigned managed identity (`MICROSOFT_APP_TYPE=UserAssignedMSI`).

No password: the real botbuilder code asks the host's managed-identity endpoint for the token
(`ManagedIdentityAppCredentials` → MSAL's `ManagedIdentityClient`). On Azure App Service the host sets
IDENTITY_ENDPOINT and IDENTITY_HEADER; here they point at the fake (`ThreadedFakeConnector`'s App
Service identity endpoint), which also plays the Bot Connector. The incoming request carries a
channel token signed by `tests.fakes.bot_auth.FakeBotAuth`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.teams.app import TeamsAdapter, teams_config
from rag.config import load_settings
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_auth import FakeBotAuth
from tests.fakes.bot_connector import IDENTITY_HEADER, ThreadedFakeConnector
from tests.fakes.teams_activities import TENANT_ID, personal_message
from tests.fakes.teams_server import ingest_handbook, post_activity, serve_teams, teams_core
from tests.integration.teams.test_teams_outgoing_auth import OUTGOING, PARENTAL_LEAVE, SCOPE, SICK_LEAVE

CLIENT_ID = "00000000-0000-4000-8000-00000000m510"
TENANT = "11111111-2222-4333-8444-555555555555"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-msi")


@pytest.fixture(scope="module")
def auth() -> Iterator[FakeBotAuth]:
    with FakeBotAuth() as fake:
        yield fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadedFakeConnector]:
    with ThreadedFakeConnector() as connector:
        monkeypatch.setenv("IDENTITY_ENDPOINT", connector.identity_endpoint)
        monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
        for name in ("IDENTITY_SERVER_THUMBPRINT", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        yield connector


@pytest.fixture
async def url(
    candor: Candor,
    handbook: KnowledgeBase,
    auth: FakeBotAuth,
    fake: ThreadedFakeConnector,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[str]:
    monkeypatch.setenv("MICROSOFT_APP_ID", CLIENT_ID)
    monkeypatch.setenv("MICROSOFT_APP_TYPE", "UserAssignedMSI")
    monkeypatch.setenv("MICROSOFT_APP_TENANT_ID", TENANT)
    monkeypatch.setenv("CANDOR_TEAMS_TENANTS", TENANT_ID)  # the organisation the test's messages come from
    monkeypatch.delenv("MICROSOFT_APP_PASSWORD", raising=False)
    config = teams_config(load_settings(home=tmp_path / "home"))
    assert (config.app_id, config.app_password, config.app_type) == (CLIENT_ID, None, "UserAssignedMSI")
    core = teams_core(candor, handbook, tmp_path)
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    adapter = TeamsAdapter(config, core, ledger, drain_seconds=2, auth_overrides={**auth.overrides(), **OUTGOING})
    async with serve_teams(core, adapter) as served:
        yield served


async def ask(url: str, auth: FakeBotAuth, fake: ThreadedFakeConnector, text: str, expected: str) -> str | None:
    question = personal_message(text, service_url=fake.service_url)
    token = auth.sign(auth.channel_claims(CLIENT_ID, question["serviceUrl"]))
    assert await post_activity(url, question, token) in (200, 201, 202)
    (answer,) = await asyncio.to_thread(
        fake.wait_for_sync, lambda call: expected in str(call.body.get("text")), 1, 60.0, "message"
    )
    return answer.authorization


async def test_the_answer_carries_the_managed_identitys_token_fetched_once(
    url: str, auth: FakeBotAuth, fake: ThreadedFakeConnector
) -> None:
    first = await ask(url, auth, fake, PARENTAL_LEAVE, "16 weeks")
    second = await ask(url, auth, fake, SICK_LEAVE, "10 days")

    (issued,) = fake.calls_to("identity")  # one token serves both answers and the typing indicators
    assert issued.status == 200 and issued.token is not None
    assert issued.body["client_id"] == CLIENT_ID  # the identity the bot is registered as
    assert issued.body["resource"] == SCOPE
    assert first == second == f"Bearer {issued.token}"
    assert fake.calls_to("token") == []  # no password flow was tried
    connector = [call for call in fake.calls if call.path.startswith("/v3/")]
    assert connector and all(call.authorization == f"Bearer {issued.token}" for call in connector)
