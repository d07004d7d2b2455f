"""The SQL of `candor audit answers` (migration 0008): picking samples, storing runs, storing labels.

Samples start from the report's `scoped` CTE (`rag.insights.report.queries.SCOPED`), so an audit
of `--since 30d --kb NAME` covers exactly the answers `candor report` with the same window counts.
The order is `md5(id || seed)`: the same seed over the same answers picks the same sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import StoreError
from rag.insights.report.queries import SCOPED
from rag.tracking.records import dumps

_DELIVERED = """
SELECT t.id::text AS id, t.created_at, t.question, t.answer -> 'sentences' AS sentences,
       t.answer -> 'sources' AS sources, t.models ->> 'verifier' AS gate_verifier,
       t.models ->> 'synthesizer' AS writer, t.scope
FROM scoped s JOIN traces t ON t.id = s.id
WHERE s.route IN ('answered', 'low_confidence')
  AND jsonb_typeof(t.answer -> 'sentences') = 'array' AND jsonb_array_length(t.answer -> 'sentences') > 0
  AND ({fresh})
ORDER BY md5(t.id::text || :seed), t.id
LIMIT :limit
"""

# Not yet audited by this verifier: some delivered sentence has no judgement of it (a sentence it
# could not judge, or one a run that stopped never reached, is picked again).
_NOT_VERIFIED = """
CAST(:again AS boolean) OR (
    SELECT count(DISTINCT a.position) FROM audit_sentences a JOIN audit_runs r ON r.id = a.run_id
    WHERE a.trace_id = t.id AND r.kind = 'verifier' AND r.verifier = :verifier AND a.supported IS NOT NULL
) < jsonb_array_length(t.answer -> 'sentences')
"""
# Not yet labelled in full: some delivered sentence has no label (a row left blank is exported again).
_NOT_LABELLED = """
CAST(:again AS boolean) OR (
    SELECT count(*) FROM human_labels h WHERE h.trace_id = t.id AND h.position IS NOT NULL
) < jsonb_array_length(t.answer -> 'sentences')
"""

_ABSTAINED = """
SELECT t.id::text AS id, t.created_at, t.question, t.rewritten_question, t.route, t.scope,
       t.answer -> 'unanswered_parts' AS unanswered_parts
FROM scoped s JOIN traces t ON t.id = s.id
WHERE (s.route = 'abstained'
       OR (jsonb_typeof(t.answer -> 'unanswered_parts') = 'array'
           AND jsonb_array_length(t.answer -> 'unanswered_parts') > 0))
  AND ({fresh})
ORDER BY md5(t.id::text || :seed), t.id
LIMIT :limit
"""
# An abstained trace is one item (the question), a delivered one an item per distinct unanswered part
# (a part stated twice is re-checked and labelled once): a trace is picked while some item of it has
# not been re-checked (labelled). Distinct is compared with distinct.
_ITEMS = """CASE WHEN s.route = 'abstained' THEN 1
     WHEN jsonb_typeof(t.answer -> 'unanswered_parts') = 'array'
     THEN (SELECT count(DISTINCT e.part) FROM jsonb_array_elements_text(t.answer -> 'unanswered_parts') AS e(part))
     ELSE 0 END"""
_NOT_RECHECKED = f"""
CAST(:again AS boolean) OR (
    SELECT count(DISTINCT COALESCE(a.part, '')) FROM audit_abstentions a JOIN audit_runs r ON r.id = a.run_id
    WHERE a.trace_id = t.id AND r.kind = 'verifier'
) < {_ITEMS}
"""
_NOT_LABELLED_ABSTENTION = f"""
CAST(:again AS boolean) OR (
    SELECT count(*) FROM human_labels h WHERE h.trace_id = t.id AND h.position IS NULL
) < {_ITEMS}
"""


def _sample(body: str, fresh: str) -> TextClause:
    return text(SCOPED + body.format(fresh=fresh))


DELIVERED_TO_VERIFY = _sample(_DELIVERED, _NOT_VERIFIED)
DELIVERED_TO_LABEL = _sample(_DELIVERED, _NOT_LABELLED)
ABSTAINED_TO_RECHECK = _sample(_ABSTAINED, _NOT_RECHECKED)
ABSTAINED_TO_LABEL = _sample(_ABSTAINED, _NOT_LABELLED_ABSTENTION)

INSERT_RUN = text(
    """
    INSERT INTO audit_runs (kind, verifier, deciding_model, sample_size, seed, since, until, knowledge_base,
                            config, complete, error)
    VALUES (:kind, :verifier, :deciding_model, :sample_size, :seed, :since, :until, :knowledge_base,
            CAST(:config AS jsonb), :complete, :error)
    RETURNING id
    """
)
INSERT_SENTENCE = text(
    """
    INSERT INTO audit_sentences (run_id, trace_id, position, text, citations, supported, score, reasons, independent)
    VALUES (:run_id, CAST(:trace_id AS uuid), :position, :text, :citations, :supported, :score, :reasons,
            :independent)
    """
)
INSERT_ABSTENTION = text(
    """
    INSERT INTO audit_abstentions (run_id, trace_id, part, label, score, evidence)
    VALUES (:run_id, CAST(:trace_id AS uuid), :part, :label, :score, CAST(:evidence AS jsonb))
    """
)
SELECT_LABELLED_TRACES = text(
    """
    SELECT id::text AS id, route, question, rewritten_question, answer -> 'sentences' AS sentences,
           answer -> 'unanswered_parts' AS unanswered_parts
    FROM traces WHERE id = ANY(CAST(:ids AS uuid[]))
    """
)
UPSERT_LABEL = text(
    """
    INSERT INTO human_labels (trace_id, run_id, position, part, label, labeller, source_file)
    VALUES (CAST(:trace_id AS uuid), :run_id, :position, :part, :label, :labeller, :source_file)
    ON CONFLICT ON CONSTRAINT human_labels_item DO UPDATE
    SET run_id = EXCLUDED.run_id, label = EXCLUDED.label, labeller = EXCLUDED.labeller,
        source_file = EXCLUDED.source_file, imported_at = now()
    RETURNING (xmax = 0) AS inserted
    """
)


async def select(engine: AsyncEngine, query: TextClause, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of one read, as dicts; `StoreError` when the database cannot answer."""
    try:
        async with engine.connect() as conn:
            return [dict(row._mapping) for row in await conn.execute(query, dict(params))]
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read the traces to audit: {_describe(exc)}") from exc


def window_params(
    since: Any, until: Any, kb: str | None, *, seed: str, limit: int, again: bool, verifier: str = ""
) -> dict[str, Any]:
    """The parameters every sample query takes (the report's window ones, ungrouped)."""
    return {
        "since": since,
        "until": until,
        "unit": None,
        "kb": kb,
        "seed": seed,
        "limit": limit,
        "again": again,
        "verifier": verifier,
    }


async def insert_run(conn: AsyncConnection, run: Mapping[str, Any]) -> int:
    params = {**run, "config": dumps(dict(run.get("config") or {}))}
    return int((await conn.execute(INSERT_RUN, params)).scalar_one())


async def insert_rows(
    conn: AsyncConnection, run_id: int, sentences: Sequence[Mapping[str, Any]], abstentions: Sequence[Mapping[str, Any]]
) -> None:
    if sentences:
        await conn.execute(INSERT_SENTENCE, [{**row, "run_id": run_id} for row in sentences])
    if abstentions:
        rows = [{**row, "run_id": run_id, "evidence": dumps(row["evidence"])} for row in abstentions]
        await conn.execute(INSERT_ABSTENTION, rows)


async def upsert_labels(conn: AsyncConnection, run_id: int, labels: Sequence[Mapping[str, Any]]) -> int:
    """Store each label, replacing the item's earlier one; returns how many replaced an earlier label."""
    replaced = 0
    for label in labels:
        inserted = (await conn.execute(UPSERT_LABEL, {**label, "run_id": run_id})).scalar_one()
        replaced += not inserted
    return replaced


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {cause}".strip()
