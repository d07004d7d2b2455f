"""The review queue (`/dashboard/review`) in headless Chromium: a reviewer logs in, labels a sample of
answers with the keyboard, one key per sentence and per abstention, and the labels are in Postgres and
in the report's people's rates at once. Real server, real pipeline answers (moved to April 2019, a
month no other test uses), real browser over the DevTools protocol."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from rag.insights.report.build import report_window
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from tests.browser import Chromium
from tests.conftest import SAMPLE
from tests.integration.web.test_dashboard import TOKEN, bearer, served

APRIL = datetime(2019, 4, 8, 9, tzinfo=UTC)
ANSWERED = [
    "How much paid parental leave does the primary carer get?",
    "How many days of paid sick leave do employees get each year?",
]
REFUSED = "Where do I store my bicycle at the office?"


async def seeded(candor: Candor) -> tuple[str, list[Answer]]:
    kb = await candor.knowledge_base(f"review-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None and (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    scope = AccessScope(frozenset(), frozenset([kb.name]))
    answers = [await candor.answer(Question(q, scope=scope)) for q in [*ANSWERED, REFUSED]]
    assert [a.route for a in answers] == ["answered", "answered", "abstained"], [a.text for a in answers]
    async with candor.store.engine.begin() as conn:
        for n, answer in enumerate(answers):
            moved = {"at": APRIL + timedelta(hours=n), "id": answer.trace_id}
            await conn.execute(text("UPDATE traces SET created_at = :at WHERE id = :id"), moved)
    return kb.name, answers


async def labels_of(candor: Candor, trace_ids: list[str]) -> list[dict[str, Any]]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT trace_id::text AS trace_id, position, part, label, labeller FROM human_labels "
                "WHERE trace_id = ANY(CAST(:ids AS uuid[])) ORDER BY trace_id, position"
            ),
            {"ids": trace_ids},
        )
        return [dict(r) for r in rows.mappings()]


async def test_a_reviewer_labels_the_sample_with_the_keyboard_and_the_report_counts_it(
    candor: Candor, tmp_path: Path
) -> None:
    kb, answers = await seeded(candor)
    window = f"since=2019-04-01&until=2019-05-01&kb={kb}"
    sentences = sum(len(a.sentences) for a in answers[:2])
    async with served(candor) as client, await Chromium.start(tmp_path) as browser:
        base = str(client._base_url).rstrip("/")
        await browser.goto(f"{base}/dashboard/review?{window}")
        # not logged in: the login form, which returns here
        assert await browser.evaluate("document.querySelector('input[name=next]').value") == "/dashboard/review"
        await browser.evaluate(f"document.getElementById('token').value = {json.dumps(TOKEN)}")
        await browser.evaluate("document.querySelector('form').submit()")
        await browser.wait_until_loaded()
        await browser.wait_for("document.querySelector('.item') !== null")
        assert await browser.evaluate("location.pathname") == "/dashboard/review"

        # no name yet: the key asks for one and nothing is stored
        await browser.press("s")
        assert "name first" in await browser.wait_for("document.getElementById('status').textContent")
        assert await labels_of(candor, [a.trace_id for a in answers]) == []
        await browser.evaluate("document.getElementById('labeller').focus()")
        await browser.type("Rita")
        await browser.press("Enter")

        # the first answer: each sentence shown beside the passage it cites
        first = await browser.evaluate("document.querySelector('.item').dataset.trace")
        shown = await browser.evaluate("document.querySelector('.row.current').innerText")
        cited = next(a for a in answers if a.trace_id == first)
        assert cited.sentences[0].text in shown and cited.sources[0].excerpt[:40] in shown

        # every sentence: supported, except the first, partly; every abstention: the documents did answer it
        for press in range(sentences + 1):
            kind = await browser.evaluate("document.querySelector('.item').classList[1]")
            key = "w" if kind == "abstention" else ("p" if press == 0 else "s")
            await browser.press(key)
            await browser.wait_for(f"document.getElementById('progress').textContent.includes('{press + 1} labels')")
        assert f"{len(answers)} done" in await browser.evaluate("document.getElementById('progress').textContent")

    stored = await labels_of(candor, [a.trace_id for a in answers])
    assert len(stored) == sentences + 1 and {row["labeller"] for row in stored} == {"Rita"}
    assert sorted(row["label"] for row in stored) == sorted(
        ["partly", "wrong_abstention"] + ["supported"] * (sentences - 1)
    )
    refusal = next(row for row in stored if row["position"] is None)
    assert (refusal["trace_id"], refusal["part"], refusal["label"]) == (answers[2].trace_id, None, "wrong_abstention")

    report = await candor.report(report_window("2019-04-01", "2019-05-01", kb=kb))
    people = report["total"]["human"]
    assert people["hallucination_rate"]["sample_size"] == sentences
    assert people["hallucination_rate"]["n"] == 1 and people["hallucination_rate"]["partly"] == 1
    assert people["wrong_abstention"]["n"] == 1 and people["wrong_abstention"]["sample_size"] == 1


async def test_labels_are_checked_and_refused_from_another_site(candor: Candor) -> None:
    kb, answers = await seeded(candor)
    async with served(candor) as client:
        items = await client.get(f"/dashboard/review/items?since=2019-04-01&until=2019-05-01&kb={kb}", headers=bearer())
        assert items.status == 200
        queue = await items.json()
        assert {a["trace_id"] for a in queue["answers"]} >= {a.trace_id for a in answers[:2]}
        label = {"kind": "sentence", "trace_id": answers[0].trace_id, "position": 0, "label": "supported"}
        cross = await client.post(
            "/dashboard/review/labels",
            json={**label, "labeller": "Eve"},
            headers={**bearer(), "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        )
        assert cross.status == 403
        wrong = await client.post(
            "/dashboard/review/labels", json={**label, "position": 99, "labeller": "Rita"}, headers=bearer()
        )
        assert wrong.status == 400 and "no delivered sentence at position" in (await wrong.json())["error"]
        odd = await client.post(
            "/dashboard/review/labels", json={**label, "label": "maybe", "labeller": "Rita"}, headers=bearer()
        )
        assert odd.status == 400 and "is not one of supported, unsupported, partly" in (await odd.json())["error"]
        anonymous = await client.post("/dashboard/review/labels", json={**label, "labeller": "Rita"})
        assert anonymous.status == 401
        bad_window = await client.get("/dashboard/review/items?since=yesterday", headers=bearer())
        assert bad_window.status == 400
    assert await labels_of(candor, [a.trace_id for a in answers]) == []
