"""The Teams endpoint's incoming authentication, proven with tokens the test signs.

`/api/messages` is served as `candor serve` serves it, with an app id (so botbuilder's `CloudAdapter`
checks every request's JWT) and with incoming auth pointed (through `auth_overrides`) at a fake
Bot Framework OpenID metadata + JWKS endpoint (`tests/fakes/bot_auth.py`). Real HTTP, the real
pipeline and the event ledger in Postgres; the answer's way out (an outgoing token from MSAL, which
refuses the fake's `http://` authority) fails, as expected here: only the turn is judged
(`test_teams_outgoing_auth.py` proves the way out). The serving is shared: `tests/fakes/teams_server.py`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import web

from bot.teams.app import TeamsAdapter, TeamsConfig
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_auth import FakeBotAuth, new_key
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.teams_activities import TENANT_ID, personal_message
from tests.fakes.teams_server import ingest_handbook, post_activity, serve_teams, teams_core

APP_ID = "00000000-0000-4000-8000-0000000b0t01"
QUESTION = "How much paid parental leave does the primary carer get?"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-auth")


@pytest.fixture(scope="module")
def auth() -> Iterator[FakeBotAuth]:
    with FakeBotAuth() as fake:
        yield fake


@dataclass
class Served:
    url: str
    fake: FakeConnector
    auth: FakeBotAuth
    ledger: EventLedger

    async def post(self, activity: dict[str, Any], token: str | None = None) -> int:
        return await post_activity(self.url, activity, token)

    async def row(self, activity: dict[str, Any]) -> dict[str, Any] | None:
        return await self.ledger.get("teams", f"{TENANT_ID}/{activity['conversation']['id']}/{activity['id']}")

    def question(self) -> dict[str, Any]:
        return personal_message(QUESTION, service_url=self.fake.service_url)

    def claims(self, activity: dict[str, Any], **changes: Any) -> dict[str, Any]:
        return {**self.auth.channel_claims(APP_ID, activity["serviceUrl"]), **changes}


@pytest.fixture
async def served(candor: Candor, handbook: KnowledgeBase, auth: FakeBotAuth, tmp_path: Path) -> AsyncIterator[Served]:
    core = teams_core(candor, handbook, tmp_path)
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    async with FakeConnector() as fake:
        overrides = {
            **auth.overrides(),
            # outgoing tokens from the fake's http:// authority: MSAL refuses it at once (no network, no hang)
            "TO_CHANNEL_FROM_BOT_LOGIN_URL": f"{fake.base_url}/botframework.com",
        }
        adapter = TeamsAdapter(
            TeamsConfig(app_id=APP_ID, app_password="secret", tenants=frozenset({TENANT_ID})),
            core,
            ledger,
            drain_seconds=2,
            auth_overrides=overrides,
        )
        async with serve_teams(core, adapter) as url:
            yield Served(url, fake, auth, ledger)


async def refused(served: Served, activity: dict[str, Any], token: str | None) -> int:
    """The status of a request that must not get through; asserts nothing was claimed or sent."""
    status = await served.post(activity, token)
    assert not 200 <= status < 300
    assert await served.row(activity) is None
    await asyncio.sleep(0.2)
    assert served.fake.activities() == []
    return status


def unauthenticated(served: Served, activity: dict[str, Any], case: str) -> str | None:
    """The Authorization token (None: no header) of one way of not being the Bot Framework."""
    auth, claims = served.auth, served.claims(activity)
    now = int(time.time())
    match case:
        case "no Authorization header":
            return None
        case "another app's audience":
            return auth.sign({**claims, "aud": "some-other-bot"})
        case "another issuer":
            return auth.sign({**claims, "iss": "https://evil.example.com"})
        case "another serviceurl":  # a token for one Connector can't send the answer elsewhere
            return auth.sign({**claims, "serviceurl": "https://smba.trafficmanager.net/teams/"})
        case "no serviceurl":
            return auth.sign({k: v for k, v in claims.items() if k != "serviceurl"})
        case "a key the fake does not publish":  # the published kid, another key: the signature fails
            return auth.sign(claims, key=new_key())
        case "an unknown kid":
            return auth.sign(claims, key=new_key(), kid="not-published")
        case "expired":  # past botframework's 5 minutes of clock tolerance
            return auth.sign({**claims, "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600})
        case "unsigned (alg none)":
            return jwt.encode(claims, "", algorithm="none", headers={"kid": auth.kid})  # "": no key (PyJWT)
    raise AssertionError(case)


CASES = [
    "no Authorization header",
    "another app's audience",
    "another issuer",
    "another serviceurl",
    "no serviceurl",
    "a key the fake does not publish",
    "an unknown kid",
    "expired",
    "unsigned (alg none)",
]


@pytest.mark.parametrize("case", CASES)
async def test_a_request_not_from_the_bot_framework_is_refused_and_nothing_is_claimed(
    served: Served, case: str
) -> None:
    question = served.question()
    await refused(served, question, unauthenticated(served, question, case))


@pytest.mark.parametrize("case", CASES)
async def test_a_request_not_from_the_bot_framework_is_401(served: Served, case: str) -> None:
    question = served.question()
    assert await refused(served, question, unauthenticated(served, question, case)) == 401


async def test_a_valid_channel_token_is_accepted_and_the_question_claimed(served: Served) -> None:
    question = served.question()
    token = served.auth.sign(served.claims(question))
    assert await served.post(question, token) in (200, 201, 202)
    row = await served.row(question)
    assert row is not None and row["question"] == QUESTION
    assert {"/v1/.well-known/openidconfiguration", "/v1/.well-known/keys"} <= set(served.auth.requests)
    # the answer's delivery needs an outgoing token the fake can't give (MSAL refuses http://):
    # the worker logs that; nothing reaches the Connector and the test does not wait for it.


async def test_a_message_from_another_organisation_is_refused_and_logged(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """A multi-tenant registration lets any organisation install the bot; only the tenants named
    in the settings are answered (a valid Bot Framework token says nothing about the tenant)."""
    question = personal_message(QUESTION, service_url=served.fake.service_url, tenant_id="tenant-elsewhere")
    token = served.auth.sign(served.claims(question))
    with caplog.at_level(logging.WARNING, logger="candor.teams"):
        status = await served.post(question, token)
    assert status == 403
    assert (
        await served.ledger.get("teams", f"tenant-elsewhere/{question['conversation']['id']}/{question['id']}") is None
    )
    assert any("tenant 'tenant-elsewhere'" in r.getMessage() for r in caplog.records)
    assert served.fake.activities() == []

    ours = served.question()
    assert await served.post(ours, served.auth.sign(served.claims(ours))) in (200, 201, 202)
    assert await served.row(ours) is not None


async def test_anonymous_mode_is_logged_loudly_when_served(candor: Candor, caplog: pytest.LogCaptureFixture) -> None:
    assert TeamsConfig().anonymous
    assert not TeamsConfig(app_id=APP_ID, app_password="secret").anonymous
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    for config, loud in ((TeamsConfig(), True), (TeamsConfig(app_id=APP_ID, app_password="secret"), False)):
        caplog.clear()
        app = web.Application()
        TeamsAdapter(config, candor, ledger, drain_seconds=1).mount(app)
        runner = web.AppRunner(app)
        with caplog.at_level(logging.WARNING, logger="candor.teams"):
            await runner.setup()
        try:
            warnings = [r for r in caplog.records if r.name == "candor.teams" and r.levelno >= logging.WARNING]
            assert bool([r for r in warnings if "WITHOUT authentication" in r.getMessage()]) is loud
        finally:
            await runner.cleanup()
