"""Hand-off posts link to the trace's dashboard page when CANDOR_PUBLIC_URL is set; the login returns
only to the dashboard's own pages."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.render.handoff import trace_url
from bot.slack.handoff_blocks import triage_message
from bot.teams.handoff_cards import triage_activity
from bot.web.dashboard import next_page
from rag.model.loop import Handoff

TRACE = "0b7c6a2e-1111-4a4a-9a9a-123456789abc"
HANDOFF = Handoff(
    id="5d0e9b1c-2222-4b4b-8b8b-abcdefabcdef",
    trace_id=TRACE,
    platform="slack",
    asker="U1",
    reason="abstained",
    reply_to={},
    question="<@UBOT> Where do I store my bicycle?",
    answer_text="I don't know - the knowledge base does not cover this.",
    route="abstained",
    created_at=datetime(2026, 12, 2, tzinfo=UTC),
)


def test_the_trace_url_is_made_only_with_a_public_address() -> None:
    assert trace_url(None, TRACE) is None
    assert trace_url("https://candor.example/", TRACE) == f"https://candor.example/dashboard/traces/{TRACE}"


def test_the_slack_triage_post_links_to_the_trace_when_it_can() -> None:
    url = trace_url("https://candor.example", TRACE)
    _, linked = triage_message(HANDOFF, where="<#C1>", trace_url=url)
    _, plain = triage_message(HANDOFF, where="<#C1>")
    assert f"<{url}|trace {TRACE}>" in json.dumps(linked)
    assert f"trace {TRACE}" in json.dumps(plain) and "https://" not in json.dumps(plain)
    assert "UBOT" not in json.dumps(plain)  # the mention that addressed the bot is not part of the question


def test_the_teams_triage_card_opens_the_trace_when_it_can() -> None:
    url = trace_url("https://candor.example", TRACE)
    assert {"type": "Action.OpenUrl", "url": url} in _actions(triage_activity(HANDOFF, trace_url=url))
    assert not any("dashboard/traces" in str(a) for a in _actions(triage_activity(HANDOFF)))


def test_the_login_returns_only_to_the_dashboard_s_own_pages() -> None:
    assert next_page("/dashboard/review") == "/dashboard/review"
    assert next_page(f"/dashboard/traces/{TRACE}") == f"/dashboard/traces/{TRACE}"
    assert next_page("/dashboard/answers") == "/dashboard/answers"
    for elsewhere in ("https://evil.example/", "//evil.example", "/dashboard/../etc", "/dashboard/traces/x", ""):
        assert next_page(elsewhere) == "/dashboard"


def _actions(node: object) -> list[object]:
    found: list[object] = []
    if isinstance(node, dict):
        if node.get("type") == "Action.OpenUrl":
            found.append({"type": node["type"], "url": node["url"]})
        for value in node.values():
            found.extend(_actions(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_actions(item))
    return found
