"""Audits of delivered answers and abstentions (`candor audit answers`), and labels people gave.

docs/design.md's hallucination rate is measured by re-verifying a sample of delivered sentences with a
verifier independent of the gate; these tables hold those re-verifications, the relaxed re-checks
of abstentions, and the labels people import from a labelled CSV.

- `audit_runs`: one row per audit (`kind` 'verifier': a re-verification by `verifier`; 'human': one
  import of labels), with what was asked (sample size, seed, window, knowledge base), the command's
  settings (`config`), and whether it finished (`complete` false: the verifier went away mid-run;
  the rows it judged are kept, `error` says why it stopped).
- `audit_sentences`: one delivered sentence re-verified in a run: its position in the trace's
  `answer -> 'sentences'`, text and citations as delivered, the verdict (`supported` NULL when the
  verifier could not judge it: counted as not judged, never guessed), and `independent`: whether
  the run's deciding model is none of those of that trace's gate (`traces.models ->> 'verifier'`).
- `audit_abstentions`: one abstention (`part` NULL: the whole question) or unanswered part re-checked
  (`label` 'possibly_answerable' or 'true_gap' from relaxed retrieval, with its `evidence`).
- `human_labels`: a person's label on one sentence (`position`) or one abstention (`position` NULL;
  `part` the unanswered part, NULL for the whole question). One label per item: a later import
  replaces the earlier one (`human_labels_item`).

Every row goes with its trace (ON DELETE CASCADE), and with its run.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLES = ("human_labels", "audit_abstentions", "audit_sentences", "audit_runs")


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS audit_runs (
            id bigserial PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now(),
            kind text NOT NULL CHECK (kind IN ('verifier', 'human')),
            verifier text NOT NULL,
            deciding_model text,
            sample_size integer,
            seed text,
            since timestamptz,
            until timestamptz,
            knowledge_base text,
            config jsonb NOT NULL DEFAULT '{}',
            complete boolean NOT NULL DEFAULT true,
            error text
        )
        """
    )
    op.execute("CREATE INDEX IF NOT EXISTS audit_runs_verifier ON audit_runs (verifier)")
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS audit_sentences (
            id bigserial PRIMARY KEY,
            run_id bigint NOT NULL REFERENCES audit_runs(id) ON DELETE CASCADE,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            position integer NOT NULL CHECK (position >= 0),
            text text NOT NULL,
            citations integer[] NOT NULL DEFAULT '{}',
            supported boolean,
            score double precision,
            reasons text[] NOT NULL DEFAULT '{}',
            independent boolean NOT NULL,
            CONSTRAINT audit_sentences_once_per_run UNIQUE (run_id, trace_id, position)
        )
        """
    )
    op.execute("CREATE INDEX IF NOT EXISTS audit_sentences_trace ON audit_sentences (trace_id, position)")
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS audit_abstentions (
            id bigserial PRIMARY KEY,
            run_id bigint NOT NULL REFERENCES audit_runs(id) ON DELETE CASCADE,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            part text,
            label text NOT NULL
                CHECK (label IN ('possibly_answerable', 'true_gap', 'correct_abstention', 'wrong_abstention')),
            score double precision,
            evidence jsonb NOT NULL DEFAULT '[]'
        )
        """
    )
    op.execute("CREATE INDEX IF NOT EXISTS audit_abstentions_trace ON audit_abstentions (trace_id)")
    op.execute("CREATE INDEX IF NOT EXISTS audit_abstentions_run ON audit_abstentions (run_id)")
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS human_labels (
            id bigserial PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            run_id bigint REFERENCES audit_runs(id) ON DELETE SET NULL,
            position integer CHECK (position >= 0),
            part text,
            label text NOT NULL CHECK (
                (position IS NOT NULL AND part IS NULL AND label IN ('supported', 'unsupported'))
                OR (position IS NULL AND label IN ('correct_abstention', 'wrong_abstention'))
            ),
            labeller text,
            source_file text,
            imported_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT human_labels_item UNIQUE NULLS NOT DISTINCT (trace_id, position, part)
        )
        """
    )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table}")
