"""The dashboard's sources and documents pages with 50,000 documents in one knowledge base: latency
of each page, p50 / p95 / max, over real HTTP (issue 41: p95 ≤ 300 ms for the sources and
documents pages).

Set-up, in a fresh home with the embedded Postgres: a knowledge base of 50,000 documents (titles
and URLs of an intranet, 70% public, 20% for `staff`, 10% for `hr`, effective dates over three
years), two chunks each (100,000 chunks with a constant vector: these pages never search by
vector, so the base is made without its HNSW index, which would only slow the set-up), a synced
source holding all 50,000 (`sync_items`) with 500 recorded runs, a second source, and 5,000
answers citing 3 documents each. Then `candor serve`'s app with the dashboard on 127.0.0.1, and one
client asking each page in turn with the admin's bearer token, one request at a time (an operator),
after a warm-up.

    python benchmarks/sources_pages.py [--documents 50000] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import ClientSession, web

from bot.server import app_runner, build_app
from rag import SourceOverview
from rag.config import load_settings
from rag.runtime import Candor, open_candor

TOKEN = "benchmark-sources-pages-token"
KB = "intranet"
SOURCES_FILE = """sources:
  - name: intranet
    kind: website
    kb: intranet
    access: []
    start_urls: [https://intranet.example.com/]
    sitemap: https://intranet.example.com/sitemap.xml
  - name: handbook
    kind: website
    kb: intranet
    access: [staff]
    start_urls: [https://handbook.example.com/]
"""
TOPICS = [
    "travel",
    "expenses",
    "security",
    "onboarding",
    "payroll",
    "benefits",
    "laptops",
    "holidays",
    "vpn",
    "parking",
]


async def populate(candor: Candor, documents: int) -> tuple[int, int]:
    """The base, its documents, chunks, sources, runs and citations; (kb id, a cited document id)."""
    dimension = candor.embedder.dimension
    topics = "ARRAY[" + ", ".join(f"'{t}'" for t in TOPICS) + "]"
    async with candor.store.reading() as sql:
        kb = (
            await (
                await sql.execute(
                    "INSERT INTO knowledge_bases (name, max_authority) VALUES (%s, 3) RETURNING id", (KB,)
                )
            ).fetchone()
        )[0]
        await sql.execute(
            f"""INSERT INTO documents (kb_id, source, title, url, format, content_hash, options_hash, effective_date,
                  access_groups, chunk_count)
                SELECT %(kb)s, 'https://intranet.example.com/' || t || '/page-' || i,
                       initcap(t) || ' policy ' || i || ' (' || md5(i::text) || ')',
                       'https://intranet.example.com/' || t || '/page-' || i, 'html', md5(i::text), 'x',
                       DATE '2024-01-01' + (i %% 1095),
                       CASE WHEN i %% 10 < 7 THEN '{{}}'::text[] WHEN i %% 10 < 9 THEN '{{staff}}' ELSE '{{hr}}' END, 2
                FROM generate_series(1, %(n)s) AS i, LATERAL (SELECT ({topics})[1 + i %% 10] AS t) topic""",
            {"kb": kb, "n": documents},
        )
        await sql.execute(
            f"""INSERT INTO chunks (document_id, kb_id, position, heading_path, heading, text, text_hash, embedding)
                SELECT d.id, d.kb_id, p, ARRAY[d.title], d.title,
                       'Section ' || p || ' of ' || d.title || ': what to do, who to ask, and by when.',
                       md5(d.id::text || p), array_fill(0.05::real, ARRAY[{dimension}])::vector
                FROM documents d, generate_series(0, 1) AS p WHERE d.kb_id = %(kb)s""",
            {"kb": kb},
        )
        source = (
            await (
                await sql.execute(
                    "INSERT INTO sync_sources (name, kind, kb_id, last_started_at, last_success_at) "
                    "VALUES ('intranet', 'website', %s, now(), now()) RETURNING id",
                    (kb,),
                )
            ).fetchone()
        )[0]
        await sql.execute(
            "INSERT INTO sync_items (source_id, item_id, document_id, seen_at) "
            "SELECT %s, source, id, now() - (id %% 600) * interval '1 minute' FROM documents WHERE kb_id = %s",
            (source, kb),
        )
        await sql.execute(
            """INSERT INTO sync_runs (source, kind, kb_id, trigger, owner, status, started_at, finished_at, lease_until,
                 added, updated, unchanged, deleted, skipped, fetched, visited, known, complete)
               SELECT s, 'website', %(kb)s, 'candor sync', 'bench pid 1', 'succeeded',
                      now() - i * interval '1 hour', now() - i * interval '1 hour' + interval '3 minutes', now(),
                      i %% 7, i %% 13, %(n)s - i %% 20, i %% 3, i %% 2, i %% 20, %(n)s, %(n)s, true
               FROM generate_series(1, 500) AS i, unnest(ARRAY['intranet', 'handbook']) AS s""",
            {"kb": kb, "n": documents},
        )
        await sql.execute(
            "INSERT INTO traces (id, created_at, question, route, answer_text, answer) "
            "SELECT gen_random_uuid(), now() - i * interval '5 minutes', 'question ' || i, 'answered', 'an answer', "
            "'{}' "
            "FROM generate_series(1, 5000) AS i"
        )
        cited = (
            await (
                await sql.execute("SELECT id FROM documents WHERE kb_id = %s ORDER BY id LIMIT 1 OFFSET 100", (kb,))
            ).fetchone()
        )[0]
        await sql.execute(
            """INSERT INTO trace_sources (trace_id, n, document_id, document, title)
               SELECT t.id, n,
                      CASE WHEN n = 1 AND t.rn %% 50 = 0 THEN %(cited)s ELSE %(first)s + (t.rn * 7 + n) %% %(n)s END,
                      'doc', 'title'
               FROM (SELECT id, row_number() OVER () AS rn FROM traces) t, generate_series(1, 3) AS n""",
            {"cited": cited, "first": cited - 100, "n": documents},
        )
        await sql.execute("ANALYZE")
    return kb, cited


async def measure(http: ClientSession, path: str, requests: int) -> list[float]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for _ in range(10):  # warm-up: pools, cached plans
        async with http.get(path, headers=headers) as response:
            assert response.status == 200, (path, response.status, await response.text())
            await response.read()
    took = []
    for _ in range(requests):
        started = time.perf_counter()
        async with http.get(path, headers=headers) as response:
            await response.read()
        took.append((time.perf_counter() - started) * 1000)
    return sorted(took)


async def main(documents: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        async with open_candor(load_settings(home=home, database_url=None)) as candor:
            made = time.perf_counter()
            _, cited = await populate(candor, documents)
            print(f"set-up: {documents} documents, {2 * documents} chunks in {time.perf_counter() - made:.0f} s")
            (home / "sources.yaml").write_text(SOURCES_FILE)
            core = dataclasses.replace(
                candor, settings=candor.settings.model_copy(update={"sources": home / "sources.yaml"})
            )
            app = build_app(core, reports=core, admin_token=TOKEN, sources=SourceOverview(core))
            runner = app_runner(app, shutdown_timeout=1)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            base = f"http://127.0.0.1:{runner.addresses[0][1]}"
            pages = {
                "sources": "/dashboard/sources",
                "one source (its 20 latest runs)": "/dashboard/sources/intranet?kb=intranet",
                "documents, first page": f"/dashboard/documents?kb={KB}",
                "documents, page 900 of 1000": f"/dashboard/documents?kb={KB}&page=900",
                "documents of a source": f"/dashboard/documents?kb={KB}&source=intranet",
                "search, 5,000 matches ('travel')": f"/dashboard/documents?kb={KB}&q=travel",
                "search, 1 match (a page's URL)": f"/dashboard/documents?kb={KB}&q=vpn/page-12348",
                "search, no match": f"/dashboard/documents?kb={KB}&q=zzzz",
                "a document (2 chunks, its citing answers)": f"/dashboard/documents/{cited}",
                "knowledge bases": "/dashboard/knowledge-bases",
            }
            try:
                async with ClientSession(base) as http:
                    print(f"{'page':46} {'p50':>8} {'p95':>8} {'max':>8}  ({requests} requests each, one at a time)")
                    for name, path in pages.items():
                        took = await measure(http, path, requests)
                        p95 = took[int(0.95 * (len(took) - 1))]
                        print(f"{name:46} {statistics.median(took):6.1f}ms {p95:6.1f}ms {took[-1]:6.1f}ms")
            finally:
                await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=200)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.documents, arguments.requests))
