"""Human labels: `candor audit answers --export` → people fill in `label` → `--import` → the report's `human`.

Answers come from the real pipeline over the sample handbook, on days of their own in April 2017 (see
tests/integration/insights/test_audit.py); labels are filled in here by rule, and every expected number is
counted from the labels written, never from the report's SQL.
"""

from __future__ import annotations

import csv
import io
import stat
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.render.report_text import render_report
from rag.errors import FileWriteError, LabelFileError
from rag.insights.audit.answers import AuditRequest, relaxed_rechecker
from rag.insights.audit.labels import COLUMNS, export_labels, import_labels
from rag.insights.report.build import build_report, report_window
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.fakes.teams_server import ingest_handbook
from tests.integration.insights.test_audit import (
    ABSTAINED,
    DELIVERED,
    MARKER,
    STRATIFIED,
    day,
    delivered,
    may,
    run_cli,
    seed,
    weighted,
    wilson,
    window,
)
from tests.integration.insights.test_report import execute

Row = dict[str, str]


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "labels")


def read(path: Path) -> list[Row]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def write(path: Path, rows: Sequence[Mapping[str, str]]) -> list[int]:
    """Write the rows as a label file; returns the file line each row starts on (counted while writing)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    starts = []
    for row in rows:
        starts.append(out.getvalue().count("\n") + 1)
        writer.writerow(row)
    path.write_text(out.getvalue(), encoding="utf-8")
    return starts


def by_rule(row: Row) -> str:
    """A person's label: a sentence naming MARKER is unsupported; the first abstention was wrong."""
    if row["kind"] == "sentence":
        return "unsupported" if MARKER in row["sentence"] else "supported"
    return "correct_abstention"


def filled(rows: Sequence[Row], label: Callable[[Row], str] = by_rule, *, blank: int | None = None) -> list[Row]:
    """The rows with their label and labeller filled in (row `blank` left without a label)."""
    out = [{**row, "label": label(row), "labeller": "ana"} for row in rows]
    abstentions = [r for r in out if r["kind"] == "abstention"]
    if abstentions:
        abstentions[0]["label"] = "wrong_abstention"
    if blank is not None:
        out[blank]["label"] = ""
    return out


def expected_human(rows: Sequence[Row], delivered: int) -> dict[str, Any]:
    """The report's `human` for labels of one day's answers, that day delivering `delivered` sentences."""
    sentences = [r for r in rows if r["kind"] == "sentence" and r["label"]]
    abstentions = [r for r in rows if r["kind"] == "abstention" and r["label"]]
    unsupported = sum(r["label"] == "unsupported" for r in sentences)
    wrong = sum(r["label"] == "wrong_abstention" for r in abstentions)
    rate, interval = weighted([(delivered, len(sentences), unsupported)])
    assert rate == round(unsupported / len(sentences), 4), "one day: the plain share"
    return {
        "hallucination_rate": {
            "status": "measured",
            "rate": rate,
            "n": unsupported,
            "sample_size": len(sentences),
            "labelled_answers": len({r["trace_id"] for r in sentences}),
            "partly": sum(r["label"] == "partly" for r in sentences),
            "interval": interval,
            "method": STRATIFIED,
            "coverage": {"n": delivered, "of": delivered, "rate": 1.0},
        },
        "wrong_abstention": {
            "status": "measured",
            "rate": round(wrong / len(abstentions), 4),
            "n": wrong,
            "sample_size": len(abstentions),
            "interval": wilson(wrong, len(abstentions)),
        },
    }


async def human(candor: Candor, n: int, kb: KnowledgeBase) -> dict[str, Any]:
    since, until = (f"2017-04-{d:02d}" for d in (n, n + 1))
    return (await build_report(candor.tracker.engine, report_window(since, until, kb=kb.name)))["total"]


async def labels_of(candor: Candor, ids: Sequence[str]) -> list[dict[str, Any]]:
    return await execute(
        candor,
        "SELECT trace_id::text AS trace_id, position, part, label, labeller, source_file FROM human_labels "
        "WHERE trace_id::text = ANY(:ids) ORDER BY trace_id, position",
        {"ids": list(ids)},
    )


async def exported(candor: Candor, kb: KnowledgeBase, n: int, path: Path) -> list[Row]:
    rechecker = relaxed_rechecker(candor, shortlist=candor.settings.shortlist)
    written = await export_labels(candor.tracker.engine, window(n, kb, seed="labels"), path, rechecker)
    rows = read(path)
    assert len(rows) == written
    return rows


async def test_export_fill_import_and_the_report_shows_the_human_rates(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    ids = await seed(candor, handbook, day(20), [*DELIVERED, *ABSTAINED])
    sentences = await delivered(candor, ids)
    path = tmp_path / "to-label.csv"
    rows = await exported(candor, handbook, 20, path)

    assert list(rows[0]) == list(COLUMNS)
    sentence_rows = [r for r in rows if r["kind"] == "sentence"]
    assert sorted((r["trace_id"], int(r["position"]), r["sentence"]) for r in sentence_rows) == sorted(sentences)
    stored = await execute(candor, "SELECT id::text AS id, answer FROM traces WHERE id::text = ANY(:ids)", {"ids": ids})
    answers = {t["id"]: t["answer"] for t in stored}
    for row in sentence_rows:
        cited = answers[row["trace_id"]]["sentences"][int(row["position"])]["citations"]
        for n in cited:
            assert answers[row["trace_id"]]["sources"][n - 1]["excerpt"] in row["evidence"]
        assert row["label"] == "" and row["label_options"] == "supported / unsupported / partly"
    abstention_rows = [r for r in rows if r["kind"] == "abstention"]
    assert len(abstention_rows) == 3 and sum(bool(r["part"]) for r in abstention_rows) == 1
    assert any(r["evidence"] for r in abstention_rows), "the relaxed re-check's best evidence is shown"

    labelled = filled(rows, blank=0)
    write(path, labelled)
    imported = await import_labels(candor.tracker.engine, path)
    assert (imported.stored, imported.replaced, imported.empty, imported.invalid) == (len(rows) - 1, 0, 1, ())

    total = await human(candor, 20, handbook)
    assert total["human"] == expected_human(labelled, len(sentences))
    assert total["hallucination_rate"]["status"] == "not_measured", "people's labels are not the verifier's rate"
    stored_labels = await labels_of(candor, ids)
    assert len(stored_labels) == len(rows) - 1
    assert {r["labeller"] for r in stored_labels} == {"ana"} and {r["source_file"] for r in stored_labels} == {
        str(path)
    }
    (run,) = await execute(
        candor, "SELECT kind, verifier, sample_size FROM audit_runs WHERE id = :id", {"id": imported.run_id}
    )
    assert run == {"kind": "human", "verifier": "human", "sample_size": len(rows) - 1}
    line = next(x for x in render_report(await _report(candor, 20, handbook)).splitlines() if "(human labels)" in x)
    h = total["human"]["hallucination_rate"]
    assert line.startswith(f"Hallucination rate (human labels): {100 * h['rate']:.1f}% (95% CI ")
    assert f"weighted by day, from {h['n']}/{h['sample_size']} sentences labelled (days holding " in line
    assert line.endswith(f"on {h['labelled_answers']} answers.")

    again = await exported(candor, handbook, 20, tmp_path / "next.csv")
    assert {(r["kind"], r["trace_id"]) for r in again} == {("sentence", rows[0]["trace_id"])}, (
        "an answer is exported again only while one of its sentences has no label"
    )


async def _report(candor: Candor, n: int, kb: KnowledgeBase) -> dict[str, Any]:
    since, until = (f"2017-04-{d:02d}" for d in (n, n + 1))
    return await build_report(candor.tracker.engine, report_window(since, until, kb=kb.name))


async def test_a_reimport_replaces_the_earlier_labels(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> None:
    ids = await seed(candor, handbook, day(22), [*DELIVERED[:3], *ABSTAINED])
    sentences = len(await delivered(candor, ids))
    path = tmp_path / "labels.csv"
    rows = await exported(candor, handbook, 22, path)
    first = filled(rows)
    write(path, first)
    assert (await import_labels(candor.tracker.engine, path)).replaced == 0
    assert (await human(candor, 22, handbook))["human"] == expected_human(first, sentences)

    flipped = filled(rows, lambda r: "unsupported" if r["kind"] == "sentence" else "wrong_abstention")
    write(path, flipped)
    imported = await import_labels(candor.tracker.engine, path)
    assert (imported.stored, imported.replaced) == (len(rows), len(rows))
    assert len(await labels_of(candor, ids)) == len(rows), "one label per item"
    assert (await human(candor, 22, handbook))["human"] == expected_human(flipped, sentences)


async def test_a_malformed_file_stores_nothing_and_names_each_bad_line(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    ids = await seed(candor, handbook, day(24), [*DELIVERED, ABSTAINED[0]])
    path = tmp_path / "labels.csv"
    rows = filled(await exported(candor, handbook, 24, path))
    sentence_rows = [i for i, r in enumerate(rows) if r["kind"] == "sentence"]
    bad_label, unknown_trace, no_position, moved = sentence_rows[:4]
    rows[bad_label]["label"] = "maybe"
    rows[unknown_trace]["trace_id"] = str(uuid.uuid4())
    rows[no_position]["position"] = "99"
    rows[moved]["sentence"] = "A sentence from another row."
    abstention = next(i for i, r in enumerate(rows) if r["kind"] == "abstention")
    rows[abstention]["label"] = "supported"
    starts = write(path, rows)

    with pytest.raises(LabelFileError) as caught:
        await import_labels(candor.tracker.engine, path)
    problems = caught.value.problems
    assert len(problems) == 5
    expected = {
        bad_label: "label 'maybe' is not one of supported, unsupported",
        unknown_trace: f"no trace '{rows[unknown_trace]['trace_id']}'",
        no_position: "has no delivered sentence at position '99'",
        moved: "is not the one at position",
        abstention: "label 'supported' is not one of correct_abstention, wrong_abstention",
    }
    for index, words in expected.items():
        assert any(p.startswith(f"line {starts[index]}: ") and words in p for p in problems), (index, problems)
    assert str(path) in str(caught.value) and "nothing stored" in str(caught.value)
    assert await labels_of(candor, ids) == [], "nothing stored"

    kept = await import_labels(candor.tracker.engine, path, skip_invalid=True)
    assert kept.stored == len(rows) - 5 and len(kept.invalid) == 5
    assert len(await labels_of(candor, ids)) == len(rows) - 5


async def test_peoples_labels_are_weighted_by_the_traffic_of_their_day(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    # 15 May 2017: a busy day, one answer of it labelled (the one naming MARKER); 16 May: a quiet day,
    # every answer labelled.
    busy = await seed(candor, handbook, may(15), [DELIVERED[5]])
    busy += await seed(candor, handbook, may(15, 15), [*DELIVERED[:3], DELIVERED[4]])
    quiet = await seed(candor, handbook, may(16), DELIVERED[:2])
    labelled: list[Row] = []
    for start in (may(15), may(16)):
        path = tmp_path / f"{start.day}.csv"
        request = AuditRequest(start, start + timedelta(hours=1), knowledge_base=handbook.name, seed="days")
        await export_labels(candor.tracker.engine, request, path, None)
        rows = filled([r for r in read(path) if r["kind"] == "sentence"])
        write(path, rows)
        assert (await import_labels(candor.tracker.engine, path)).stored == len(rows)
        labelled += rows

    def day_of(ids: Sequence[str], delivered_sentences: int) -> tuple[int, int, int]:
        mine = [r for r in labelled if r["trace_id"] in ids]
        return delivered_sentences, len(mine), sum(r["label"] == "unsupported" for r in mine)

    busy_day = day_of(busy, len(await delivered(candor, busy)))
    quiet_day = day_of(quiet, len(await delivered(candor, quiet)))
    assert 0 < busy_day[1] < busy_day[0] and quiet_day[1] == quiet_day[0], "sparsely and fully labelled"
    assert busy_day[2] / busy_day[1] > quiet_day[2] / quiet_day[1]
    rate, interval = weighted([busy_day, quiet_day])
    assert rate != round((busy_day[2] + quiet_day[2]) / (busy_day[1] + quiet_day[1]), 4), "not the pooled share"

    report = await build_report(candor.tracker.engine, report_window("2017-05-15", "2017-05-17", kb=handbook.name))
    measure = report["total"]["human"]["hallucination_rate"]
    assert (measure["rate"], measure["interval"], measure["method"]) == (rate, interval, STRATIFIED)
    assert (measure["n"], measure["sample_size"]) == (busy_day[2] + quiet_day[2], busy_day[1] + quiet_day[1])
    covered = busy_day[0] + quiet_day[0]
    assert measure["coverage"] == {"n": covered, "of": covered, "rate": 1.0}


async def test_a_file_without_the_label_column_is_refused_on_its_first_line(tmp_path: Path, candor: Candor) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("kind,trace_id,position\nsentence,x,0\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match="line 1: the header lacks the column"):
        await import_labels(candor.tracker.engine, path)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_the_export_is_private_to_its_owner_and_never_left_half_written(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    await seed(candor, handbook, day(28), [DELIVERED[0], ABSTAINED[0]])
    path = tmp_path / "labels.csv"
    path.write_text("an older sheet", encoding="utf-8")
    path.chmod(0o644)
    rows = await exported(candor, handbook, 28, path)
    assert any(r["kind"] == "sentence" and r["evidence"] for r in rows), "it holds the cited passages"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, "replaced by a file only its owner can read"
    assert names(tmp_path) == ["labels.csv"], "no temporary file left behind"

    missing = tmp_path / "no-such-folder" / "labels.csv"
    rechecker = relaxed_rechecker(candor, shortlist=candor.settings.shortlist)
    with pytest.raises(FileWriteError, match="no-such-folder does not exist"):
        await export_labels(candor.tracker.engine, window(28, handbook, seed="again", again=True), missing, rechecker)
    assert names(tmp_path) == ["labels.csv"], "no folder made, no partial file"


@pytest.mark.slow
async def test_the_round_trip_through_the_command(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> None:
    ids = await seed(candor, handbook, day(26), [*DELIVERED[:4], ABSTAINED[1]])
    path = tmp_path / "to-label.csv"
    window_args = ("--since", "2017-04-26", "--until", "2017-04-27", "--kb", handbook.name, "--seed", "s")
    out = run_cli(candor, tmp_path, "audit", "answers", *window_args, "--export", str(path))
    assert out.returncode == 0, out.stderr
    rows = read(path)
    assert f"wrote {len(rows)} rows to {path}" in out.stdout
    labelled = filled(rows)
    write(path, labelled)
    stored = run_cli(candor, tmp_path, "audit", "answers", "--import", str(path))
    assert stored.returncode == 0, stored.stderr
    assert f"stored {len(rows)} labels from {path}" in stored.stdout
    assert (await human(candor, 26, handbook))["human"] == expected_human(labelled, len(await delivered(candor, ids)))

    labelled[0]["label"] = "perhaps"
    starts = write(path, labelled)
    refused = run_cli(candor, tmp_path, "audit", "answers", "--import", str(path))
    assert refused.returncode == 1 and f"line {starts[0]}: label 'perhaps'" in refused.stderr
    assert "Traceback" not in refused.stderr
    both = run_cli(candor, tmp_path, "audit", "answers", "--import", str(path), "--export", str(path))
    assert both.returncode == 2
