"""The conflict audit's pure parts: naming the subject and attribute, the newer side, grouping found
differences into document pairs, and the text renderer (all without a database)."""

from __future__ import annotations

from datetime import date

import numpy as np

from bot.render.audit_text import render_conflict_audit
from rag.insights.conflicts.audit import Found, compare_pairs, facts_by_chunk, group_by_documents
from rag.insights.conflicts.findings import ConflictAudit, attribute_of, newer_of, subject_of
from rag.insights.conflicts.queries import ChunkPair, unordered_pairs
from rag.model.types import Passage


def passage(chunk: int, document: int, source: str, when: date | None, authority: int = 1) -> Passage:
    return Passage(
        chunk_id=chunk,
        document_id=document,
        document=source,
        title=source.removesuffix(".md").title(),
        heading="Limits",
        text="",
        score=0.0,
        dense_score=None,
        lexical_score=None,
        effective_date=when,
        authority=authority,
    )


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_newer_side() -> None:
    assert newer_of(date(2026, 1, 1), date(2024, 3, 15)) == "first"
    assert newer_of(date(2024, 3, 15), date(2026, 1, 1)) == "second"
    assert newer_of(date(2025, 6, 1), date(2025, 6, 1)) == "same date"
    assert newer_of(None, date(2025, 6, 1)) == "undated"
    assert newer_of(None, None) == "undated"


def test_subject_is_the_shared_name_with_its_kind() -> None:
    a = "The Team plan costs $15 per user per month on monthly billing."
    b = "The Team plan costs $12 per user per month when billed monthly."
    assert subject_of(a, b) == "Team plan"
    assert subject_of("The NW-200 collector supports 250 hosts.", "The NW-200 collector supports 300 hosts.") == (
        "NW-200 collector"
    )


def test_subject_without_names_is_the_shared_words() -> None:
    a = "Full-time employees receive 24 days of paid annual leave per calendar year."
    b = "Full-time employees receive 20 days of paid annual leave per calendar year."
    assert subject_of(a, b) == "full-time employees receive paid annual leave calendar year"


def test_attribute_names_the_kind_and_variant() -> None:
    assert attribute_of("$15", "The Team plan costs $15 per month on monthly billing.") == "amount ($), monthly"
    assert attribute_of("14 days", "Snapshots are kept for 14 days.") == "number of days"
    assert attribute_of("500 GB", "An account stores up to 500 GB.") == "amount in GB"
    assert attribute_of("1 March 2026", "It applies from 1 March 2026.") == "date"


def test_a_neighbour_found_from_both_sides_is_one_pair() -> None:
    pairs = unordered_pairs([(7, 3, 0.8), (3, 7, 0.81), (1, 2, 0.9)])
    assert pairs == [ChunkPair(1, 2, 0.9), ChunkPair(3, 7, 0.81)]


def test_differences_are_grouped_per_document_pair_preferred_first() -> None:
    old = passage(1, 10, "faq.md", date(2024, 1, 1), authority=3)
    new = passage(2, 20, "policy.md", date(2026, 1, 1), authority=1)
    same = unit(1)
    facts = facts_by_chunk(
        [
            (old, 0, "Employees receive 20 days of paid annual leave per year.", same),
            (new, 0, "Employees receive 24 days of paid annual leave per year.", same),
        ]
    )
    found, compared = compare_pairs([ChunkPair(1, 2, 0.7)], facts)
    assert compared == 1 and len(found) == 1
    (pair,) = group_by_documents(found)
    assert (pair.first.source, pair.second.source) == ("policy.md", "faq.md")
    assert pair.newer == "first" and pair.preferred == "first" and pair.similarity == 0.7
    assert [(d.first.value, d.second.value) for d in pair.differences] == [("24 days", "20 days")]


def test_a_repeated_difference_is_listed_once() -> None:
    old = passage(1, 10, "a.md", None)
    new = passage(2, 20, "b.md", None)
    first = facts_by_chunk([(old, 0, "The Orca API allows 100 requests per minute.", unit(2))])[1][0]
    second = facts_by_chunk([(new, 0, "The Orca API allows 120 requests per minute.", unit(2))])[2][0]
    found = [
        Found(first, second, "100 requests", "120 requests", 0.6),
        Found(second, first, "120 requests", "100 requests", 0.9),
    ]
    (pair,) = group_by_documents(found)
    assert pair.newer == "undated" and pair.preferred is None  # same (no) date, same authority
    assert (pair.first.source, pair.second.source) == ("a.md", "b.md")  # by path when neither is preferred
    assert len(pair.differences) == 1 and pair.similarity == 0.9


def test_different_names_are_different_subjects() -> None:
    team = passage(1, 10, "team.md", date(2025, 1, 1))
    plus = passage(2, 20, "team-plus.md", date(2026, 1, 1))
    same = unit(3)
    facts = facts_by_chunk(
        [
            (team, 0, "The Team plan supports up to 50 users.", same),
            (plus, 0, "The Team Plus plan supports up to 80 users.", same),
        ]
    )
    found, compared = compare_pairs([ChunkPair(1, 2, 0.9)], facts)
    assert compared == 1 and found == []


def test_render_without_findings() -> None:
    audit = ConflictAudit("handbook", documents=3, chunks=9, chunk_pairs=4, sentence_pairs=2, pairs=())
    rendered = render_conflict_audit(audit)
    assert rendered.startswith('Conflict audit of knowledge base "handbook": 3 documents, 9 chunks;')
    assert rendered.endswith("No two documents give different values for the same thing.\n")


def test_render_names_both_documents_values_and_sentences() -> None:
    old = passage(1, 10, "a.md", None)
    new = passage(2, 20, "b.md", None)
    first = facts_by_chunk([(old, 0, "The Orca API allows 100 requests per minute.", unit(4))])[1][0]
    second = facts_by_chunk([(new, 0, "The Orca API allows 120 requests per minute.", unit(4))])[2][0]
    pairs = group_by_documents([Found(first, second, "100 requests", "120 requests", 0.8)])
    rendered = render_conflict_audit(ConflictAudit("kb", 2, 2, 1, 1, pairs))
    lines = rendered.splitlines()
    assert "1 document pair disagrees:" in lines
    assert "1. A  vs  B" in lines
    assert "   [1] A: a.md" in lines and "       no effective date, authority 1" in lines
    assert "   newer: undated (cannot tell)" in lines
    assert "   preferred: neither: same date and authority: neither source is preferred" in lines
    assert "   - Orca API (number of requests): 100 requests [1] vs 120 requests [2]" in lines
    assert '       [2] "The Orca API allows 120 requests per minute."  (Limits)' in lines
