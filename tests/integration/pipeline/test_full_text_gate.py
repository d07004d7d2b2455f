"""The full-text side's gate: which query words a chunk must hold to be a full-text candidate.

A chunk must hold one of the query's two rarest words, counted in the searched knowledge base
(migration 0019). A word in no chunk the reader may search (a typo, a name the knowledge base
lacks, a word only restricted documents hold) must not take one of those two places, or the
full-text side finds nothing for a question whose other words are in the knowledge base; nor may
it make the base's own words look common in a small base.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.store.rows import Candidate


async def full_text_hits(candor: Candor, query: str, kb: KnowledgeBase, groups: tuple[str, ...] = ()) -> list[str]:
    vector = (await candor.embedder.embed([query]))[0]
    found = await candor.store.hybrid_candidates(vector, query, knowledge_bases=[kb.name], groups=groups, limit=40)
    return [_name(c) for c in sorted(found, key=lambda c: c.lexical_rank or 0) if c.lexical_rank is not None]


def _name(candidate: Candidate) -> str:
    return candidate.source.rsplit("/", 1)[-1]


@pytest.fixture
async def leave_kb(candor: Candor, kb: KnowledgeBase, docs: Path) -> KnowledgeBase:
    (docs / "leave.md").write_text("# Leave\n\nThe quillory leave allowance is 28 days a year.\n")
    (docs / "parking.md").write_text("# Parking\n\nVisitors park behind the quillory warehouse.\n")
    (docs / "board.md").write_text(
        "---\naccess: [board]\n---\n# Board\n\nThe aabrindle aacorvex minutes of the board.\n"
    )
    assert (await candor.ingestor().ingest([docs], kb=kb)).added == 3
    return kb


async def test_words_in_no_chunk_do_not_take_the_gate(candor: Candor, leave_kb: KnowledgeBase) -> None:
    # "aaazzle" and "aabzort" are in no chunk and sort before every real word: they used to be
    # the two "rarest" words, and no chunk held either
    assert await full_text_hits(candor, "aaazzle aabzort quillory allowance", leave_kb) == ["leave.md", "parking.md"]
    assert await full_text_hits(candor, "quillory allowance", leave_kb) == ["leave.md", "parking.md"]


async def test_words_only_restricted_chunks_hold_do_not_take_the_gate(candor: Candor, leave_kb: KnowledgeBase) -> None:
    query = "aabrindle aacorvex quillory"
    # a public reader: the two restricted words are in no chunk it may search, so the gate is the
    # third word, which both public documents hold
    assert sorted(await full_text_hits(candor, query, leave_kb)) == ["leave.md", "parking.md"]
    # the board: its words are the rarest it can search, and only its document holds them
    assert await full_text_hits(candor, query, leave_kb, groups=("board",)) == ["board.md"]
    # a typo among real words
    assert await full_text_hits(candor, "aaazzle leave allowance", leave_kb) == ["leave.md"]


async def test_a_rare_word_beside_a_common_one_gates_with_both(
    candor: Candor, kb: KnowledgeBase, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "zephyr" is the rarest word (4 chunks) and under the budget alone, but with "orbit" (7) the
    # two would match 10 chunks, over it: a candidate must hold both. Gating on either let a rare
    # word beside a common one rank thousands of chunks at 100k (issue 40, item 5). The budget is
    # the store's own knob, set small here so that a few documents pass it.
    for n in range(3):
        (docs / f"zephyr{n}.md").write_text(f"# Z{n}\n\nThe zephyr fan number {n} is quiet.\n")
    for n in range(6):
        (docs / f"orbit{n}.md").write_text(f"# O{n}\n\nThe orbit planner number {n} is open.\n")
    (docs / "both.md").write_text("# Both\n\nThe zephyr orbit launches on Fridays.\n")
    assert (await candor.ingestor().ingest([docs], kb=kb)).added == 10
    monkeypatch.setattr(candor.store, "lexical_budget", 5)

    async def hits(query: str) -> list[str]:
        vector = (await candor.embedder.embed([query]))[0]
        found = await candor.store.hybrid_candidates(
            vector, query, knowledge_bases=[kb.name], groups=(), limit=40, max_term_frequency=1.0
        )
        return sorted(_name(c) for c in found if c.lexical_rank is not None)

    assert await hits("zephyr orbit") == ["both.md"]
    # under the budget together (4 + 1), either word still lets a chunk in
    assert await hits("zephyr launches") == ["both.md", "zephyr0.md", "zephyr1.md", "zephyr2.md"]
