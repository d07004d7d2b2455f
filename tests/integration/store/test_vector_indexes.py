"""Each knowledge base has an HNSW index of its own (migration 0012): a search in one walks only its
chunks, a search of several asks each one's index and keeps the nearest, and a new knowledge base
gets its index when it is created."""

from __future__ import annotations

import uuid
from pathlib import Path

from rag.insights.conflicts.queries import NEIGHBOURS_SQL
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.queries import HNSW_INDEXES, search_statements


async def index_names(candor: Candor) -> set[str]:
    async with candor.store.reading() as driver:
        return {row[0] for row in await (await driver.execute(HNSW_INDEXES)).fetchall()}


async def test_a_new_knowledge_base_gets_an_index_of_its_own_and_a_search_uses_it(
    candor: Candor, tmp_path: Path
) -> None:
    names = [f"idx-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    bases = [await candor.knowledge_base(name, create=True) for name in names]
    assert all(bases)
    indexes = await index_names(candor)
    assert {f"chunks_embedding_hnsw_kb{kb.id}" for kb in bases if kb} <= indexes
    assert "chunks_embedding_hnsw" not in indexes  # no graph over every chunk any more
    assert await candor.knowledge_base(names[0], create=True) == bases[0]  # again: no second index, no error

    for kb, fact in zip(bases, ("Staff get 25 days of annual leave.", "Visitors sign in at reception."), strict=True):
        folder = tmp_path / kb.name
        folder.mkdir()
        (folder / "page.md").write_text(f"# Page\n\n{fact}\n")
        assert kb is not None and (await candor.ingestor().ingest([folder], kb=kb)).added == 1

    first = bases[0]
    assert first is not None
    _, dense = search_statements((first.id,), (), 40, 400, ())
    async with candor.store.reading() as driver:
        await driver.execute("SET enable_seqscan = off")  # a tiny table is otherwise scanned exactly
        vector = (await candor.embedder.embed(["annual leave"]))[0]
        plan = await (await driver.execute("EXPLAIN " + dense, {"vec": vector, "tsq": "", "lex_ids": []})).fetchall()
        await driver.execute("RESET enable_seqscan")
    assert f"chunks_embedding_hnsw_kb{first.id}" in "\n".join(row[0] for row in plan)
    # the conflict audit's neighbour search, per chunk of a base, uses that base's index too
    async with candor.store.reading() as driver:
        await driver.execute("SET enable_seqscan = off")
        params = {"kb": first.id, "neighbours": 8, "min_cosine": 0.5}
        plan = await (await driver.execute("EXPLAIN " + NEIGHBOURS_SQL, params)).fetchall()
        await driver.execute("RESET enable_seqscan")
    assert f"chunks_embedding_hnsw_kb{first.id}" in "\n".join(row[0] for row in plan)

    (only,) = await candor.retriever.run("How much annual leave?", AccessScope.public(frozenset([names[0]])), k=5)
    assert "25 days" in only.text
    both = await candor.retriever.run("reception annual leave", AccessScope.public(frozenset(names)), k=5)
    assert {p.knowledge_base for p in both} == set(names)  # each base's index asked, the nearest kept
    everywhere = await candor.retriever.run("Where do visitors sign in?", AccessScope.public(None), k=5)
    assert any("reception" in p.text for p in everywhere)  # no scope: every base's index
