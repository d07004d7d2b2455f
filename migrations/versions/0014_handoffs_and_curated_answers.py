"""Hand-offs to a person and curated answers (issue 24, "closing the loop").

`handoffs`: a question passed to a person from the chat (an "Ask a person" click on a refusal, a
low-confidence answer or a 👎). It names the trace, where the asker is waiting (`reply_to`, the
platform's own address: a Slack channel and thread, a Teams conversation reference), where the
triage post went (`triage`), and the expert's reply once given. One open hand-off per trace and
asker: a second click finds the first.

`curated_answers`: an expert's answer to a question, kept as its own record (author, dates, expiry,
access groups, the hand-off it came from) and indexed as a document of source kind `curated`
(`document_id`; `documents.source` is ``curated:<id>``), so it is searched, gated and cited like any
document. Expiring or removing one deletes its document; the record of an expired one stays. One
curated answer per hand-off: a reply form sent twice keeps one.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE curated_answers (
            id serial PRIMARY KEY,
            kb_id integer NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
            document_id bigint REFERENCES documents(id) ON DELETE SET NULL,
            question text NOT NULL,
            answer text NOT NULL,
            author text NOT NULL,
            author_name text NOT NULL,
            access_groups text[] NOT NULL DEFAULT '{}',
            handoff_id uuid UNIQUE,
            trace_id uuid,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz
        )
        """
    )
    op.execute(
        """
        CREATE TABLE handoffs (
            id uuid PRIMARY KEY,
            trace_id uuid NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
            platform text NOT NULL,
            asker text NOT NULL,
            reason text NOT NULL CHECK (reason IN ('abstained', 'low_confidence', 'down_vote', 'asked')),
            reply_to jsonb NOT NULL,
            triage jsonb,
            status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'replied')),
            reply_text text,
            replied_by text,
            replied_by_name text,
            replied_at timestamptz,
            curated_id integer REFERENCES curated_answers(id) ON DELETE SET NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (trace_id, asker)
        )
        """
    )
    op.execute("CREATE INDEX handoffs_created_at ON handoffs (created_at)")
    op.execute("CREATE INDEX curated_answers_trace_id ON curated_answers (trace_id)")


def downgrade() -> None:
    op.execute("DELETE FROM documents WHERE format = 'curated'")  # else searchable, with no record to remove them
    op.execute("DROP TABLE IF EXISTS handoffs")
    op.execute("DROP TABLE IF EXISTS curated_answers")
