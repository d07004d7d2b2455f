"""No restricted text to anyone who should not read it, on every surface, over real HTTP.

One restricted document (the sample handbook's salary bands, access group `hr-confidential`) and one
HR person the access policy grants that group on each platform. Everyone else, and the HR person
wherever others would read the answer, asks for the salary band: no reply, no card, no page, no
home tab may carry the document's title, headings or figures. The HR person asking where only they
read the answer (a Slack DM or slash command, a Teams personal chat, the signed-in chat page) gets
the figures: the control that shows each check can fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import json
import secrets
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import text

from bot.server import build_app
from bot.slack.app import SlackAdapter
from bot.slack.config import SlackConfig
from bot.teams.app import TeamsAdapter, TeamsConfig
from bot.web.identity import AnonymousVisitors, ProxyLogin
from rag.insights.report.build import Window
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.confluence import EMAIL as CONFLUENCE_EMAIL
from tests.fakes.confluence import TOKEN as CONFLUENCE_TOKEN
from tests.fakes.confluence import FakeConfluence
from tests.fakes.gdrive import FakeDrive
from tests.fakes.graph import CLIENT_ID as GRAPH_CLIENT_ID
from tests.fakes.graph import CLIENT_SECRET as GRAPH_CLIENT_SECRET
from tests.fakes.graph import TENANT as GRAPH_TENANT
from tests.fakes.graph import FakeGraph
from tests.fakes.notion import TOKEN as NOTION_TOKEN
from tests.fakes.notion import FakeNotion
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_events import (
    app_home_opened,
    app_mention,
    command_body,
    event_callback,
    json_body,
    message,
    signed_headers,
    slash_command,
)
from tests.fakes.teams_activities import channel_mention, group_chat_mention, personal_message
from tests.fakes.teams_server import ingest_handbook
from tests.fakes.website import FakeWebsite
from tests.serving import serve_adapter

SALARY = "What is the salary band for an L3 Senior Software Engineer?"
RESTRICTED = ("£", "58,000", "Salary Bands and Severance", "Engineering salary bands", "hr-compensation-severance")
"""What the restricted document would show: its figures, title, a heading, its file name."""
SECRET = "no-leak-signing-secret"
SLACK_HR, SLACK_OTHER = "U0HRLEAD", "U0OTHER"
TEAMS_HR, TEAMS_OTHER = "29:hr-lead", "29:someone-else"
WEB_HR = "hr.lead@example.com"


def leaks(payload: object) -> list[str]:
    shown = json.dumps(payload, ensure_ascii=False)
    return [marker for marker in RESTRICTED if marker in shown]


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "no-leak")


@pytest.fixture(scope="module")
def core(candor: Candor, handbook: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory) -> Candor:
    """The HR person's own rule on each platform; every platform reads the handbook only."""
    policy = tmp_path_factory.mktemp("no-leak") / "access.yaml"
    rules = [f'- platform: {p}\n  knowledge_bases: ["{handbook.name}"]\n' for p in ("slack", "teams", "web")]
    rules += [
        f'- platform: slack\n  asker: "{SLACK_HR}"\n  groups: [hr-confidential]\n',
        f'- platform: teams\n  asker: "{TEAMS_HR}"\n  groups: [hr-confidential]\n',
        f'- platform: web\n  asker: "{WEB_HR}"\n  groups: [hr-confidential]\n',
    ]
    policy.write_text("".join(rules), encoding="utf-8")
    settings = candor.settings.model_copy(update={"access_policy": Path(policy)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)


async def test_the_command_line_reads_public_documents_without_access(core: Candor) -> None:
    passages = await core.retriever.run(SALARY, AccessScope.public(), k=20)
    assert passages and leaks([p.text for p in passages] + [p.title for p in passages]) == []
    answer = await core.answer(Question(SALARY, scope=AccessScope.public()))
    assert answer.route == "abstained" and leaks(answer.as_json()) == []
    granted = await core.answer(Question(SALARY, scope=AccessScope(frozenset({"hr-confidential"}))))
    assert "£58,000" in granted.text  # the control


# --- Slack -----------------------------------------------------------------------------------------


async def slack_post(url: str, body: bytes) -> int:
    async with aiohttp.ClientSession() as session:
        response = await session.post(f"{url}/slack/events", data=body, headers=signed_headers(SECRET, body))
        return response.status


async def test_slack_gives_the_figures_only_where_the_hr_person_alone_reads_them(core: Candor) -> None:
    async with FakeSlack() as fake:
        fake.channels["C0TEAMPRIV"] = {"is_private": True}
        fake.channels["C0SHARED"] = {"is_ext_shared": True, "is_shared": True}
        config = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
        adapter = SlackAdapter(config, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
        async with serve_adapter(core, adapter) as url:
            unauthorised = {
                "C0PUBLIC": app_mention(SALARY, user=SLACK_HR, channel="C0PUBLIC"),  # everyone reads a public channel
                "C0TEAMPRIV": app_mention(SALARY, user=SLACK_HR, channel="C0TEAMPRIV"),  # the team reads it
                "C0SHARED": app_mention(SALARY, user=SLACK_HR, channel="C0SHARED"),  # another organisation too
                "D0OTHER": message(SALARY, user=SLACK_OTHER, channel="D0OTHER"),  # not the HR person
            }
            for event in unauthorised.values():
                assert await slack_post(url, json_body(event_callback(event))) == 200
            posts = await fake.wait_for("chat.postMessage", count=len(unauthorised), timeout=60)
            assert {p.params["channel"] for p in posts} == set(unauthorised)
            other_command = slash_command(
                SALARY, user=SLACK_OTHER, channel="C0PUBLIC", response_url=fake.response_url()
            )
            assert await slack_post(url, command_body(other_command)) == 200
            (whisper,) = await fake.wait_for("response_url", timeout=60)
            assert await slack_post(url, json_body(event_callback(app_home_opened(user=SLACK_OTHER)))) == 200
            (home,) = await fake.wait_for("views.publish", timeout=30)
            for call in [*posts, whisper, home]:
                assert leaks(call.params) == [], (call.method, call.params.get("channel"))

            # the control: the HR person's DM and slash command (read by them alone) give the figures
            assert (
                await slack_post(url, json_body(event_callback(message(SALARY, user=SLACK_HR, channel="D0HR")))) == 200
            )
            hr_url = fake.response_url()  # the command's response_url reaches the HR person alone
            hr_command = slash_command(SALARY, user=SLACK_HR, channel="C0PUBLIC", response_url=hr_url)
            assert await slack_post(url, command_body(hr_command)) == 200
            dm = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR", timeout=60)
            (hr_whisper,) = await fake.wait_for("response_url", where=lambda c: c.url == hr_url, timeout=60)
            assert "£58,000" in json.dumps(dm[0].params, ensure_ascii=False)
            assert "£58,000" in json.dumps(hr_whisper.params, ensure_ascii=False)
            assert hr_whisper.params["response_type"] == "ephemeral"


# --- Teams -----------------------------------------------------------------------------------------


async def test_teams_gives_the_figures_only_in_the_hr_persons_personal_chat(core: Candor) -> None:
    async with FakeConnector() as fake:
        adapter = TeamsAdapter(
            TeamsConfig(), core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5, backoff_seconds=0.2
        )
        async with serve_adapter(core, adapter) as url, aiohttp.ClientSession() as session:
            service = fake.service_url
            unauthorised = [
                group_chat_mention(SALARY, service_url=service, user_id=TEAMS_HR),  # the group reads it
                channel_mention(SALARY, service_url=service, user_id=TEAMS_HR),  # the team reads it
                personal_message(SALARY, service_url=service, user_id=TEAMS_OTHER, conversation_id="a:other"),
            ]
            for activity in unauthorised:
                response = await session.post(f"{url}/api/messages", json=activity)
                assert response.status in (200, 201, 202)
            answers = await fake.wait_for(lambda c: c.body.get("type") == "message", count=3, timeout=60)
            for call in answers:
                assert leaks(call.body) == [], call.conversation_id

            control = personal_message(SALARY, service_url=service, user_id=TEAMS_HR, conversation_id="a:hr")
            assert (await session.post(f"{url}/api/messages", json=control)).status in (200, 201, 202)
            (granted,) = await fake.wait_for(
                lambda c: c.body.get("type") == "message" and c.conversation_id == "a:hr", timeout=60
            )
            assert "£58,000" in json.dumps(granted.body, ensure_ascii=False)


# --- the chat page and the dashboard ----------------------------------------------------------------


@pytest.fixture
async def web(core: Candor) -> AsyncIterator[tuple[TestServer, TestServer]]:
    """The anonymous page, and the page behind a sign-in proxy on 127.0.0.1 (with the dashboard)."""
    login = ProxyLogin("X-Forwarded-Email", [ipaddress.ip_network("127.0.0.1/32")])
    anonymous = TestServer(build_app(core, chat=AnonymousVisitors()), host="127.0.0.1")
    signed = TestServer(
        build_app(core, chat=login, reports=core, admin_token="a-dashboard-token-for-no-leak"), host="127.0.0.1"
    )
    await anonymous.start_server()
    await signed.start_server()
    yield anonymous, signed
    await anonymous.close()
    await signed.close()


async def ask_page(server: TestServer, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    async with aiohttp.ClientSession() as session:
        response = await session.post(server.make_url("/api/ask"), json=body, headers=headers or {})
        return response.status, await response.json()


async def test_the_chat_page_gives_the_figures_only_to_the_signed_in_hr_person(
    web: tuple[TestServer, TestServer],
) -> None:
    anonymous, signed = web
    attempts = [
        (anonymous, {"question": SALARY}, None),
        (anonymous, {"question": SALARY, "user": WEB_HR}, None),  # a body naming the HR person
        (anonymous, {"question": SALARY}, {"X-Forwarded-Email": WEB_HR}),  # no proxy here: the header is noise
        (signed, {"question": SALARY}, {"X-Forwarded-Email": "someone@example.com"}),
        (signed, {"question": SALARY}, {"X-Forwarded-User": WEB_HR}),  # not the header the proxy sets
        (signed, {"question": SALARY, "user": WEB_HR}, {"X-Forwarded-Email": "someone@example.com"}),
    ]
    for server, body, headers in attempts:
        status, reply = await ask_page(server, body, headers)
        assert status in (200, 400, 401) and leaks(reply) == [], (body, headers)
    status, granted = await ask_page(signed, {"question": SALARY}, {"X-Forwarded-Email": WEB_HR})
    assert status == 200 and "£58,000" in granted["answer"]["text"]


async def test_the_dashboard_and_health_show_nothing_without_the_token(web: tuple[TestServer, TestServer]) -> None:
    _, signed = web
    await ask_page(signed, {"question": SALARY}, {"X-Forwarded-Email": WEB_HR})  # a restricted answer in the log
    async with aiohttp.ClientSession() as session:
        for path in ("/dashboard", "/dashboard?since=30d", "/healthz"):
            response = await session.get(signed.make_url(path), allow_redirects=False)
            assert leaks(await response.text()) == [], path
        page = await session.get(signed.make_url("/dashboard"), allow_redirects=False)
        assert page.status in (401, 303) or "login" in (await page.text()).lower()
    await asyncio.sleep(0)


async def test_the_gaps_of_unauthorised_readers_are_rechecked_in_their_own_scope(
    core: Candor, handbook: KnowledgeBase
) -> None:
    """Runs after the tests above: their refused salary questions are gaps now. `candor gaps` re-checks
    each with the scope its asker had, so the evidence it shows for them is never the restricted text."""
    window = Window(
        datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC) + timedelta(minutes=1), None, handbook.name
    )
    found = await core.gaps(window, min_size=1)
    shown = json.dumps(found, ensure_ascii=False, default=str)
    assert "salary band" in shown.lower()  # the refused questions are there
    assert leaks(found) == []


# --- a synced source --------------------------------------------------------------------------------

CUSTOMS = "Who pays customs duties on orders to Switzerland?"


async def test_a_synced_restricted_site_reaches_only_its_group(core: Candor, handbook: KnowledgeBase) -> None:
    """Runs last: a website synced with `access: [hr-confidential]` into the same knowledge base. Its
    pages are as restricted as the salary bands: not to the command line without the group, not in a
    Slack channel, not in a Teams group chat; the HR person's DM and personal chat get them."""
    site = FakeWebsite().start()
    try:
        config = Path(tempfile.mkdtemp()) / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: hr-site\n    kind: website\n    kb: {handbook.name}\n"
            "    allow_private_network: true\n"  # the fake is on 127.0.0.1
            f"    sitemap: {site.url}/sitemap.xml\n    requests_per_second: 500\n    access: [hr-confidential]\n"
        )
        (report,) = await core.sync(config)
        assert report.added > 0
        # this site's pages are cited by their URL (its port is this test's alone): any of its text
        # shown would come with it. The same pages' words may come from other tests' public copies
        # in other knowledge bases, which the HR person's own rule (no knowledge-base limit) opens.
        restricted = [site.url]

        def shows(payload: object) -> list[str]:
            text = json.dumps(payload, ensure_ascii=False)
            return [marker for marker in restricted if marker in text]

        public = await core.answer(Question(CUSTOMS, scope=AccessScope.public(frozenset({handbook.name}))))
        assert shows(public.as_json()) == []
        granted = await core.answer(
            Question(CUSTOMS, scope=AccessScope(frozenset({"hr-confidential"}), frozenset({handbook.name})))
        )
        assert "8 percent" in granted.text  # the control

        async with FakeSlack() as fake:
            config_ = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
            adapter = SlackAdapter(config_, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
            async with serve_adapter(core, adapter) as url:
                channel = app_mention(CUSTOMS, user=SLACK_HR, channel="C0PUBLIC")
                assert await slack_post(url, json_body(event_callback(channel))) == 200
                (post,) = await fake.wait_for("chat.postMessage", timeout=60)
                assert shows(post.params) == []
                dm = message(CUSTOMS, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(dm))) == 200
                (hr,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR")
                assert "8 percent" in json.dumps(hr.params, ensure_ascii=False)

        async with FakeConnector() as connector:
            teams = TeamsAdapter(
                TeamsConfig(), core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5
            )
            async with serve_adapter(core, teams) as url, aiohttp.ClientSession() as session:
                group = group_chat_mention(CUSTOMS, service_url=connector.service_url, user_id=TEAMS_HR)
                assert (await session.post(f"{url}/api/messages", json=group)).status in (200, 201, 202)
                (answer,) = await connector.wait_for(lambda c: c.body.get("type") == "message", timeout=60)
                assert shows(answer.body) == []
                mine = personal_message(
                    CUSTOMS, service_url=connector.service_url, user_id=TEAMS_HR, conversation_id="a:hr-sync"
                )
                assert (await session.post(f"{url}/api/messages", json=mine)).status in (200, 201, 202)
                (own,) = await connector.wait_for(
                    lambda c: c.body.get("type") == "message" and c.conversation_id == "a:hr-sync", timeout=60
                )
                assert "8 percent" in json.dumps(own.body, ensure_ascii=False)
    finally:
        site.stop()


DIVIDEND = "What dividend did the board approve?"


async def test_a_synced_sharepoint_file_reaches_only_its_group(
    core: Candor, handbook: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs last: a SharePoint site synced into the same knowledge base, its board pack readable in
    SharePoint by an Entra group mapped to `hr-confidential` (every other file's readers are left
    unmapped, so they are readable by no one). Not to the command line without the group, not in a
    Slack channel; the HR person's DM gets it."""
    graph = FakeGraph().start()
    try:
        folder = Path(tempfile.mkdtemp())
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", graph.ca_bundle(folder))
        monkeypatch.setenv("NO_LEAK_SP_TENANT", GRAPH_TENANT)
        monkeypatch.setenv("NO_LEAK_SP_CLIENT", GRAPH_CLIENT_ID)
        monkeypatch.setenv("NO_LEAK_SP_SECRET", GRAPH_CLIENT_SECRET)
        config = folder / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: hr-sharepoint\n    kind: sharepoint\n    kb: {handbook.name}\n"
            "    allow_private_network: true\n"  # the fake is on 127.0.0.1
            f'    sites: ["{graph.hostname}:/sites/Finance"]\n    libraries: [Documents]\n'
            f"    graph_url: {graph.graph_url}\n    authority: {graph.authority}\n"
            "    permissions: {groups: {g-7f3e-lead: [hr-confidential]}}\n"
            "    credentials: {tenant_id: NO_LEAK_SP_TENANT, client_id: NO_LEAK_SP_CLIENT, "
            "client_secret: NO_LEAK_SP_SECRET}\n"
        )
        (report,) = await core.sync(config)
        assert report.ok and report.added > 0, report
        # its files are cited by their webUrl, whose host carries this fake's port: any of their
        # text shown would come with it; the dividend is in the board pack alone, in every test
        restricted = [graph.hostname, "4 cents"]

        def shows(payload: object) -> list[str]:
            text = json.dumps(payload, ensure_ascii=False)
            return [marker for marker in restricted if marker in text]

        public = await core.answer(Question(DIVIDEND, scope=AccessScope.public(frozenset({handbook.name}))))
        assert shows(public.as_json()) == []
        others = AccessScope(frozenset({"staff", "finance"}), frozenset({handbook.name}))
        assert shows((await core.answer(Question(DIVIDEND, scope=others))).as_json()) == []
        granted = await core.answer(
            Question(DIVIDEND, scope=AccessScope(frozenset({"hr-confidential"}), frozenset({handbook.name})))
        )
        assert "4 cents" in granted.text  # the control

        async with FakeSlack() as fake:
            config_ = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
            adapter = SlackAdapter(config_, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
            async with serve_adapter(core, adapter) as url:
                channel = app_mention(DIVIDEND, user=SLACK_HR, channel="C0PUBLIC")
                assert await slack_post(url, json_body(event_callback(channel))) == 200
                (post,) = await fake.wait_for("chat.postMessage", timeout=60)
                assert shows(post.params) == []
                dm = message(DIVIDEND, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(dm))) == 200
                (hr,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR")
                assert "4 cents" in json.dumps(hr.params, ensure_ascii=False)
    finally:
        graph.stop()


BONUS = "What is the annual bonus capped at?"


async def test_a_synced_notion_subtree_reaches_only_its_group(
    core: Candor, handbook: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs after the synced site: a Notion workspace synced into the same knowledge base with
    `access: []` and its People subtree restricted by `page_access: [hr-confidential]`. The bonus
    scheme, two levels below the configured page, is as restricted as the salary bands: not to the
    command line without the group, not in a Slack channel; the HR person's DM gets it."""
    notion = FakeNotion(workspace=f"acme-no-leak-{uuid.uuid4().hex[:8]}").start()
    # a figure of this test's own: other tests sync the same fake workspace into other knowledge bases,
    # some public, and an HR person's rule without a knowledge-base limit reads them all
    figure = f"{secrets.randbelow(70) + 20} percent"
    notion.edit("Bonus scheme", f"The annual bonus is capped at {figure} of salary.")
    monkeypatch.setenv("NOTION_NO_LEAK_TOKEN", NOTION_TOKEN)
    try:
        config = Path(tempfile.mkdtemp()) / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: notion-no-leak\n    kind: notion\n    kb: {handbook.name}\n    access: []\n"
            "    allow_private_network: true\n"  # the fake is on 127.0.0.1
            f"    base_url: {notion.url}\n    requests_per_second: 500\n"
            f'    page_access: {{"{notion.find("People").id}": [hr-confidential]}}\n'
            "    credentials: {token: NOTION_NO_LEAK_TOKEN}\n"
        )
        (report,) = await core.sync(config)
        assert report.added > 0 and report.ok, report
        # this workspace's pages are cited by URLs with its own slug, and the figure is its alone
        restricted = [notion.page_url(notion.find(t)) for t in ("People", "Salary bands", "Bonus scheme")]
        restricted += [figure]

        def shows(payload: object) -> list[str]:
            text = json.dumps(payload, ensure_ascii=False)
            return [marker for marker in restricted if marker in text]

        public = await core.answer(Question(BONUS, scope=AccessScope.public(frozenset({handbook.name}))))
        assert shows(public.as_json()) == []
        granted = await core.answer(
            Question(BONUS, scope=AccessScope(frozenset({"hr-confidential"}), frozenset({handbook.name})))
        )
        assert figure in granted.text, granted.text  # the control

        async with FakeSlack() as fake:
            config_ = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
            adapter = SlackAdapter(config_, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
            async with serve_adapter(core, adapter) as url:
                channel = app_mention(BONUS, user=SLACK_HR, channel="C0PUBLIC")
                assert await slack_post(url, json_body(event_callback(channel))) == 200
                (post,) = await fake.wait_for("chat.postMessage", timeout=60)
                assert shows(post.params) == []
                dm = message(BONUS, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(dm))) == 200
                (hr,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR")
                assert figure in json.dumps(hr.params, ensure_ascii=False)
    finally:
        notion.stop()


SALARY_REVIEW = "What is the 2026 salary review budget?"
BOARD = "How much did the board approve for the acquisition of Northwind Traders?"
GUEST_WIFI = "What is the guest wifi network called?"


async def test_a_synced_restricted_drive_file_reaches_only_its_group(
    core: Candor, handbook: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs last too: a Google Drive synced into the same knowledge base, its `hr-team@` group mapped to
    `hr-confidential`. The salary review shared with that group is not for the command line without the
    group nor a Slack channel; the HR person's DM gets it. The board minutes, shared only with people
    who have no mapping, reach no one, not even the HR person. No `anyone:` is mapped, so the office
    guide, which anyone with its link can open, is not public either: an unset mapping adds no one
    (as an unset `anonymous` does in a SharePoint source), never public."""
    drive = FakeDrive().start()
    monkeypatch.setenv("NO_LEAK_DRIVE_KEY", drive.key_json())
    try:
        config = Path(tempfile.mkdtemp()) / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: hr-drive\n    kind: gdrive\n    kb: {handbook.name}\n    api_url: {drive.url}\n"
            "    allow_private_network: true\n"  # the fake is on 127.0.0.1
            f"    folders: [{drive.root}]\n"
            "    permissions: {groups: {hr-team@example.com: [hr-confidential]}, domains: {example.com: [staff]}}\n"
            "    credentials: {service_account: NO_LEAK_DRIVE_KEY}\n"
        )
        (report,) = await core.sync(config)
        assert report.added > 0 and report.ok, report
        # this drive's files are cited by their links, whose ids hold this fake's own seed
        restricted = [
            drive.find("Salary review").id,
            drive.find("Board minutes").id,
            drive.find("Office guide").id,
            "4.5 percent",
            "12 million",
            "acme-lobby",
        ]

        def shows(payload: object) -> list[str]:
            text = json.dumps(payload, ensure_ascii=False)
            return [marker for marker in restricted if marker in text]

        for question in (SALARY_REVIEW, BOARD, GUEST_WIFI):
            public = await core.answer(Question(question, scope=AccessScope.public(frozenset({handbook.name}))))
            assert shows(public.as_json()) == []
            staff = await core.answer(
                Question(question, scope=AccessScope(frozenset({"staff"}), frozenset({handbook.name})))
            )
            assert shows(staff.as_json()) == []
        granted = await core.answer(
            Question(SALARY_REVIEW, scope=AccessScope(frozenset({"hr-confidential"}), frozenset({handbook.name})))
        )
        assert "4.5 percent" in granted.text  # the control

        async with FakeSlack() as fake:
            config_ = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
            adapter = SlackAdapter(config_, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
            async with serve_adapter(core, adapter) as url:
                channel = app_mention(SALARY_REVIEW, user=SLACK_HR, channel="C0PUBLIC")
                assert await slack_post(url, json_body(event_callback(channel))) == 200
                (post,) = await fake.wait_for("chat.postMessage", timeout=60)
                assert shows(post.params) == []
                dm = message(SALARY_REVIEW, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(dm))) == 200
                (hr,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR")
                assert "4.5 percent" in json.dumps(hr.params, ensure_ascii=False)
                board = message(BOARD, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(board))) == 200
                replies = await fake.wait_for(
                    "chat.postMessage", where=lambda c: c.params["channel"] == "D0HR", count=2, timeout=60
                )
                shown = json.dumps([r.params for r in replies], ensure_ascii=False)
                assert "12 million" not in shown and drive.find("Board minutes").id not in shown
    finally:
        drive.stop()


SALARY_BAND = "Where does the principal cartographer salary band start?"
"""Asked of this test's page alone (the handbook has salary bands of its own)."""


async def test_a_synced_restricted_confluence_page_reaches_only_its_group(
    core: Candor, handbook: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Confluence site synced into the same knowledge base, its `hr-managers` group mapped to
    `hr-confidential`. The salary bands page, restricted to that group, is not for the command line
    without it, a staff reader or a Slack channel; the HR person's DM gets it. The pages in the
    Managers folder, which is restricted itself, are as closed; the vault page, restricted to a group
    with no mapping, reaches no one."""
    wiki = FakeConfluence().start()
    monkeypatch.setenv("NO_LEAK_CONFLUENCE_EMAIL", CONFLUENCE_EMAIL)
    monkeypatch.setenv("NO_LEAK_CONFLUENCE_TOKEN", CONFLUENCE_TOKEN)
    # a figure of this test's own: other tests sync the same fake site into other knowledge bases
    figure = f"{secrets.randbelow(40_000) + 80_000} euros"
    wiki.edit("Salary bands", f"<p>The principal cartographer salary band starts at {figure}.</p>")
    try:
        config = Path(tempfile.mkdtemp()) / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: confluence-no-leak\n    kind: confluence\n    kb: {handbook.name}\n"
            "    allow_private_network: true\n"  # the fake is on 127.0.0.1
            f"    base_url: {wiki.url}\n    spaces: [ENG, HR]\n"
            "    permissions: {groups: {hr-managers: [hr-confidential], hr-staff: [staff]},"
            ' users: {"557058:hr-lead": [hr-confidential]}}\n'
            "    credentials: {email: NO_LEAK_CONFLUENCE_EMAIL, token: NO_LEAK_CONFLUENCE_TOKEN}\n"
        )
        (report,) = await core.sync(config)
        assert report.added > 0 and report.ok, report
        closed = ("Salary bands", "Vault rotation", "Performance reviews", "Calibration guide")  # the last two: folder
        restricted = [figure, "19 days", "every 9 months", *(wiki.page_url(wiki.find(t).id) for t in closed)]

        def shows(payload: object) -> list[str]:
            text = json.dumps(payload, ensure_ascii=False)
            return [marker for marker in restricted if marker in text]

        vault = "How often do the database vault credentials rotate?"
        for groups in ((), ("staff",), ("staff", "sre-team")):
            for question in (SALARY_BAND, vault, "How often do performance reviews take place?"):
                scope = AccessScope(frozenset(groups), frozenset({handbook.name}))
                assert shows((await core.answer(Question(question, scope=scope))).as_json()) == [], (groups, question)
        everyone = AccessScope(frozenset({"hr-confidential", "staff", "sre-team"}), frozenset({handbook.name}))
        assert "19 days" not in (await core.answer(Question(vault, scope=everyone))).text  # no one's
        granted = await core.answer(
            Question(SALARY_BAND, scope=AccessScope(frozenset({"hr-confidential"}), frozenset({handbook.name})))
        )
        assert figure in granted.text, granted.text  # the control

        async with FakeSlack() as fake:
            config_ = SlackConfig(bot_token="xoxb-no-leak", signing_secret=SECRET, api_url=fake.api_url)
            adapter = SlackAdapter(config_, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
            async with serve_adapter(core, adapter) as url:
                channel = app_mention(SALARY_BAND, user=SLACK_HR, channel="C0PUBLIC")
                assert await slack_post(url, json_body(event_callback(channel))) == 200
                (post,) = await fake.wait_for("chat.postMessage", timeout=60)
                assert shows(post.params) == []
                dm = message(SALARY_BAND, user=SLACK_HR, channel="D0HR")
                assert await slack_post(url, json_body(event_callback(dm))) == 200
                (hr,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0HR")
                assert figure in json.dumps(hr.params, ensure_ascii=False)
    finally:
        wiki.stop()


async def test_a_synced_site_whose_sitemap_leaves_the_site_brings_nothing_from_elsewhere(
    core: Candor, handbook: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restricted site with credentials whose sitemap index lists a sitemap on another host (here
    127.0.0.3, a recording server): nothing is asked of it, its secret goes nowhere, and nothing from
    it is stored for anyone to be answered from."""
    from tests.integration.security.test_network_guard import Server, Site, recorder_answer, serving

    monkeypatch.setenv("NO_LEAK_SITE_AUTH", "Bearer no-leak-site-secret")
    made = Site()
    made.server = Server(made.answer)
    async with serving(made.server, "127.0.0.1") as site, serving(Server(recorder_answer), "127.0.0.3") as elsewhere:
        made.elsewhere = [f"{elsewhere.url}/stolen.xml"]
        config = Path(tempfile.mkdtemp()) / "sources.yaml"
        config.write_text(
            f"sources:\n  - name: hr-site-leaving\n    kind: website\n    kb: {handbook.name}\n"
            "    allow_private_network: [127.0.0.1/32]\n"  # the site's fake; 127.0.0.3 stays refused as well
            f"    sitemap: {site.url}/sitemap.xml\n    requests_per_second: 500\n    access: [hr-confidential]\n"
            "    credentials: {authorization: NO_LEAK_SITE_AUTH}\n"
        )
        (report,) = await core.sync(config)
        assert report.added == 2  # the site's own two pages
        assert elsewhere.seen == []  # no request, so no secret either
    async with core.store.engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT count(*) FROM documents WHERE source LIKE '%127.0.0.3%'"))
        ).scalar_one()
    assert stored == 0
    granted = await core.answer(
        Question("Planted text from elsewhere?", scope=AccessScope(frozenset({"hr-confidential"}), None))
    )
    assert "127.0.0.3" not in json.dumps(granted.as_json())
