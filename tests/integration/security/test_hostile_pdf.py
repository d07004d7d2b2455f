"""A hostile PDF does not stall `candor ingest` or `candor sync` (issue 37): past its page bound, or
taking longer than its time bound to read, it is skipped by name and the rest goes on. Real Postgres,
the real embedder, the fake Confluence on 127.0.0.1 serving the PDF as a page's attachment."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import Ingestor
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence
from tests.unit.ingest.test_loaders import make_pdf

TOO_MANY_PAGES = 2001
"""One page past the default bound (`PdfBounds.max_pages`): read whole, it takes a couple of seconds."""


def many_pages() -> bytes:
    return make_pdf([[f"Appendix page {n}: nothing to see."] for n in range(1, TOO_MANY_PAGES + 1)])


def good_pdf() -> bytes:
    return make_pdf([["Returns policy", "Unworn shoes may be returned within 45 days."]])


async def test_a_pdf_past_the_page_bound_is_skipped_by_name_and_the_rest_is_ingested(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    (tmp_path / "appendix.pdf").write_bytes(many_pages())
    (tmp_path / "returns.pdf").write_bytes(good_pdf())
    report = await candor.ingestor().ingest([tmp_path], kb=kb)
    assert report.added == 1, report
    [(skipped, reason)] = report.skipped
    assert skipped == str(tmp_path / "appendix.pdf")
    assert f"{TOO_MANY_PAGES:,} pages" in reason and "at most 2,000" in reason, reason
    assert set(await candor.store.documents(kb)) == {str(tmp_path / "returns.pdf")}


async def test_a_pdf_that_reads_too_slowly_is_abandoned_within_its_time_bound(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    from rag.ingest.pdf import PdfBounds

    slow = make_pdf([[f"Line {n} of a page no one should have to read." for n in range(60_000)]])
    (tmp_path / "slow.pdf").write_bytes(slow)  # read whole: over ten seconds of pypdf
    (tmp_path / "returns.pdf").write_bytes(good_pdf())
    bounded = Ingestor(candor.store, candor.embedder, Chunker(), pdf_bounds=PdfBounds(seconds=1.0))
    started = time.monotonic()
    report = await bounded.ingest([tmp_path], kb=kb)
    assert time.monotonic() - started < 8  # the reader was stopped, not waited for
    assert report.added == 1
    [(skipped, reason)] = report.skipped
    assert skipped == str(tmp_path / "slow.pdf") and "could not be read within 1 s" in reason, reason


@pytest.fixture
def wiki(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConfluence]:
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_TOKEN", TOKEN)
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


async def test_a_synced_pdf_past_the_bound_is_named_in_the_sync_report(
    candor: Candor, kb: KnowledgeBase, wiki: FakeConfluence, tmp_path: Path
) -> None:
    wiki.attachments["att900"].data = many_pages()
    config = tmp_path / "sources.yaml"
    config.write_text(
        f"""sources:
  - name: pdf-{kb.name}
    kind: confluence
    allow_private_network: true  # the fake is on 127.0.0.1
    kb: {kb.name}
    base_url: {wiki.url}
    spaces: [ENG]
    credentials: {{email: CONFLUENCE_EMAIL, token: CONFLUENCE_TOKEN}}
"""
    )
    [report] = await candor.sync(config)
    assert report.listing_error is None and report.added > 0
    [(skipped, reason)] = report.skipped
    assert skipped == f"{wiki.url}/attachment/att900" and f"{TOO_MANY_PAGES:,} pages" in reason, reason
    assert skipped not in await candor.store.documents(kb)
