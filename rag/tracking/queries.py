"""The SQL of the tracking store, against the tables of migration 0002 (and 0007's model calls).

Parameters are the records of `rag.tracking.records` as they are (JSON data); the casts turn
strings into uuids, timestamps and dates, and jsonb columns take JSON text.
"""

from __future__ import annotations

from sqlalchemy import text

INSERT_TRACE = text(
    "INSERT INTO traces (id, created_at, platform, asker, conversation, thread, question, rewritten_question, "
    "parts, scope, route, answer_text, answer, config, models, timings, total_ms, attempts, recorded_late, "
    "prompt_tokens, completion_tokens, cost) "
    "VALUES (CAST(:id AS uuid), CAST(:created_at AS timestamptz), :platform, :asker, :conversation, :thread, "
    ":question, :rewritten_question, CAST(:parts AS jsonb), CAST(:scope AS jsonb), :route, :answer_text, "
    "CAST(:answer AS jsonb), CAST(:config AS jsonb), CAST(:models AS jsonb), CAST(:timings AS jsonb), "
    ":total_ms, :attempts, :recorded_late, :prompt_tokens, :completion_tokens, :cost) "
    "ON CONFLICT (id) DO NOTHING RETURNING id"
)

INSERT_GATE = text(
    "INSERT INTO gate_outcomes (trace_id, attempt, position, gate, passed, score, details) "
    "VALUES (CAST(:trace_id AS uuid), :attempt, :position, :gate, :passed, :score, CAST(:details AS jsonb))"
)

INSERT_SOURCE = text(
    "INSERT INTO trace_sources (trace_id, n, chunk_id, document_id, document, title, heading, effective_date, score) "
    "VALUES (CAST(:trace_id AS uuid), :n, :chunk_id, :document_id, :document, :title, :heading, "
    "CAST(:effective_date AS date), :score)"
)

INSERT_DROPPED = text(
    "INSERT INTO dropped_sentences (trace_id, attempt, text, citations, score, reasons, stage) "
    "VALUES (CAST(:trace_id AS uuid), :attempt, :text, CAST(:citations AS integer[]), :score, "
    "CAST(:reasons AS text[]), :stage)"
)

INSERT_MODEL_CALL = text(
    "INSERT INTO model_calls (trace_id, position, purpose, model, prompt_tokens, completion_tokens, ms, outcome, "
    "mode, error, cost) VALUES (CAST(:trace_id AS uuid), :position, :purpose, :model, :prompt_tokens, "
    ":completion_tokens, :ms, :outcome, :mode, :error, :cost)"
)

# A vote replaces the same user's earlier vote on the trace, unless it is older than that vote
# (a spooled vote replayed after a newer one went straight in).
UPSERT_FEEDBACK = text(
    "INSERT INTO feedback (trace_id, rating, user_id, platform, comment, created_at, updated_at) "
    "VALUES (CAST(:trace_id AS uuid), :rating, :user_id, :platform, :comment, CAST(:at AS timestamptz), "
    "CAST(:at AS timestamptz)) "
    "ON CONFLICT ON CONSTRAINT feedback_one_vote_per_user DO UPDATE SET rating = EXCLUDED.rating, "
    "platform = EXCLUDED.platform, comment = EXCLUDED.comment, updated_at = EXCLUDED.updated_at "
    "WHERE feedback.updated_at <= EXCLUDED.updated_at RETURNING id"
)

INSERT_EVAL_RUN = text(
    "INSERT INTO eval_runs (golden, knowledge_base, config, summary, per_question) "
    "VALUES (:golden, :knowledge_base, CAST(:config AS jsonb), CAST(:summary AS jsonb), "
    "CAST(:per_question AS jsonb)) RETURNING id"
)

SELECT_TRACE = text(
    "SELECT id, created_at, platform, asker, conversation, thread, question, rewritten_question, parts, scope, "
    "route, answer_text, answer, config, models, timings, total_ms, attempts, recorded_late, prompt_tokens, "
    "completion_tokens, cost, purged_at FROM traces WHERE id = CAST(:id AS uuid)"
)

SELECT_TRACE_ASKER = text("SELECT asker FROM traces WHERE id = CAST(:id AS uuid)")

SELECT_GATES = text(
    "SELECT attempt, position, gate, passed, score, details FROM gate_outcomes "
    "WHERE trace_id = CAST(:id AS uuid) ORDER BY attempt, position"
)

SELECT_SOURCES = text(
    "SELECT n, chunk_id, document_id, document, title, heading, effective_date, score FROM trace_sources "
    "WHERE trace_id = CAST(:id AS uuid) ORDER BY n"
)

SELECT_DROPPED = text(
    "SELECT attempt, text, citations, score, reasons, stage FROM dropped_sentences "
    "WHERE trace_id = CAST(:id AS uuid) ORDER BY attempt, id"
)

SELECT_MODEL_CALLS = text(
    "SELECT position, purpose, model, prompt_tokens, completion_tokens, ms, outcome, mode, error, cost "
    "FROM model_calls WHERE trace_id = CAST(:id AS uuid) ORDER BY position"
)

SELECT_FEEDBACK = text(
    "SELECT rating, user_id, platform, comment, created_at, updated_at FROM feedback "
    "WHERE trace_id = CAST(:id AS uuid) ORDER BY created_at, id"
)

SELECT_EVAL_RUNS = text(
    "SELECT id, created_at, golden, knowledge_base, config, summary, per_question FROM eval_runs "
    "ORDER BY created_at DESC, id DESC LIMIT :limit"
)
