"""Each knowledge base has a vector (HNSW) and a full-text (GIN) index of its own (migrations 0012,
0013): a search in one reads only its chunks' entries, a search of several asks each one's
indexes, and a new knowledge base gets its indexes when it is created."""

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
    async with candor.store.reading() as driver:
        text_indexes = {r[0] for r in await (await driver.execute("SELECT indexname FROM pg_indexes")).fetchall()}
    assert {f"chunks_tsv_gin_kb{kb.id}" for kb in bases if kb} <= text_indexes
    assert "chunks_tsv_gin" not in text_indexes
    assert await candor.knowledge_base(names[0], create=True) == bases[0]  # again: no second index, no error

    for kb, fact in zip(bases, ("Staff get 25 days of annual leave.", "Visitors sign in at reception."), strict=True):
        folder = tmp_path / kb.name
        folder.mkdir()
        (folder / "page.md").write_text(f"# Page\n\n{fact}\n")
        assert kb is not None and (await candor.ingestor().ingest([folder], kb=kb)).added == 1

    first, second = bases
    assert first is not None and second is not None
    lexical, dense = search_statements((first.id,), (), 40, 400, ())
    both_lexical, _ = search_statements((first.id, second.id), (), 40, 400, ())
    words = {"text": "annual leave reception", "max_df": 0.5, "budget": 100}
    async with candor.store.reading() as driver:
        await driver.execute("SET enable_seqscan = off")  # a tiny table is otherwise scanned exactly
        vector = (await candor.embedder.embed(["annual leave"]))[0]
        plan = await (await driver.execute("EXPLAIN " + dense, {"vec": vector, "tsq": "", "lex_ids": []})).fetchall()
        text_plan = await (await driver.execute("EXPLAIN " + lexical, words)).fetchall()
        both_plan = await (await driver.execute("EXPLAIN " + both_lexical, words)).fetchall()
        await driver.execute("RESET enable_seqscan")
    assert f"chunks_embedding_hnsw_kb{first.id}" in "\n".join(row[0] for row in plan)
    # the full-text side reads the base's own full-text index, and a bitmap OR of both for two bases
    read = "\n".join(row[0] for row in text_plan)
    assert f"chunks_tsv_gin_kb{first.id}" in read and f"chunks_tsv_gin_kb{second.id}" not in read
    read = "\n".join(row[0] for row in both_plan)
    assert f"chunks_tsv_gin_kb{first.id}" in read and f"chunks_tsv_gin_kb{second.id}" in read
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
