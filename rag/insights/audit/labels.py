"""Human labels for the audit: a CSV for people to fill in, and its import (`candor audit answers
--export FILE` / `--import FILE`).

The export samples like the automatic audit (`md5(id || seed)`; answers and abstentions with an
item nobody has labelled yet, unless `again`) and writes one row per delivered sentence, with the
full text of the passages it cites, and one row per abstention or unanswered part, with the best
evidence a relaxed re-check found when one is available. People fill `label` (`supported` /
`unsupported` for a sentence, `correct_abstention` / `wrong_abstention` for an abstention) and
`labeller`. The file holds questions and the passages answers cite, restricted documents included:
it is written atomically and private to its owner (mode 0600, `rag.insights.files.write_private`), and a
missing folder is an error before any re-check runs.

The import checks every row before storing any: an unknown trace, a position the trace has no
sentence at (or a sentence text that is not the one stored there: a re-sorted sheet), a part the
answer did not leave unanswered, or a label not allowed for the row's kind is an error naming the
file's line. With any such row nothing is stored, unless `skip_invalid`: then the valid rows are
stored and the others listed. Rows whose label is empty are skipped and counted. A label replaces
the earlier label of the same item; the import is one audit run of kind `human`.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import LabelFileError, StoreError
from rag.insights.audit import queries as audit_store
from rag.insights.audit.answers import Abstention, AuditRequest, Rechecker, abstentions_of
from rag.insights.files import require_folder, write_private
from rag.insights.spreadsheet import defuse, restore
from rag.tracking.records import parse_trace_id

COLUMNS = (
    "kind",
    "trace_id",
    "created_at",
    "question",
    "position",
    "sentence",
    "part",
    "evidence",
    "label",
    "labeller",
    "label_options",
)
REQUIRED = ("kind", "trace_id", "position", "part", "label")
LABELS = {"sentence": ("supported", "unsupported", "partly"), "abstention": ("correct_abstention", "wrong_abstention")}
ENCODING = "utf-8-sig"
"""Written with a byte-order mark, so that spreadsheet programs read the UTF-8 as UTF-8; read either way."""


# --- export --------------------------------------------------------------------------------------------


async def export_labels(engine: AsyncEngine, request: AuditRequest, path: Path, rechecker: Rechecker | None) -> int:
    """Write the CSV of a fresh sample for people to label; returns the number of rows written."""
    require_folder(path)  # before the re-checks, which take a while
    params = request.params()
    delivered = await audit_store.select(engine, audit_store.DELIVERED_TO_LABEL, params)
    abstained = await audit_store.select(engine, audit_store.ABSTAINED_TO_LABEL, params)
    rows = [row for trace in delivered for row in sentence_rows(trace)]
    for abstention in (a for trace in abstained for a in abstentions_of(trace)):
        evidence = (await rechecker(abstention.text, abstention.scope)).as_json() if rechecker else None
        rows.append(abstention_row(abstention, evidence))
    await asyncio.to_thread(write_private, path, to_csv(rows), bom=True)
    return len(rows)


def sentence_rows(trace: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per delivered sentence of a stored trace, with the passages it cites in full."""
    sources = {int(s["n"]): s for s in trace.get("sources") or [] if "n" in s}
    rows = []
    for position, sentence in enumerate(trace.get("sentences") or []):
        cited = [sources[int(n)] for n in sentence.get("citations") or [] if int(n) in sources]
        rows.append(
            _row(
                "sentence",
                trace,
                position=str(position),
                sentence=str(sentence.get("text") or ""),
                evidence="\n\n".join(_passage(source) for source in cited),
            )
        )
    return rows


def abstention_row(abstention: Abstention, recheck: Mapping[str, Any] | None) -> dict[str, str]:
    found = (recheck or {}).get("evidence") or []
    evidence = "\n".join(
        f"{e.get('title') or ''}{' > ' + e['heading'] if e.get('heading') else ''} ({e.get('document')}): "
        f"{e.get('sentence')} [score {e.get('score')}]"
        for e in found
    )
    trace = {"id": abstention.trace_id, "created_at": abstention.created_at, "question": abstention.question}
    return _row("abstention", trace, part=abstention.part or "", evidence=evidence)


def _row(kind: str, trace: Mapping[str, Any], **cells: str) -> dict[str, str]:
    created = trace["created_at"]
    return {
        **dict.fromkeys(COLUMNS, ""),
        "kind": kind,
        "trace_id": str(trace["id"]),
        "created_at": created.isoformat() if hasattr(created, "isoformat") else str(created),
        "question": str(trace["question"]),
        **cells,
        "label_options": " / ".join(LABELS[kind]),
    }


def _passage(source: Mapping[str, Any]) -> str:
    heading = f" > {source['heading']}" if source.get("heading") else ""
    return (
        f"[{source.get('n')}] {source.get('title') or ''}{heading} ({source.get('document')})\n{source.get('excerpt')}"
    )


def to_csv(rows: Iterable[Mapping[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({name: defuse(value) for name, value in row.items()} for row in rows)
    return out.getvalue()


# --- import --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelRow:
    """One row of a label file, as read (`line`: the file line it starts on)."""

    line: int
    cells: Mapping[str, str]

    def cell(self, name: str) -> str:
        """The cell as exported (a spreadsheet-safety `'` taken off again), spaces trimmed."""
        return restore((self.cells.get(name) or "").strip())


@dataclass(frozen=True, slots=True)
class Imported:
    run_id: int | None
    stored: int
    replaced: int
    """Of the stored, how many replaced an earlier label of the same item."""
    empty: int
    """Rows with no label, skipped."""
    invalid: tuple[str, ...]
    """Rows not stored (only with skip_invalid), each with its line and why."""


def read_rows(text: str) -> list[LabelRow]:
    """The rows of a label file, each with the line it starts on; `LabelFileError` when a column is missing."""
    reader = csv.reader(io.StringIO(text))
    header = [name.strip().lower() for name in next(reader, [])]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise LabelFileError(f"line 1: the header lacks the column(s) {', '.join(missing)}")
    rows, start = [], reader.line_num + 1
    for cells in reader:
        if any(cell.strip() for cell in cells):
            rows.append(LabelRow(start, dict(zip(header, cells, strict=False))))
        start = reader.line_num + 1
    return rows


def label_of(row: LabelRow) -> str:
    """The label as written, normalised: case, spaces and hyphens aside (`Wrong abstention`)."""
    return "_".join(row.cell("label").lower().replace("-", " ").split())


def validate(
    rows: Sequence[LabelRow], traces: Mapping[str, Mapping[str, Any]], source: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The labels to store, and a problem per invalid row (`line N: ...`); rows without a label are left out."""
    labels: dict[tuple[str, int | None, str | None], tuple[int, dict[str, Any]]] = {}
    problems = []
    for row in rows:
        if not label_of(row):
            continue
        try:
            item = _item(row, traces)
        except ValueError as exc:
            problems.append(f"line {row.line}: {exc}")
            continue
        key = (item["trace_id"], item["position"], item["part"])
        earlier = labels.get(key)
        if earlier is not None and earlier[1]["label"] != item["label"]:
            problems.append(f"line {row.line}: labels the same item as line {earlier[0]} differently")
            continue
        labels[key] = (row.line, {**item, "labeller": row.cell("labeller") or None, "source_file": source})
    return [label for _, label in labels.values()], problems


def _item(row: LabelRow, traces: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The labelled item of a row (trace, position, part, label), or ValueError saying what is wrong."""
    kind = row.cell("kind").lower()
    if kind not in LABELS:
        raise ValueError(f"kind {row.cell('kind')!r} is neither sentence nor abstention")
    label = label_of(row)
    if label not in LABELS[kind]:
        raise ValueError(f"label {row.cell('label')!r} is not one of {', '.join(LABELS[kind])} (for a {kind})")
    trace_id = parse_trace_id(row.cell("trace_id"))
    trace = traces.get(trace_id or "")
    if trace_id is None or trace is None:
        raise ValueError(f"no trace {row.cell('trace_id')!r}")
    if kind == "sentence":
        return {"trace_id": trace_id, "position": _position(row, trace), "part": None, "label": label}
    return {"trace_id": trace_id, "position": None, "part": _part(row, trace), "label": label}


def _position(row: LabelRow, trace: Mapping[str, Any]) -> int:
    sentences = trace.get("sentences") or []
    written = row.cell("position")
    if not written.isdigit() or int(written) >= len(sentences):
        raise ValueError(f"trace {trace['id']} has no delivered sentence at position {written!r}")
    stored = str(sentences[int(written)].get("text") or "")
    if row.cell("sentence") and " ".join(row.cell("sentence").split()) != " ".join(stored.split()):
        raise ValueError(f"the sentence is not the one at position {written} of trace {trace['id']} (re-sorted?)")
    return int(written)


def _part(row: LabelRow, trace: Mapping[str, Any]) -> str | None:
    part = row.cell("part")
    if trace["route"] == "abstained":
        if part:
            raise ValueError(f"trace {trace['id']} abstained on the whole question: leave part empty")
        return None
    unanswered = [str(p) for p in trace.get("unanswered_parts") or []]
    if part not in unanswered:
        raise ValueError(f"trace {trace['id']} did not abstain on the part {part!r}")
    return part


async def import_labels(engine: AsyncEngine, path: Path, *, skip_invalid: bool = False) -> Imported:
    """Check every row of the file, then store its labels in one transaction (see the module docstring)."""
    try:
        text = await asyncio.to_thread(path.read_text, encoding=ENCODING)
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelFileError(f"could not read {path}: {exc}") from exc
    rows = read_rows(text)
    ids = sorted({i for i in (parse_trace_id(row.cell("trace_id")) for row in rows) if i is not None})
    found = await audit_store.select(engine, audit_store.SELECT_LABELLED_TRACES, {"ids": ids})
    labels, problems = validate(rows, {str(t["id"]): t for t in found}, str(path))
    if problems and not skip_invalid:
        shown = "\n  ".join(problems)
        raise LabelFileError(f"{path}: {len(problems)} invalid row(s), nothing stored:\n  {shown}", tuple(problems))
    empty = sum(not label_of(row) for row in rows)
    if not labels:
        return Imported(None, 0, 0, empty, tuple(problems))
    run = {
        "kind": "human",
        "verifier": "human",
        "deciding_model": None,
        "sample_size": len(labels),
        "seed": None,
        "since": None,
        "until": None,
        "knowledge_base": None,
        "config": {"file": str(path), "rows": len(rows), "empty": empty, "invalid": len(problems)},
        "complete": True,
        "error": None,
    }
    try:
        async with engine.begin() as conn:
            run_id = await audit_store.insert_run(conn, run)
            replaced = await audit_store.upsert_labels(conn, run_id, labels)
    except SQLAlchemyError as exc:
        raise StoreError(f"could not store the labels of {path}: {exc}") from exc
    return Imported(run_id, len(labels), replaced, empty, tuple(problems))
