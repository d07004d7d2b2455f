"""The operational record: traces, gate outcomes, cited sources, dropped sentences, feedback, eval runs.

Needs Postgres 15 or newer (`UNIQUE NULLS NOT DISTINCT` on feedback, so that anonymous votes also
replace the earlier vote on the same trace).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLES = ("eval_runs", "feedback", "dropped_sentences", "trace_sources", "gate_outcomes", "traces")


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE traces (
            id uuid PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now(),
            platform text,
            asker text,
            conversation text,
            thread text,
            question text NOT NULL,
            rewritten_question text,
            parts jsonb,
            scope jsonb,
            route text NOT NULL CHECK (route IN ('answered', 'low_confidence', 'abstained')),
            answer_text text NOT NULL,
            answer jsonb NOT NULL,
            config jsonb NOT NULL DEFAULT '{}',
            models jsonb NOT NULL DEFAULT '{}',
            timings jsonb NOT NULL DEFAULT '{}',
            total_ms double precision,
            attempts integer,
            recorded_late boolean NOT NULL DEFAULT false
        )
        """
    )
    op.execute("CREATE INDEX traces_created_at ON traces (created_at)")
    op.execute(
        """
        CREATE TABLE gate_outcomes (
            id bigserial PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            attempt integer NOT NULL,
            position integer NOT NULL,
            gate text NOT NULL,
            passed boolean NOT NULL,
            score double precision,
            details jsonb NOT NULL DEFAULT '{}'
        )
        """
    )
    op.execute("CREATE INDEX gate_outcomes_trace_id ON gate_outcomes (trace_id)")
    op.execute("CREATE INDEX gate_outcomes_gate ON gate_outcomes (gate)")
    # chunk_id and document_id carry no foreign key on purpose: re-ingest deletes chunks, and the
    # record of what an answer cited must outlive them.
    op.execute(
        """
        CREATE TABLE trace_sources (
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            n integer NOT NULL,
            chunk_id bigint,
            document_id bigint,
            document text NOT NULL,
            title text,
            heading text,
            effective_date date,
            score double precision,
            PRIMARY KEY (trace_id, n)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE dropped_sentences (
            id bigserial PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            attempt integer NOT NULL,
            text text NOT NULL,
            citations integer[] NOT NULL DEFAULT '{}',
            score double precision,
            reasons text[] NOT NULL DEFAULT '{}'
        )
        """
    )
    op.execute("CREATE INDEX dropped_sentences_trace_id ON dropped_sentences (trace_id)")
    op.execute(
        """
        CREATE TABLE feedback (
            id bigserial PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            rating smallint NOT NULL CHECK (rating IN (-1, 1)),
            user_id text,
            platform text,
            comment text,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT feedback_one_vote_per_user UNIQUE NULLS NOT DISTINCT (trace_id, user_id)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE eval_runs (
            id bigserial PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now(),
            golden text NOT NULL,
            knowledge_base text,
            config jsonb NOT NULL DEFAULT '{}',
            summary jsonb NOT NULL DEFAULT '{}',
            per_question jsonb NOT NULL DEFAULT '[]'
        )
        """
    )
    op.execute("CREATE INDEX eval_runs_created_at ON eval_runs (created_at)")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table}")
