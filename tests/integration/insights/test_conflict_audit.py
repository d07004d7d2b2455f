"""`candor audit conflicts` on the real embedded Postgres: the sample handbook and documents planted here.

The sample's planted dated conflicts (golden.yaml's `conflict` entries) must be found with their
values, sentences, dates and newer side; its look-alikes (sample/README.md, "Planted traps" 4 and
5: Beacon vs Beacon Pro, the plans' different limits, monthly vs annual prices, the onboarding
guide's passing mention of the Business plan) must not. Expected dates come from the stored
document rows, expected values from the golden file.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.render.audit_text import render_conflict_audit
from rag.insights.conflicts.audit import ConflictAudit, audit_conflicts
from rag.insights.conflicts.findings import ConflictPair
from rag.insights.evaluation.golden import GoldenConflict, load_golden
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from rag.text.facts import values, variant_qualifiers
from tests import cli
from tests.conftest import REPO, SAMPLE

PLANTED = [item.conflict for item in load_golden(REPO / "sample" / "golden.yaml") if item.conflict is not None]
LOOK_ALIKES = [
    ("beacon-spec", "beacon-pro-spec"),  # trap 4: two products, different limits
    ("price-list-2026", "onboarding-guide"),  # trap 5: a plan mentioned in passing
    ("price-list-2026", "support-sla"),  # the same plans, different facts about them
    ("price-list-2026", "beacon-spec"),
    ("price-list-2026", "beacon-pro-spec"),
    ("announcement-team-plan-2025", "onboarding-guide"),
]


def stem(document: str) -> str:
    return Path(document).stem


def stems(pair: ConflictPair) -> tuple[str, str]:
    return stem(pair.first.source), stem(pair.second.source)


def value_key(surface: str) -> tuple[str, str]:
    found = values(surface)
    assert len(found) == 1, surface
    return found[0].key


@pytest.fixture(scope="module")
async def sample_kb(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"audit-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    return kb


@pytest.fixture(scope="module")
async def sample_audit(candor: Candor, sample_kb: KnowledgeBase) -> ConflictAudit:
    return await audit_conflicts(candor.store, candor.embedder, sample_kb)


async def stored_dates(candor: Candor, kb: KnowledgeBase) -> dict[str, object]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(text("SELECT source, effective_date FROM documents WHERE kb_id = :kb"), {"kb": kb.id})
        return {stem(row.source): row.effective_date for row in rows}


def test_the_sample_has_planted_conflicts_to_find() -> None:
    assert len(PLANTED) == 3


@pytest.mark.parametrize("planted", PLANTED, ids=lambda c: f"{c.preferred_source}-vs-{c.stale_source}")
async def test_every_planted_conflict_is_found(
    candor: Candor, sample_kb: KnowledgeBase, sample_audit: ConflictAudit, planted: GoldenConflict
) -> None:
    pairs = [p for p in sample_audit.pairs if set(stems(p)) == {planted.preferred_source, planted.stale_source}]
    assert len(pairs) == 1, [stems(p) for p in sample_audit.pairs]
    pair = pairs[0]
    assert stems(pair) == (planted.preferred_source, planted.stale_source)  # the preferred document first
    dates = await stored_dates(candor, sample_kb)
    assert pair.first.effective_date == dates[planted.preferred_source]
    assert pair.second.effective_date == dates[planted.stale_source]
    assert pair.newer == "first" and pair.preferred == "first"
    assert pair.reason == f"newer effective date ({pair.first.effective_date})"
    found = {(value_key(d.first.value), value_key(d.second.value)): d for d in pair.differences}
    expected = (value_key(planted.preferred), value_key(planted.stale))
    assert expected in found, [(d.first.value, d.second.value) for d in pair.differences]
    difference = found[expected]
    assert planted.preferred in difference.first.sentence and planted.stale in difference.second.sentence
    assert difference.first.heading and difference.second.heading


async def test_the_team_plan_announcement_differs_in_both_prices_and_nothing_else(sample_audit: ConflictAudit) -> None:
    (pair,) = [p for p in sample_audit.pairs if stems(p) == ("price-list-2026", "announcement-team-plan-2025")]
    got = {(d.first.value, d.second.value): d for d in pair.differences}
    assert set(got) == {("$15", "$12"), ("$13", "$10")}
    assert got["$15", "$12"].subject == got["$13", "$10"].subject == "Team plan"
    assert got["$15", "$12"].attribute == "amount ($), monthly"
    assert got["$13", "$10"].attribute == "amount ($), annual"


async def test_no_pair_is_reported_but_the_planted_ones(sample_audit: ConflictAudit) -> None:
    planted = {frozenset({c.preferred_source, c.stale_source}) for c in PLANTED}
    reported = {frozenset(stems(p)) for p in sample_audit.pairs}
    assert reported == planted
    for look_alike in LOOK_ALIKES:
        assert frozenset(look_alike) not in reported
    for pair in sample_audit.pairs:  # monthly is never set against annual
        for d in pair.differences:
            assert variant_qualifiers(d.first.sentence) == variant_qualifiers(d.second.sentence)


async def test_the_audit_compares_close_chunks_only(sample_audit: ConflictAudit) -> None:
    chunks = sample_audit.chunks
    assert sample_audit.documents == len(list(SAMPLE.iterdir()))
    assert 0 < sample_audit.chunk_pairs < chunks * 8  # at most `neighbours` per chunk, not all pairs
    assert sample_audit.chunk_pairs < chunks * (chunks - 1) // 2 // 10


async def test_the_json_form_is_plain_data(sample_audit: ConflictAudit) -> None:
    data = json.loads(json.dumps(sample_audit.as_json()))
    assert data["audit_format"] == 1 and data["knowledge_base"] == sample_audit.knowledge_base
    leave = next(
        p
        for p in data["pairs"]
        if stem(p["documents"][1]["document"]) == "employee-faq-2024"
        and stem(p["documents"][0]["document"]) == "hr-leave-policy"
    )
    first, second = leave["documents"]
    assert (first["effective_date"], second["effective_date"]) == ("2026-01-01", "2024-03-15")
    assert first["url"] == "https://handbook.northwindlabs.example/hr/leave-policy"
    assert first["date_source"] == "front_matter" and first["authority"] == 3  # capped by the base's maximum
    (difference,) = leave["differences"]
    assert [v["value"] for v in difference["values"]] == ["24 days", "20 days"]
    assert difference["values"][1]["sentence"] == (
        "Full-time employees receive 20 days of paid annual leave per calendar year."
    )
    remote = next(p for p in data["pairs"] if stem(p["documents"][0]["document"]) == "remote-work-policy")
    assert remote["documents"][0]["date_source"] == "text"  # "Last updated: 2025-11-04", no front matter


# --- documents planted here -----------------------------------------------------------------------------

PLANTED_DOCS = {
    # a changed limit: found, the 2026 page newer and preferred
    "glacier-retention-2024.md": (
        "Glacier retention (old)",
        "2024-05-01",
        2,
        "The Glacier vault keeps nightly snapshots for 14 days.\nSnapshots are stored in the Frankfurt region.\n",
    ),
    "glacier-retention-2026.md": (
        "Glacier retention",
        "2026-01-10",
        2,
        "The Glacier vault keeps nightly snapshots for 21 days.\n"
        "Snapshots are stored in the Frankfurt region and can be restored from the console.\n",
    ),
    # the same numbers reworded: not found
    "fjord-storage-faq.md": (
        "Fjord storage FAQ",
        "2024-02-01",
        1,
        "Each Fjord account can store up to 500 GB of archives.\nFjord uploads are limited to 2 GB per file.\n",
    ),
    "fjord-storage-guide.md": (
        "Fjord storage guide",
        "2026-02-01",
        3,
        "A Fjord account holds at most 500 GB of archived data.\nA single Fjord upload may be up to 2 GB.\n",
    ),
    # two differently named plans, different limits: not found
    "harbor-team-plan.md": (
        "Harbor Team plan",
        "2025-03-01",
        2,
        "The Team plan supports up to 50 users in one workspace.\nThe Team plan costs $15 per user per month.\n",
    ),
    "harbor-team-plus-plan.md": (
        "Harbor Team Plus plan",
        "2026-03-01",
        2,
        "The Team Plus plan supports up to 80 users in one workspace.\n"
        "The Team Plus plan costs $22 per user per month.\n",
    ),
    # a changed limit on the same date: found, the higher authority preferred
    "orca-api-limits.md": (
        "Orca API limits",
        "2025-06-01",
        3,
        "The Orca API allows 100 requests per minute for each API key.\n",
    ),
    "orca-api-notes.md": (
        "Orca API notes",
        "2025-06-01",
        1,
        "The Orca API allows 120 requests per minute for each API key.\n",
    ),
}


def write_planted(folder: Path) -> None:
    for name, (title, effective, authority, body) in PLANTED_DOCS.items():
        front = f"---\ntitle: {title}\neffective_date: {effective}\nauthority: {authority}\n---\n\n"
        (folder / name).write_text(f"{front}# {title}\n\n{body}", encoding="utf-8")


async def test_planted_documents(candor: Candor, kb: KnowledgeBase, docs: Path) -> None:
    write_planted(docs)
    assert (await candor.ingestor().ingest([docs], kb=kb)).ok
    audit = await audit_conflicts(candor.store, candor.embedder, kb)
    by_stems = {stems(p): p for p in audit.pairs}
    assert set(by_stems) == {
        ("glacier-retention-2026", "glacier-retention-2024"),
        ("orca-api-limits", "orca-api-notes"),
    }, render_conflict_audit(audit)

    glacier = by_stems["glacier-retention-2026", "glacier-retention-2024"]
    assert glacier.newer == "first" and glacier.preferred == "first"
    (changed,) = glacier.differences
    assert (changed.first.value, changed.second.value) == ("21 days", "14 days")
    assert changed.subject == "Glacier" and changed.attribute == "number of days"
    assert changed.second.sentence == "The Glacier vault keeps nightly snapshots for 14 days."

    orca = by_stems["orca-api-limits", "orca-api-notes"]
    assert orca.newer == "same date" and orca.preferred == "first" and orca.reason == "higher authority"
    assert [(d.first.value, d.second.value) for d in orca.differences] == [("100 requests", "120 requests")]


async def test_a_knowledge_base_without_conflicts_reports_none(candor: Candor, kb: KnowledgeBase, docs: Path) -> None:
    write_planted(docs)
    for name in ("glacier-retention-2024.md", "orca-api-notes.md"):
        (docs / name).unlink()
    assert (await candor.ingestor().ingest([docs], kb=kb)).ok
    audit = await audit_conflicts(candor.store, candor.embedder, kb)
    assert audit.pairs == () and audit.documents == len(PLANTED_DOCS) - 2
    assert "No two documents give different values" in render_conflict_audit(audit)


# --- the real command -------------------------------------------------------------------------------------


def run_cli(candor: Candor, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`candor ARGS` on the session's database, with the defaults the session runs too."""
    return cli.run_cli(candor, home, *args)


@pytest.mark.slow
async def test_candor_audit_conflicts_from_the_command_line(
    candor: Candor, sample_kb: KnowledgeBase, sample_audit: ConflictAudit, tmp_path: Path
) -> None:
    as_json = run_cli(candor, tmp_path, "audit", "conflicts", "--kb", sample_kb.name, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == sample_audit.as_json()

    plain = run_cli(candor, tmp_path, "audit", "conflicts", "--kb", sample_kb.name)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == render_conflict_audit(sample_audit)
    assert "3 document pairs disagree" in plain.stdout
    assert "$15 [1] vs $12 [2]" in plain.stdout and "24 days [1] vs 20 days [2]" in plain.stdout

    unknown = run_cli(candor, tmp_path, "audit", "conflicts", "--kb", "no-such-kb")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.strip() == "error: no knowledge base is called 'no-such-kb'"
