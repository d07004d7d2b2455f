"""Access and knowledge-base scoping of hybrid retrieval, on the real database and embedder.

A restricted passage must never reach a scope without its group, whether the dense side or the
full-text side found it; a knowledge-base scope must never let another base's passage through.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rag.errors import RetrievalError
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase

SECRET_WORD = "zorblaxian"

RESTRICTED_MD = f"""---
title: Director Pay Bands
access: [hr-confidential]
---
# Director pay bands

The {SECRET_WORD} salary bands for directors range from 120k to 180k euros.
"""


@pytest.fixture
async def hr_kb(candor: Candor, kb: KnowledgeBase, docs: Path) -> KnowledgeBase:
    (docs / "restricted.md").write_text(RESTRICTED_MD)
    (docs / "reviews.md").write_text("# Salary reviews\n\nSalary reviews happen every April for all employees.\n")
    (docs / "canteen.txt").write_text("Canteen\n\nThe canteen serves lunch from noon until two.\n")
    report = await candor.ingestor().ingest([docs], kb=kb)
    assert (report.added, report.ok) == (3, True)
    return kb


def restricted(passages: list[Passage]) -> list[Passage]:
    return [p for p in passages if p.document.endswith("restricted.md") or SECRET_WORD in p.text.lower()]


@pytest.mark.parametrize(
    "groups", [frozenset(), frozenset({"finance"}), frozenset({"hr"}), frozenset({"hr-confidential-x"})]
)
@pytest.mark.parametrize("whole_database", [False, True])
async def test_restricted_passage_is_invisible_without_the_group(
    candor: Candor, hr_kb: KnowledgeBase, groups: frozenset[str], whole_database: bool
) -> None:
    scope = AccessScope(groups=groups, knowledge_bases=None if whole_database else frozenset({hr_kb.name}))
    for query in (SECRET_WORD, f"What are the {SECRET_WORD} salary bands for directors?"):
        passages = await candor.retriever.run(query, scope, k=10)
        assert restricted(passages) == [], query
        assert all(scope.can_read(p.access_groups) for p in passages)
        lexical_hits = [p for p in passages if p.lexical_score]
        assert restricted(lexical_hits) == []
        if not whole_database:
            # The public salary document is still found: filtering hides, it does not break search.
            assert any(p.document.endswith("reviews.md") for p in passages), query


async def test_full_text_side_is_filtered_too(candor: Candor, hr_kb: KnowledgeBase) -> None:
    """At the store level: with the group the word is a full-text hit; without it, no candidate at all."""
    vector = (await candor.embedder.embed([SECRET_WORD]))[0]
    kbs = [hr_kb.name]
    allowed = await candor.store.hybrid_candidates(
        vector, SECRET_WORD, knowledge_bases=kbs, groups=["hr-confidential"], limit=40
    )
    hits = [c for c in allowed if c.lexical_rank is not None]
    assert [c.source.rsplit("/", 1)[-1] for c in hits] == ["restricted.md"]
    assert hits[0].lexical_rank == 1 and hits[0].lexical > 0

    denied = await candor.store.hybrid_candidates(vector, SECRET_WORD, knowledge_bases=kbs, groups=[], limit=40)
    assert denied, "the public documents are still candidates on the dense side"
    assert all(c.lexical_rank is None and c.lexical == 0 for c in denied)
    assert all(c.access_groups == () and not c.source.endswith("restricted.md") for c in denied)


async def test_restricted_passage_comes_first_with_the_group(candor: Candor, hr_kb: KnowledgeBase) -> None:
    scope = AccessScope(groups=frozenset({"hr-confidential", "staff"}), knowledge_bases=frozenset({hr_kb.name}))
    passages = await candor.retriever.run(SECRET_WORD, scope, k=3)
    assert passages[0].document.endswith("restricted.md")
    assert passages[0].access_groups == ("hr-confidential",)
    assert SECRET_WORD in passages[0].text
    assert passages[0].lexical_score is not None and passages[0].lexical_score > 0


async def test_access_given_at_ingest_restricts_the_folder(candor: Candor, kb: KnowledgeBase, tmp_path: Path) -> None:
    staff = tmp_path / "staff"
    staff.mkdir()
    plain = staff / "badge.md"
    plain.write_text("# Badges\n\nThe quintaphore badge opens the loading dock.\n")
    empty_access = staff / "alarm.md"
    empty_access.write_text("---\ntitle: Alarm\naccess: []\n---\nThe velmorian alarm code is changed monthly.\n")
    own_group = staff / "board.md"
    own_group.write_text("---\naccess: [board]\n---\nThe trellibond minutes are kept by the secretary.\n")
    public = tmp_path / "public"
    public.mkdir()
    (public / "lobby.md").write_text("# Lobby\n\nThe lobby is open to visitors from eight.\n")
    ingestor = candor.ingestor()
    first = await ingestor.ingest([staff], kb=kb, access=["staff"])
    # a file cannot give itself a group the run did not give the folder: refused, named, never public
    assert first.added == 2 and [Path(p) for p, _ in first.skipped] == [own_group]
    assert "names a group --access did not give" in first.skipped[0][1] and "['board']" in first.skipped[0][1]
    # given both, the board minutes choose the board among them
    assert (await ingestor.ingest([own_group], kb=kb, access=["staff", "board"])).added == 1
    assert (await ingestor.ingest([public], kb=kb)).added == 1

    kbs = frozenset({kb.name})
    public_scope = AccessScope.public(kbs)
    staff_scope = AccessScope(groups=frozenset({"staff"}), knowledge_bases=kbs)
    board_scope = AccessScope(groups=frozenset({"board"}), knowledge_bases=kbs)
    cases = [
        ("quintaphore", plain, ("staff",)),
        ("velmorian", empty_access, ("staff",)),
        ("trellibond", own_group, ("board",)),
    ]
    for word, path, groups in cases:
        hidden = await candor.retriever.run(word, public_scope, k=10)
        assert all(p.document != str(path) for p in hidden), word
        assert all(p.access_groups == () for p in hidden), word
        reader = board_scope if groups == ("board",) else staff_scope
        shown = await candor.retriever.run(word, reader, k=3)
        assert (shown[0].document, shown[0].access_groups) == (str(path), groups), word
    # The document's own choice among the given groups: the board minutes are not for all staff.
    as_staff = await candor.retriever.run("trellibond", staff_scope, k=10)
    assert all(p.document != str(own_group) for p in as_staff)
    lobby = await candor.retriever.run("When is the lobby open?", public_scope, k=1)
    assert lobby[0].document == str(public / "lobby.md")


async def test_knowledge_base_scope_excludes_other_bases(candor: Candor, kb: KnowledgeBase, tmp_path: Path) -> None:
    other = await candor.knowledge_base(f"kb-{uuid.uuid4().hex[:10]}", create=True)
    assert other is not None
    shared, mine, theirs = tmp_path / "shared", tmp_path / "mine", tmp_path / "theirs"
    for folder in (shared, mine, theirs):
        folder.mkdir()
    (shared / "wifi.md").write_text("# Wi-Fi\n\nThe guest wi-fi password is rotated every Monday.\n")
    (mine / "mine.md").write_text("# Archive\n\nThe brasselwick archive is in room 12.\n")
    (theirs / "theirs.md").write_text("# Archive\n\nThe snorkelbay archive is in room 40.\n")
    ingestor = candor.ingestor()
    assert (await ingestor.ingest([shared, mine], kb=kb)).added == 2
    assert (await ingestor.ingest([shared, theirs], kb=other)).added == 2

    only_mine = AccessScope(knowledge_bases=frozenset({kb.name}))
    for query in ("snorkelbay", "How often is the guest wi-fi password rotated?", "Where is the archive?"):
        passages = await candor.retriever.run(query, only_mine, k=10)
        assert passages, query
        assert {p.knowledge_base for p in passages} == {kb.name}, query
        assert all("snorkelbay" not in p.text for p in passages), query
    wifi = await candor.retriever.run("How often is the guest wi-fi password rotated?", only_mine, k=10)
    assert [p.document for p in wifi].count(str(shared / "wifi.md")) == 1

    both = AccessScope(knowledge_bases=frozenset({kb.name, other.name}))
    found = await candor.retriever.run("snorkelbay", both, k=1)
    assert (found[0].knowledge_base, found[0].document) == (other.name, str(theirs / "theirs.md"))
    nothing = await candor.retriever.run("snorkelbay", AccessScope(knowledge_bases=frozenset()), k=5)
    assert nothing == []


@pytest.mark.parametrize("query", ["", "   \n\t ", "x" * 5000, "word " * 1000])
async def test_invalid_queries_are_rejected(candor: Candor, query: str) -> None:
    with pytest.raises(RetrievalError):
        await candor.retriever.run(query, AccessScope())


async def test_invalid_k_is_rejected(candor: Candor) -> None:
    with pytest.raises(RetrievalError, match="k must be at least 1"):
        await candor.retriever.run("annual leave", AccessScope(), k=0)
