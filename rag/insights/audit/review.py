"""The review queue: people label a sample of answers in the dashboard, one click per sentence.

The same sample as the label file (`rag.insights.audit.labels`): delivered answers and abstentions
of the window, ordered by `md5(id || seed)` with a fixed seed, so that the queue is the same list
for everyone until its items are labelled, and a labelled item leaves it (an answer once each of its
sentences has a label). Each answer comes with its sentences, the citations of each and the full
stored text of every passage it cites; each abstention (or unanswered part) with what a relaxed
re-check of the documents found, for the reviewer to say "the documents did answer this".

A label is checked as an imported one is (the trace exists, the position holds a delivered sentence
and still that sentence, the part was left unanswered, the label fits the kind) and stored at once
in `human_labels`, replacing an earlier label of the same item, under one audit run of kind `human`
per reviewer and day: the report's human-labelled rates read it on the next page load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import AuditError, StoreError
from rag.insights.audit import queries as audit_store
from rag.insights.audit.answers import AuditRequest, Rechecker
from rag.insights.audit.items import abstentions_of
from rag.insights.audit.labels import LABELS, LabelRow, validate

REVIEW_SEED = "review-queue"
"""One order for everyone: two reviewers working the queue see the same next items."""
MAX_LABELLER = 100

EXISTING = text(
    "SELECT trace_id::text AS trace_id, position, part, label, labeller FROM human_labels "
    "WHERE trace_id = ANY(CAST(:ids AS uuid[]))"
)
FIND_RUN = text(
    "SELECT id FROM audit_runs WHERE kind = 'human' AND config ->> 'review_queue' = :key ORDER BY id LIMIT 1"
)


@dataclass(frozen=True, slots=True)
class ReviewLabel:
    """One click: a label on a sentence (`position`) or an abstention (`part`, None for the whole question)."""

    trace_id: str
    kind: str
    """`sentence` or `abstention`."""
    label: str
    labeller: str
    position: int | None = None
    part: str | None = None
    sentence: str = ""
    """The sentence as shown: a label on a sentence that changed under it is refused."""


def review_request(since: datetime, until: datetime, *, sample: int, knowledge_base: str | None) -> AuditRequest:
    return AuditRequest(since, until, sample=sample, knowledge_base=knowledge_base, seed=REVIEW_SEED)


async def review_queue(engine: AsyncEngine, request: AuditRequest, rechecker: Rechecker | None) -> dict[str, Any]:
    """The next answers and abstentions to label, with what is labelled of them already."""
    params = request.params()
    delivered = await audit_store.select(engine, audit_store.DELIVERED_TO_LABEL, params)
    abstained = await audit_store.select(engine, audit_store.ABSTAINED_TO_LABEL, params)
    ids = sorted({str(t["id"]) for t in [*delivered, *abstained]})
    existing = await audit_store.select(engine, EXISTING, {"ids": ids}) if ids else []
    labelled = {(r["trace_id"], r["position"], r["part"]): r["label"] for r in existing}
    abstentions = []
    for abstention in (a for trace in abstained for a in abstentions_of(trace)):
        if (abstention.trace_id, None, abstention.part) in labelled:
            continue
        found = (await rechecker(abstention.text, abstention.scope)).as_json() if rechecker else None
        abstentions.append(
            {
                "trace_id": abstention.trace_id,
                "created_at": abstention.created_at.isoformat(),
                "question": abstention.question,
                "part": abstention.part,
                "evidence": (found or {}).get("evidence") or [],
                "recheck": None if found is None else {"label": found["label"], "score": found["score"]},
                "restricted": bool(abstention.scope.groups),
            }
        )
    return {
        "window": {"since": request.since.isoformat(), "until": request.until.isoformat()},
        "knowledge_base": request.knowledge_base,
        "labels": {kind: list(options) for kind, options in LABELS.items()},
        "answers": [_answer(trace, labelled) for trace in delivered],
        "abstentions": abstentions,
    }


def _answer(trace: Mapping[str, Any], labelled: Mapping[tuple[Any, Any, Any], str]) -> dict[str, Any]:
    trace_id = str(trace["id"])
    sources = [
        {
            "n": int(s["n"]),
            "title": s.get("title") or s.get("document") or "",
            "heading": s.get("heading") or "",
            "document": s.get("document") or "",
            "url": s.get("url"),
            "excerpt": s.get("excerpt") or "",
            "answered_by": s.get("answered_by"),
        }
        for s in trace.get("sources") or []
        if "n" in s
    ]
    sentences = [
        {
            "position": position,
            "text": str(s.get("text") or ""),
            "citations": [int(n) for n in s.get("citations") or []],
            "label": labelled.get((trace_id, position, None)),
        }
        for position, s in enumerate(trace.get("sentences") or [])
    ]
    created = trace["created_at"]
    return {
        "trace_id": trace_id,
        "created_at": created.isoformat(),
        "question": str(trace["question"]),
        "sentences": sentences,
        "sources": sources,
        "restricted": _restricted(trace.get("scope")),
    }


def _restricted(scope: Any) -> bool:
    """Answered with access groups: its passages may be restricted (not for a channel's readers)."""
    return isinstance(scope, Mapping) and bool(scope.get("groups"))


async def store_review_label(engine: AsyncEngine, label: ReviewLabel) -> dict[str, Any]:
    """Check and store one label (replacing an earlier one of the item); `AuditError` says what is
    wrong with it, `StoreError` that the database failed."""
    labeller = " ".join(label.labeller.split())[:MAX_LABELLER]
    if not labeller:
        raise AuditError("say who you are (the labeller's name) before labelling")
    cells = {
        "kind": label.kind,
        "trace_id": label.trace_id,
        "position": "" if label.position is None else str(label.position),
        "part": label.part or "",
        "label": label.label,
        "sentence": label.sentence,
    }
    found = await audit_store.select(engine, audit_store.SELECT_LABELLED_TRACES, {"ids": [label.trace_id]})
    rows, problems = validate([LabelRow(1, cells)], {str(t["id"]): t for t in found}, "review queue")
    if problems:
        raise AuditError(problems[0].removeprefix("line 1: "))
    stored = [{**row, "labeller": labeller} for row in rows]
    key = f"{datetime.now(UTC).date().isoformat()}/{labeller}"
    try:
        async with engine.begin() as conn:
            run_id = (await conn.execute(FIND_RUN, {"key": key})).scalar_one_or_none()
            if run_id is None:
                run_id = await audit_store.insert_run(conn, _run(key, labeller))
            replaced = await audit_store.upsert_labels(conn, int(run_id), stored)
    except SQLAlchemyError as exc:
        raise StoreError(f"could not store the label: {exc}") from exc
    return {"stored": True, "replaced": bool(replaced), "run_id": int(run_id)}


def _run(key: str, labeller: str) -> dict[str, Any]:
    return {
        "kind": "human",
        "verifier": "human",
        "deciding_model": None,
        "sample_size": 0,
        "seed": REVIEW_SEED,
        "since": None,
        "until": None,
        "knowledge_base": None,
        "config": {"review_queue": key, "labeller": labeller},
        "complete": True,
        "error": None,
    }


def parse_label(body: Mapping[str, Any]) -> ReviewLabel:
    """A label as the page posts it; `AuditError` for a malformed one."""
    kind = body.get("kind")
    if kind not in LABELS:
        raise AuditError("kind must be 'sentence' or 'abstention'")
    position = body.get("position")
    if kind == "sentence" and (not isinstance(position, int) or isinstance(position, bool) or position < 0):
        raise AuditError("a sentence label needs the sentence's position")
    part = body.get("part")
    if part is not None and not isinstance(part, str):
        raise AuditError("part must be text or null")
    fields: Sequence[tuple[str, Any]] = [(name, body.get(name)) for name in ("trace_id", "label", "labeller")]
    for name, value in fields:
        if not isinstance(value, str) or not value.strip():
            raise AuditError(f"{name} is missing")
    sentence = body.get("sentence")
    return ReviewLabel(
        trace_id=str(body["trace_id"]),
        kind=kind,
        label=str(body["label"]),
        labeller=str(body["labeller"]),
        position=position if kind == "sentence" else None,
        part=part if kind == "abstention" else None,
        sentence=sentence if isinstance(sentence, str) else "",
    )
