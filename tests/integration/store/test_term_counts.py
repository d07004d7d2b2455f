"""A knowledge base's answers are its own (issue 40): word counts per base, kept by the database.

Search and the reranker weigh a question's words by how many of the searched bases' chunks hold
them (`kb_terms`, `kb_chunk_counts`, migration 0019's triggers on `chunks`). These tests hold the
counts to a recount from `chunks` after every kind of write, and ask one base the same questions
before and after another base of 10,000 chunks, written in the first base's own words, arrives.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import yaml
from sqlalchemy import text

from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.store.rows import ChunkRow, DocumentRow
from tests.conftest import SAMPLE

RECOUNT = """
SELECT l.lexeme, count(*) FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS l(lexeme)
WHERE c.kb_id = %(kb)s GROUP BY l.lexeme
"""
STORED = "SELECT lexeme, chunks FROM kb_terms WHERE kb_id = %(kb)s AND chunks > 0"
CHUNKS = """
SELECT (SELECT count(*) FROM chunks WHERE kb_id = %(kb)s), (SELECT chunks FROM kb_chunk_counts WHERE kb_id = %(kb)s)
"""


async def counts(candor: Candor, kb_id: int) -> tuple[dict[str, int], dict[str, int], tuple[int, int | None]]:
    """(recounted from chunks, as stored, (chunks, stored chunk count)) for one base."""
    recount = {r[0]: int(r[1]) for r in await candor.store.fetch_all(RECOUNT, {"kb": kb_id})}
    stored = {r[0]: int(r[1]) for r in await candor.store.fetch_all(STORED, {"kb": kb_id})}
    row = (await candor.store.fetch_all(CHUNKS, {"kb": kb_id}))[0]
    return recount, stored, (int(row[0]), None if row[1] is None else int(row[1]))


async def write(candor: Candor, statement: str, kb_id: int) -> None:
    async with candor.store.engine.begin() as conn:
        await conn.execute(text(statement), {"kb": kb_id})


async def assert_counts_hold(candor: Candor, kb_id: int) -> dict[str, int]:
    recount, stored, (chunks, stored_chunks) = await counts(candor, kb_id)
    assert stored == recount
    assert stored_chunks == chunks
    return stored


async def test_counts_follow_every_write(candor: Candor, kb: KnowledgeBase, docs: Path) -> None:
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of annual leave.\n\n## Carry over\n\nUp to 5 days.\n")
    (docs / "travel.md").write_text("# Travel\n\nThe mileage rate is 0.36 per kilometre for a private car.\n")
    await candor.ingestor().ingest([docs], kb=kb)
    first = await assert_counts_hold(candor, kb.id)
    assert first["mileag"] == 1 and first["leav"] >= 1

    (docs / "travel.md").write_text("# Travel\n\nTrains are booked in standard class. Leave the car at home.\n")
    await candor.ingestor().ingest([docs], kb=kb)  # the document replaced: old chunks out, new in
    changed = await assert_counts_hold(candor, kb.id)
    assert "mileag" not in changed and changed["train"] == 1 and changed["leav"] > first["leav"]

    await write(candor, "UPDATE chunks SET embedding = embedding WHERE kb_id = :kb", kb.id)
    assert await assert_counts_hold(candor, kb.id) == changed  # a new vector changes no word

    (docs / "travel.md").unlink()
    await candor.ingestor().ingest([docs], kb=kb, prune=True)
    pruned = await assert_counts_hold(candor, kb.id)
    assert "train" not in pruned and pruned["leav"] == first["leav"]

    await write(candor, "DELETE FROM knowledge_bases WHERE id = :kb", kb.id)  # its chunks go with it
    assert await counts(candor, kb.id) == ({}, {}, (0, None))


def _asked(kb: KnowledgeBase) -> list[Question]:
    golden = yaml.safe_load((Path(SAMPLE).parent / "golden.yaml").read_text(encoding="utf-8"))
    scope = AccessScope(frozenset(), frozenset([kb.name]))
    return [Question(item["question"], scope=scope) for item in golden[:12]]


def _seen(answer: Answer) -> tuple[object, ...]:
    gates = tuple((g.gate, g.attempt, g.passed, round(g.score, 6)) for g in answer.gates)
    return answer.text, tuple(s.document for s in answer.sources), gates


async def test_another_base_does_not_change_this_bases_answers(candor: Candor) -> None:
    mine = await candor.knowledge_base(f"mine-{uuid.uuid4().hex[:8]}", create=True)
    assert mine is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=mine)).ok
    await candor.store.analyze()
    questions = _asked(mine)
    before = [_seen(await candor.answer(q)) for q in questions]
    searched = [[r.passage.chunk_id for r in await candor.rerank(q.text, q.scope)] for q in questions]

    # another team's base, 10,000 chunks drawn from the first base's own words (so that a count over
    # every base would change which of them are rare), with random vectors: nothing is embedded
    words = sorted({w for q in questions for w in q.text.lower().strip("?").split()} | {"leave", "days", "policy"})
    other = await candor.knowledge_base(f"other-{uuid.uuid4().hex[:8]}", create=True)
    assert other is not None
    rng = np.random.default_rng(40)
    dimension = len((await candor.embedder.embed(["x"]))[0])
    for d in range(100):
        rows = []
        for position in range(100):
            vector = rng.standard_normal(dimension).astype(np.float32)
            text = " ".join(rng.choice(words, size=30))
            rows.append(
                ChunkRow(
                    position, ["Other", f"Part {position}"], text, f"o{d}-{position}", vector / np.linalg.norm(vector)
                )
            )
        doc = DocumentRow(
            kb_id=other.id,
            source=f"other://{d}",
            title=f"Other {d}",
            format="txt",
            content_hash=f"o{d}",
            options_hash="t",
        )
        await candor.store.write_document(doc, rows)
    await candor.store.analyze()
    assert (await counts(candor, other.id))[2] == (10_000, 10_000)

    after = [_seen(await candor.answer(q)) for q in questions]
    assert [[r.passage.chunk_id for r in await candor.rerank(q.text, q.scope)] for q in questions] == searched
    for question, was, now in zip(questions, before, after, strict=True):
        assert now == was, question.text
