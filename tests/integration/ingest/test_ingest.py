"""Ingestion against the real embedded Postgres and the real MiniLM embedder.

Every test ingests its own folder into its own knowledge base and then reads the tables back
(documents, chunks, sentences) to check what was stored, not just what the report says.
"""

from __future__ import annotations

import os
import random
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import RowMapping, text

from rag.errors import ConfigError
from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import Ingestor
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.unit.ingest.test_loaders import make_pdf

TODAY = date(2026, 11, 29)
FILE_TIME = datetime(2026, 6, 1, 12, 0).timestamp()
"""The ingest date these tests pin, so nothing depends on the clock (or on crossing midnight)."""


def pinned_ingestor(candor: Candor, today: date = TODAY) -> Ingestor:
    """The runtime's ingestor, but with a fixed `today` (an `Ingestor` constructor argument)."""
    return Ingestor(
        candor.store,
        candor.embedder,
        Chunker(max_tokens=candor.settings.chunk_tokens),
        embed_sentences=candor.settings.sentence_embeddings,
        today=lambda: today,
    )


async def fetch(candor: Candor, sql: str, **params: Any) -> list[RowMapping]:
    async with candor.store.engine.connect() as conn:
        return list((await conn.execute(text(sql), params)).mappings())


async def documents_by_source(candor: Candor, kb: KnowledgeBase) -> dict[str, RowMapping]:
    rows = await fetch(candor, "SELECT * FROM documents WHERE kb_id = :kb", kb=kb.id)
    return {row["source"]: row for row in rows}


async def chunks_of(candor: Candor, document_id: int) -> list[RowMapping]:
    return await fetch(
        candor,
        "SELECT id, position, heading_path, text, access_groups, vector_dims(embedding) AS dims "
        "FROM chunks WHERE document_id = :doc ORDER BY position",
        doc=document_id,
    )


async def table_counts(candor: Candor, kb: KnowledgeBase) -> tuple[int, int, int]:
    rows = await fetch(
        candor,
        "SELECT (SELECT count(*) FROM documents WHERE kb_id = :kb) AS documents, "
        "(SELECT count(*) FROM chunks WHERE kb_id = :kb) AS chunks, "
        "(SELECT count(*) FROM sentences s JOIN chunks c ON c.id = s.chunk_id WHERE c.kb_id = :kb) AS sentences",
        kb=kb.id,
    )
    return rows[0]["documents"], rows[0]["chunks"], rows[0]["sentences"]


def set_mtime(path: Path, day: date) -> None:
    stamp = datetime(day.year, day.month, day.day, 12, 0).timestamp()
    os.utime(path, (stamp, stamp))


# --- every format ---------------------------------------------------------------------------

LEAVE_MD = """---
title: Parental Leave Policy
url: https://intranet.example.com/hr/parental-leave
effective_date: 2025-06-01
authority: 2
access: [staff]
---
# Parental leave

Primary carers receive sixteen weeks of fully paid quillomer leave.

## Applying

Send the signed form to the people team eight weeks before the due date.
"""

TRAVEL_TXT = """Travel Guide
============

Effective 1 March 2024

Economy class is the frandible default for flights under six hours.
"""

OFFICE_HTML = b"""<!DOCTYPE html>
<html><head><title>Office Handbook</title></head>
<body>
  <h1>Office Handbook</h1>
  <h2>Kitchen</h2>
  <p>Clean the glimmerwax kettle after use.</p>
  <ul><li>Wash your cup</li><li>Empty the fridge on Fridays</li></ul>
  <h2>Opening hours</h2>
  <table>
    <tr><th>Day</th><th>Hours</th></tr>
    <tr><td>Monday</td><td>8-18</td></tr>
    <tr><td>Saturday</td><td>closed</td></tr>
  </table>
</body></html>
"""

SAFETY_PDF_LINES = ["WAREHOUSE SAFETY", "Forklift drivers must hold a plonkwidget certificate before use."]


async def test_every_format_is_stored_chunked_embedded_and_searchable(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    leave, travel, office, safety = docs / "leave.md", docs / "travel.txt", docs / "office.html", docs / "safety.pdf"
    leave.write_text(LEAVE_MD, encoding="utf-8")
    travel.write_text(TRAVEL_TXT, encoding="utf-8")
    office.write_bytes(OFFICE_HTML)
    safety.write_bytes(make_pdf([SAFETY_PDF_LINES], {"Title": "Warehouse Safety"}))
    file_day = date(2024, 5, 6)
    for path in (office, safety):
        set_mtime(path, file_day)

    report = await pinned_ingestor(candor).ingest([docs], kb=kb)

    assert report.ok, report.skipped
    assert (report.added, report.updated, report.unchanged) == (4, 0, 0)
    stored = await documents_by_source(candor, kb)
    assert set(stored) == {str(leave), str(travel), str(office), str(safety)}

    md = stored[str(leave)]
    assert (md["title"], md["format"], md["url"]) == (
        "Parental Leave Policy",
        "md",
        "https://intranet.example.com/hr/parental-leave",
    )
    assert (md["effective_date"], md["date_source"], md["date_flag"]) == (date(2025, 6, 1), "front_matter", None)
    assert (md["authority"], md["declared_authority"], md["access_groups"]) == (2, 2, ["staff"])

    txt = stored[str(travel)]
    assert (txt["title"], txt["format"], txt["url"]) == ("Travel Guide", "txt", None)
    assert (txt["effective_date"], txt["date_source"]) == (date(2024, 3, 1), "text")
    assert txt["access_groups"] == []

    html = stored[str(office)]
    assert (html["title"], html["format"]) == ("Office Handbook", "html")
    assert (html["effective_date"], html["date_source"]) == (file_day, "file_time")

    pdf = stored[str(safety)]
    assert (pdf["title"], pdf["format"]) == ("Warehouse Safety", "pdf")
    assert (pdf["effective_date"], pdf["date_source"]) == (file_day, "file_time")

    md_chunks = await chunks_of(candor, md["id"])
    assert [(c["position"], c["heading_path"]) for c in md_chunks] == [
        (0, ["Parental leave"]),
        (1, ["Parental leave", "Applying"]),
    ]
    assert all(c["access_groups"] == ["staff"] for c in md_chunks)
    html_chunks = await chunks_of(candor, html["id"])
    assert [(c["heading_path"], c["text"]) for c in html_chunks] == [
        (
            ["Office Handbook", "Kitchen"],
            "Clean the glimmerwax kettle after use.\n- Wash your cup\n- Empty the fridge on Fridays",
        ),
        (["Office Handbook", "Opening hours"], "Day: Monday; Hours: 8-18\nDay: Saturday; Hours: closed"),
    ]
    pdf_chunks = await chunks_of(candor, pdf["id"])
    assert [(c["heading_path"], c["text"]) for c in pdf_chunks] == [(["WAREHOUSE SAFETY"], SAFETY_PDF_LINES[1])]
    txt_chunks = await chunks_of(candor, txt["id"])
    assert [c["heading_path"] for c in txt_chunks] == [["Travel Guide"]]
    assert "frandible default" in txt_chunks[0]["text"]

    documents, chunks, sentences = await table_counts(candor, kb)
    assert (documents, chunks, sentences) == (4, report.chunks, report.sentences)
    assert chunks == len(md_chunks) + len(html_chunks) + len(pdf_chunks) + len(txt_chunks) == 6
    dims = await fetch(
        candor,
        "SELECT DISTINCT vector_dims(c.embedding) AS chunk_dims, vector_dims(s.embedding) AS sentence_dims "
        "FROM sentences s JOIN chunks c ON c.id = s.chunk_id WHERE c.kb_id = :kb",
        kb=kb.id,
    )
    assert [(row["chunk_dims"], row["sentence_dims"]) for row in dims] == [(384, 384)]
    sentence_texts = {
        row["text"]
        for row in await fetch(
            candor, "SELECT s.text FROM sentences s JOIN chunks c ON c.id = s.chunk_id WHERE c.kb_id = :kb", kb=kb.id
        )
    }
    assert {"Wash your cup", "Day: Monday; Hours: 8-18", SAFETY_PDF_LINES[1]} <= sentence_texts

    scope = AccessScope(groups=frozenset({"staff"}), knowledge_bases=frozenset({kb.name}))
    dated = {"quillomer": "front_matter", "frandible": "text", "glimmerwax": "file_time", "plonkwidget": "file_time"}
    for word, path in (("quillomer", leave), ("frandible", travel), ("glimmerwax", office), ("plonkwidget", safety)):
        passages = await candor.retriever.run(f"{word}", scope, k=3)
        assert passages, word
        assert passages[0].document == str(path), (word, [p.document for p in passages])
        assert word in passages[0].text
        assert passages[0].lexical_score is not None and passages[0].lexical_score > 0
        assert passages[0].dated_by == dated[word]  # conflicts weigh a file's time below a stated date


# --- incremental re-ingest ------------------------------------------------------------------

EXPENSES_MD = """# Expenses

## Meals

Meals are reimbursed up to 30 euros per day. Receipts are required for every meal claim.

## Hotels

Hotels are booked through the travel desk. The nightly hotel limit is 150 euros in most cities.

## Taxis

Taxis are allowed after 22:00. Use the corporate taxi account when possible.
"""


def write_incremental_folder(folder: Path) -> Path:
    expenses = folder / "expenses.md"
    expenses.write_text(EXPENSES_MD, encoding="utf-8")
    (folder / "parking.md").write_text("# Parking\n\nThe basement car park has forty visitor bays.\n")
    (folder / "printing.txt").write_text("Printing\n\nColour printing needs a cost centre code.\n")
    for path in folder.iterdir():  # file times before the pinned TODAY, whatever the real clock says
        os.utime(path, (FILE_TIME, FILE_TIME))
    return expenses


async def test_reingesting_unchanged_files_is_a_no_op(candor: Candor, kb: KnowledgeBase, docs: Path) -> None:
    write_incremental_folder(docs)
    ingestor = pinned_ingestor(candor)
    first = await ingestor.ingest([docs], kb=kb)
    assert (first.added, first.ok) == (3, True)
    before = await table_counts(candor, kb)
    ids_before = {row["id"] for row in await fetch(candor, "SELECT id FROM chunks WHERE kb_id = :kb", kb=kb.id)}

    second = await ingestor.ingest([docs], kb=kb)

    assert (second.added, second.updated, second.unchanged) == (0, 0, 3)
    assert (second.embedded, second.reused, second.chunks, second.sentences) == (0, 0, 0, 0)
    assert await table_counts(candor, kb) == before
    ids_after = {row["id"] for row in await fetch(candor, "SELECT id FROM chunks WHERE kb_id = :kb", kb=kb.id)}
    assert ids_after == ids_before  # not even rewritten


async def test_changed_paragraph_replaces_its_document_chunks_and_reuses_vectors(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    expenses = write_incremental_folder(docs)
    ingestor = pinned_ingestor(candor)
    await ingestor.ingest([docs], kb=kb)
    doc_before = (await documents_by_source(candor, kb))[str(expenses)]
    chunks_before = await chunks_of(candor, doc_before["id"])
    assert len(chunks_before) == 3
    counts_before = await table_counts(candor, kb)

    expenses.write_text(EXPENSES_MD.replace("limit is 150 euros", "limit is 185 euros"), encoding="utf-8")
    report = await ingestor.ingest([docs], kb=kb)

    assert (report.added, report.updated, report.unchanged, report.ok) == (0, 1, 2, True)
    doc_after = (await documents_by_source(candor, kb))[str(expenses)]
    assert doc_after["id"] == doc_before["id"]
    assert doc_after["content_hash"] != doc_before["content_hash"]
    chunks_after = await chunks_of(candor, doc_after["id"])
    assert [c["position"] for c in chunks_after] == [0, 1, 2]
    assert {c["id"] for c in chunks_after}.isdisjoint(c["id"] for c in chunks_before)
    joined = "\n".join(c["text"] for c in chunks_after)
    assert "185 euros" in joined and "150 euros" not in joined
    assert await table_counts(candor, kb) == counts_before
    # Only the Hotels chunk and its changed sentence are new; the other 2 chunks and 5 sentences
    # of the document reuse their stored vectors.
    total_texts = len(chunks_after) + report.sentences
    assert (report.chunks, report.sentences) == (3, 6)
    assert (report.embedded, report.reused) == (2, 7)
    assert report.embedded < total_texts
    stale = await fetch(
        candor,
        "SELECT count(*) AS n FROM sentences s JOIN chunks c ON c.id = s.chunk_id "
        "WHERE c.document_id = :doc AND s.text LIKE '%150 euros%'",
        doc=doc_after["id"],
    )
    assert stale[0]["n"] == 0

    scope = AccessScope(knowledge_bases=frozenset({kb.name}))
    passages = await candor.retriever.run("What is the nightly hotel limit?", scope, k=1)
    assert "185 euros" in passages[0].text


async def test_reingest_with_other_access_updates_groups_without_embedding(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    write_incremental_folder(docs)
    ingestor = pinned_ingestor(candor)
    await ingestor.ingest([docs], kb=kb)
    counts_before = await table_counts(candor, kb)

    report = await ingestor.ingest([docs], kb=kb, access=["staff"])

    assert (report.added, report.updated, report.unchanged, report.embedded) == (0, 3, 0, 0)
    assert await table_counts(candor, kb) == counts_before
    stored = await documents_by_source(candor, kb)
    assert {source: row["access_groups"] for source, row in stored.items()} == {source: ["staff"] for source in stored}
    groups = await fetch(candor, "SELECT DISTINCT access_groups FROM chunks WHERE kb_id = :kb", kb=kb.id)
    assert [row["access_groups"] for row in groups] == [["staff"]]

    back = await ingestor.ingest([docs], kb=kb)
    assert back.updated == 3
    groups = await fetch(candor, "SELECT DISTINCT access_groups FROM chunks WHERE kb_id = :kb", kb=kb.id)
    assert [row["access_groups"] for row in groups] == [[]]


async def test_reingest_on_the_next_day_leaves_unchanged_files_alone(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    """A nightly `candor ingest` must not rewrite every document just because the date moved on."""
    write_incremental_folder(docs)
    await pinned_ingestor(candor, TODAY).ingest([docs], kb=kb)
    ids_before = {row["id"] for row in await fetch(candor, "SELECT id FROM chunks WHERE kb_id = :kb", kb=kb.id)}

    report = await pinned_ingestor(candor, TODAY + timedelta(days=1)).ingest([docs], kb=kb)

    assert (report.updated, report.unchanged) == (0, 3)
    ids_after = {row["id"] for row in await fetch(candor, "SELECT id FROM chunks WHERE kb_id = :kb", kb=kb.id)}
    assert ids_after == ids_before


async def test_future_dated_document_becomes_trusted_once_its_date_arrives(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    notice = docs / "notice.md"
    notice.write_text("---\neffective_date: 2026-12-01\n---\nThe new canteen opens in December.\n")
    await pinned_ingestor(candor, TODAY).ingest([docs], kb=kb)
    row = (await documents_by_source(candor, kb))[str(notice)]
    assert (row["effective_date"], row["date_flag"]) == (None, "future")

    report = await pinned_ingestor(candor, date(2026, 12, 2)).ingest([docs], kb=kb)

    assert report.updated == 1
    row = (await documents_by_source(candor, kb))[str(notice)]
    assert (row["effective_date"], row["declared_date"], row["date_flag"]) == (
        date(2026, 12, 1),
        date(2026, 12, 1),
        None,
    )


# --- prune ----------------------------------------------------------------------------------


async def test_prune_removes_documents_whose_files_are_gone(candor: Candor, kb: KnowledgeBase, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    keep, drop = first / "keep.md", first / "drop.md"
    keep.write_text("# Lockers\n\nLockers are emptied on the last Friday of each month.\n")
    drop.write_text("# Bicycles\n\nBicycles may be stored in the courtyard shed. The shed closes at nine.\n")
    elsewhere = second / "elsewhere.md"
    elsewhere.write_text("# Plants\n\nOffice plants are watered on Tuesdays.\n")
    ingestor = pinned_ingestor(candor)
    assert (await ingestor.ingest([first, second], kb=kb)).added == 3
    drop_id = (await documents_by_source(candor, kb))[str(drop)]["id"]
    drop_chunk_ids = [c["id"] for c in await chunks_of(candor, drop_id)]
    assert drop_chunk_ids
    drop.unlink()
    elsewhere.unlink()

    kept = await ingestor.ingest([first], kb=kb)
    assert (kept.pruned, kept.unchanged) == (0, 1)
    assert set(await documents_by_source(candor, kb)) == {str(keep), str(drop), str(elsewhere)}
    assert len(await chunks_of(candor, drop_id)) == len(drop_chunk_ids)

    pruned = await ingestor.ingest([first], kb=kb, prune=True)

    assert (pruned.pruned, pruned.unchanged, pruned.ok) == (1, 1, True)
    # Only documents under the paths of this run are pruned: `second` was not given.
    assert set(await documents_by_source(candor, kb)) == {str(keep), str(elsewhere)}
    assert await chunks_of(candor, drop_id) == []
    orphans = await fetch(candor, "SELECT count(*) AS n FROM sentences WHERE chunk_id = ANY(:ids)", ids=drop_chunk_ids)
    assert orphans[0]["n"] == 0
    scope = AccessScope(knowledge_bases=frozenset({kb.name}))
    passages = await candor.retriever.run("Where can I store my bicycle?", scope, k=5)
    assert all(p.document != str(drop) for p in passages)


async def test_a_file_that_now_holds_nothing_takes_its_old_chunks_with_it(
    candor: Candor, kb: KnowledgeBase, docs: Path, tmp_path: Path
) -> None:
    emptied, linked, corrupt = docs / "emptied.md", docs / "linked.md", docs / "manual.pdf"
    emptied.write_text("# Bicycles\n\nThe brompel shed closes at nine.\n")
    linked.write_text("# Plants\n\nThe frondish plants are watered on Tuesdays.\n")
    corrupt.write_bytes(make_pdf([["The gravlin manual lists the fire exits."]]))
    ingestor = pinned_ingestor(candor)
    assert (await ingestor.ingest([docs], kb=kb)).added == 3

    emptied.write_text("---\ntitle: Bicycles\n---\n")
    linked.unlink()
    outside = tmp_path / "outside.md"
    outside.write_text("# Elsewhere\n\nNot for this knowledge base.\n")
    linked.symlink_to(outside)
    corrupt.write_bytes(b"%PDF-1.4\n" + random.Random(3).randbytes(500))  # half written: may come back
    report = await ingestor.ingest([docs], kb=kb)

    assert {source for source, _ in report.skipped} == {str(emptied), str(linked), str(corrupt)}
    # only the emptied file is known to hold nothing now: a link leads out only from this folder
    # (another run may give the folder it leads into), and a corrupt file may be half written
    assert report.pruned == 1
    assert set(await documents_by_source(candor, kb)) == {str(linked), str(corrupt)}
    scope = AccessScope(knowledge_bases=frozenset({kb.name}))
    assert all("brompel" not in p.text for p in await candor.retriever.run("brompel", scope, k=5))


async def test_prune_works_when_the_folder_is_given_with_dotdot(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    """`candor ingest ../docs --prune` from a sibling folder: the path holds "..", the stored sources do not."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (tmp_path / "sub").mkdir()
    gone = folder / "gone.md"
    gone.write_text("# Parcels\n\nParcels are collected from the mail room at four.\n")
    (folder / "stays.md").write_text("# Keys\n\nSpare keys are kept by the facilities team.\n")
    given = tmp_path / "sub" / ".." / "docs"
    ingestor = pinned_ingestor(candor)
    assert (await ingestor.ingest([given], kb=kb)).added == 2
    assert str(gone) in await documents_by_source(candor, kb)  # sources are stored normalised
    gone.unlink()

    report = await ingestor.ingest([given], kb=kb, prune=True)

    assert (report.pruned, report.unchanged) == (1, 1)
    assert set(await documents_by_source(candor, kb)) == {str(folder / "stays.md")}


# --- bad input ------------------------------------------------------------------------------


async def test_bad_files_are_skipped_with_reasons_and_the_rest_is_ingested(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    binary = docs / "x.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00" + bytes(range(256)) * 4)
    empty = docs / "empty.txt"
    empty.write_bytes(b"")
    corrupt = docs / "broken.pdf"
    corrupt.write_bytes(b"%PDF-1.4\n" + random.Random(7).randbytes(3000))
    bad_yaml = docs / "bad-front.md"
    bad_yaml.write_text("---\ntitle: [unclosed\naccess: staff\n---\nThe gazebo may be booked for team lunches.\n")
    latin1 = docs / "umlauts.txt"
    latin1.write_bytes("Gebühren\n\nÄrger über Öl: die Gebühr für Parkplätze beträgt 5 Euro.\n".encode("latin-1"))
    good = docs / "good.md"
    good.write_text("# Visitors\n\nVisitors sign in at the reception desk.\n")

    report = await pinned_ingestor(candor).ingest([docs], kb=kb)

    assert report.ok is False
    assert report.added == 2
    reasons = dict(report.skipped)
    assert len(report.skipped) == len(reasons) == 4
    assert set(reasons) == {str(binary), str(empty), str(corrupt), str(bad_yaml)}
    assert "binary" in reasons[str(binary)]
    assert "no text" in reasons[str(empty)]
    assert "corrupt" in reasons[str(corrupt)]
    assert "front matter" in reasons[str(bad_yaml)]
    stored = await documents_by_source(candor, kb)
    assert set(stored) == {str(latin1), str(good)}
    assert stored[str(latin1)]["title"] == "Gebühren"
    latin1_text = "\n".join(c["text"] for c in await chunks_of(candor, stored[str(latin1)]["id"]))
    assert "Ärger über Öl" in latin1_text and "Parkplätze" in latin1_text


async def test_odd_files_and_front_matter_cost_only_themselves(candor: Candor, kb: KnowledgeBase, docs: Path) -> None:
    """A pipe would block the run forever, a name that is not UTF-8 cannot be stored (and once
    failed its whole batch), YAML aliases can expand a few hundred bytes to millions of values,
    and Postgres stores no NUL and no integer past 2**31."""
    pipe = docs / "pipe.txt"
    os.mkfifo(pipe)
    odd_name = docs / os.fsdecode(b"caf\xe9.md")
    odd_name.write_text("# Menu\n\nThe canteen menu changes weekly.\n")
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 5)]
    bomb = docs / "bomb.md"
    bomb.write_text("---\n" + "\n".join(levels) + "\n---\nThe bomb shelter is in the basement.\n")
    title_bomb = docs / "title-bomb.md"  # read as a title, the aliases would expand before any count
    title_bomb.write_text("---\n" + "\n".join(levels) + "\ntitle: *a4\n---\nThe shelter has water.\n")
    crowded = docs / "crowded.md"  # no aliases, just too many values
    crowded.write_text("---\ntags: [" + ", ".join(f"t{n}" for n in range(2500)) + "]\n---\nCrowded.\n")
    odd_values = docs / "odd-values.md"
    odd_values.write_text(
        '---\ntitle: "Shuttle\\0 bus"\nauthor: "a\\0b"\nauthority: 99999999999\n---\n'
        "The shuttle bus leaves every twenty minutes.\n"
    )
    good = docs / "good.md"
    good.write_text("# Visitors\n\nVisitors sign in at the reception desk.\n")

    with pytest.raises(ConfigError, match="blank"):  # an unset shell variable must not make the files public
        await pinned_ingestor(candor).ingest([docs], kb=kb, access=["staff", " "])
    report = await pinned_ingestor(candor).ingest([docs], kb=kb, access=[" staff "])

    reasons = dict(report.skipped)
    assert set(reasons) == {str(pipe), str(odd_name), str(bomb), str(title_bomb), str(crowded)}, reasons
    assert "more than 2000 values" in reasons[str(crowded)]
    assert "YAML aliases (*name) are not accepted here" in reasons[str(title_bomb)]  # refused before any read
    assert "a pipe, socket or device" in reasons[str(pipe)]
    assert "not valid UTF-8" in reasons[str(odd_name)]
    assert "YAML aliases (*name) are not accepted here" in reasons[str(bomb)]
    stored = await documents_by_source(candor, kb)
    assert set(stored) == {str(odd_values), str(good)}
    shuttle = stored[str(odd_values)]
    assert shuttle["title"] == "Shuttle bus" and shuttle["metadata"] == {"author": "ab", "authority": 99999999999}
    assert (shuttle["authority"], shuttle["declared_authority"]) == (0, None)
    assert stored[str(good)]["access_groups"] == ["staff"]


async def test_symlinks_out_of_the_folder_are_not_followed(candor: Candor, kb: KnowledgeBase, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("# Secret\n\nThe obsidianfox vault code is 7781.\n")
    (outside / "nested.md").write_text("# Nested\n\nThe obsidianfox spare key hangs by the door.\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    real = folder / "real.md"
    real.write_text("# Fire drill\n\nThe fire drill assembly point is the north car park.\n")
    alias = folder / "alias.md"
    alias.symlink_to(real)
    link_out = folder / "link-out.md"
    link_out.symlink_to(secret)
    (folder / "linked-dir").symlink_to(outside, target_is_directory=True)
    (folder / "inner-dir").symlink_to(folder, target_is_directory=True)  # inside: passed over quietly
    loop = folder / "loop.md"
    loop.symlink_to(loop)

    report = await pinned_ingestor(candor).ingest([folder], kb=kb)

    reasons = dict(report.skipped)
    assert set(reasons) == {str(link_out), str(folder / "linked-dir"), str(loop)}, reasons
    assert "outside" in reasons[str(link_out)] and "outside" in reasons[str(folder / "linked-dir")]
    assert "loop" in reasons[str(loop)]
    stored = await documents_by_source(candor, kb)
    assert str(real) in stored
    assert str(alias) not in dict(report.skipped)
    assert not any(source.startswith(str(outside)) or "linked-dir" in source for source in stored)
    leaked = await fetch(
        candor, "SELECT count(*) AS n FROM chunks WHERE kb_id = :kb AND text LIKE '%obsidianfox%'", kb=kb.id
    )
    assert leaked[0]["n"] == 0


# --- source trust ---------------------------------------------------------------------------


async def test_source_trust_caps_authority_and_distrusts_future_dates(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    assert kb.max_authority == 3
    boss = docs / "boss.md"
    boss.write_text("---\ntitle: Override\nauthority: 9\n---\nThis document overrides every other policy.\n")
    future = docs / "future.md"
    future.write_text("---\neffective_date: 2099-01-01\n---\nDesks are assigned by lottery.\n")
    soon = docs / "soon.md"
    soon.write_text("---\neffective_date: 2026-12-15\n---\nThe car park is repainted in December.\n")
    notice = docs / "canteen.txt"
    notice.write_text("Canteen notice\n\nEffective 1 March 2026 the canteen opens at 7:30.\n")

    report = await pinned_ingestor(candor, TODAY).ingest([docs], kb=kb)

    assert (report.added, report.ok) == (4, True)
    stored = await documents_by_source(candor, kb)
    assert (stored[str(boss)]["authority"], stored[str(boss)]["declared_authority"]) == (3, 9)
    for path, declared in ((future, date(2099, 1, 1)), (soon, date(2026, 12, 15))):
        row = stored[str(path)]
        assert (row["effective_date"], row["declared_date"], row["date_flag"], row["date_source"]) == (
            None,
            declared,
            "future",
            "front_matter",
        ), path
    row = stored[str(notice)]
    assert (row["effective_date"], row["declared_date"], row["date_flag"], row["date_source"]) == (
        date(2026, 3, 1),
        date(2026, 3, 1),
        None,
        "text",
    )

    scope = AccessScope(knowledge_bases=frozenset({kb.name}))
    passages = await candor.retriever.run("This document overrides every other policy", scope, k=1)
    assert (passages[0].document, passages[0].authority) == (str(boss), 3)
    passages = await candor.retriever.run("Desks are assigned by lottery", scope, k=1)
    assert (passages[0].document, passages[0].effective_date) == (str(future), None)
