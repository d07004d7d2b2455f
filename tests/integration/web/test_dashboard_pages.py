"""The dashboard's trace page and curated answers page over real HTTP, on the real core and Postgres:
what a hand-off links to, and where curated answers are edited, expired and removed."""

from __future__ import annotations

import uuid

from rag.model.answers import Question
from rag.model.loop import CuratedDraft
from rag.model.types import AccessScope
from rag.runtime import Candor
from tests.conftest import SAMPLE
from tests.integration.web.test_dashboard import bearer, served

QUESTION = "Where do I store my bicycle at the office?"


async def test_a_trace_page_shows_the_answer_its_gates_and_what_happened_next(candor: Candor) -> None:
    kb = await candor.knowledge_base(f"pages-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None and (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    answer = await candor.answer(Question(QUESTION, scope=AccessScope(frozenset(), frozenset([kb.name]))))
    handoff, _ = await candor.loop.hand_off(
        answer.trace_id, platform="slack", asker="U1", reason="abstained", reply_to={}
    )
    await candor.loop.reply_to_handoff(
        handoff.id, "In the <b>bike room</b> by the loading bay.", by="U9", by_name="Ana"
    )
    kept = await candor.loop.curate(
        CuratedDraft(QUESTION, "In the bike room by the loading bay.", "U9", "Ana", handoff_id=handoff.id), kb=kb.name
    )
    async with served(candor) as http:
        page = await http.get(f"/dashboard/traces/{answer.trace_id}", headers=bearer())
        body = await page.text()
        assert page.status == 200 and "script-src" not in page.headers["Content-Security-Policy"]
        assert QUESTION in body and "abstained" in body and "retrieval" in body  # the gate that refused
        assert "Handed to a person" in body and "replied by Ana" in body
        assert "In the &lt;b&gt;bike room&lt;/b&gt;" in body  # escaped, never markup
        assert f"#{kept.id} by Ana" in body

        unknown = await http.get(f"/dashboard/traces/{uuid.uuid4()}", headers=bearer())
        assert unknown.status == 404
        odd = await http.get("/dashboard/traces/not-a-trace", headers=bearer())
        assert odd.status == 404
        login = await http.get(f"/dashboard/traces/{answer.trace_id}")
        assert login.status == 401 and f'name="next" value="/dashboard/traces/{answer.trace_id}"' in await login.text()


async def test_curated_answers_are_edited_expired_and_removed_from_the_dashboard(candor: Candor) -> None:
    kb = await candor.knowledge_base(f"pages-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    kept = await candor.loop.curate(
        CuratedDraft("Who waters the plants?", "The facilities team, on Tuesdays.", "hr", "Hana"), kb=kb.name
    )
    async with served(candor) as http:
        listed = await http.get("/dashboard/answers", headers=bearer())
        assert listed.status == 200 and "The facilities team, on Tuesdays." in await listed.text()
        same_site = {**bearer(), "Origin": str(http._base_url).rstrip("/"), "Sec-Fetch-Site": "same-origin"}
        url = f"/dashboard/answers/{kept.id}"

        edited = await http.post(
            url,
            data={"action": "edit", "question": "Who waters the plants?", "answer": "Marta, on Fridays."},
            headers=same_site,
            allow_redirects=False,
        )
        assert edited.status == 303 and edited.headers["Location"] == "/dashboard/answers?done=edited"
        assert (await candor.loop.curated.get(kept.id)).answer == "Marta, on Fridays."

        empty = await http.post(
            url, data={"action": "edit", "question": "Who?", "answer": " "}, headers=same_site, allow_redirects=False
        )
        assert empty.status == 303 and "error=" in empty.headers["Location"]
        shown = await (await http.get(empty.headers["Location"], headers=bearer())).text()
        assert "was not saved: a curated answer needs its answer" in shown
        assert (await candor.loop.curated.get(kept.id)).answer == "Marta, on Fridays."

        cross = await http.post(
            url,
            data={"action": "remove"},
            headers={**bearer(), "Origin": "https://evil.example"},
            allow_redirects=False,
        )
        assert cross.status == 403

        expired = await http.post(url, data={"action": "expire"}, headers=same_site, allow_redirects=False)
        assert expired.status == 303
        assert (await candor.loop.curated.get(kept.id)).document_id is None
        live = await (await http.get("/dashboard/answers", headers=bearer())).text()
        every = await (await http.get("/dashboard/answers?all=1", headers=bearer())).text()
        assert f"#{kept.id} " not in live and f"#{kept.id} expired" in every

        removed = await http.post(url, data={"action": "remove"}, headers=same_site, allow_redirects=False)
        assert removed.status == 303
        gone = await http.post(url, data={"action": "remove"}, headers=same_site, allow_redirects=False)
        assert gone.status == 404
