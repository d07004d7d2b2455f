"""The event ledger: each chat-platform question answered exactly once across replicas (`rag.tracking.events`).

One row per question (`platform`, `key`), whichever platform events announce it; every event id
seen for it is kept in `event_ids`. A replica owns a row while `status` is 'claimed' and its lease
(`lease_until`, on the database's clock) runs; another replica may take it over once the lease has
run out. `claim_token` changes with every claim and takeover: it is how one `INSERT ... ON
CONFLICT` statement tells its caller whether that statement itself won the row.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE platform_events (
            id bigserial PRIMARY KEY,
            platform text NOT NULL,
            key text NOT NULL,
            event_ids text[] NOT NULL DEFAULT '{}',
            team text,
            conversation text,
            thread text,
            asker text,
            question text,
            payload jsonb NOT NULL,
            status text NOT NULL CHECK (status IN ('claimed', 'answered', 'failed', 'deleted')),
            owner text NOT NULL,
            attempt integer NOT NULL DEFAULT 1,
            lease_until timestamptz NOT NULL,
            claim_token uuid NOT NULL DEFAULT gen_random_uuid(),
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            trace_id uuid,
            reply jsonb NOT NULL DEFAULT '{}',
            error text,
            CONSTRAINT platform_events_one_row_per_key UNIQUE (platform, key)
        )
        """
    )
    # Polling for claims whose lease ran out, per platform; answered rows stay out of the index.
    op.execute(
        "CREATE INDEX platform_events_expired_leases ON platform_events (platform, lease_until) "
        "WHERE status = 'claimed'"
    )
    op.execute(
        "CREATE INDEX platform_events_threads ON platform_events (platform, team, conversation, thread, created_at)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS platform_events")
