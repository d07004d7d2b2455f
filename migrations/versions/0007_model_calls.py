"""What an answer cost: every language-model request made for it, and the answer's totals on its trace.

`model_calls` holds one row per request (`rag.model.answers.ModelCall`), numbered by `position` in the
order they were made: what asked (`purpose`: writer, judge, ...), the model, tokens in and out,
the time taken, the outcome (ok, malformed, failed, skipped) with the structured-output `mode` and
the `error`, and the `cost` in the currency of CANDOR_LLM_COSTS, NULL when that setting does not
price the model. `outcome` carries no CHECK: a new outcome must never cost a trace its record.

On `traces`, the totals over those calls:

- `prompt_tokens`, `completion_tokens`: the sums; 0 for an answer that made no model call (the
  offline stages).
- `cost`: the sum of the calls' costs; 0 when there were no calls (an offline answer costs
  nothing), NULL when any call was to an unpriced model (a partial sum would understate it).

Traces written before this migration, or replayed from a spool record written before it, keep
NULL in all three and have no `model_calls` rows: not recorded, which is not the same as none
(their `answer` jsonb keeps whatever calls the answer listed).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TRACE_TOTALS = ("prompt_tokens", "completion_tokens", "cost")


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS model_calls (
            id bigserial PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            position integer NOT NULL,
            purpose text NOT NULL,
            model text NOT NULL,
            prompt_tokens integer NOT NULL,
            completion_tokens integer NOT NULL,
            ms double precision,
            outcome text NOT NULL,
            mode text NOT NULL DEFAULT '',
            error text,
            cost double precision
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX IF NOT EXISTS model_calls_trace_id ON model_calls (trace_id, position)")
    op.execute(
        "ALTER TABLE traces ADD COLUMN IF NOT EXISTS prompt_tokens integer, "
        "ADD COLUMN IF NOT EXISTS completion_tokens integer, ADD COLUMN IF NOT EXISTS cost double precision"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS model_calls")
    op.execute("ALTER TABLE traces " + ", ".join(f"DROP COLUMN IF EXISTS {column}" for column in TRACE_TOTALS))
