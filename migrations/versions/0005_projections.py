"""Projections: their bookkeeping (``projections``) and the first one, ``session_state``.

A projection (app/projections) is a read model built from the log by a runner that writes
its rows and its position in the same transaction. ``projections`` holds, per projection, the
code version that built its tables, the position ``(tx, global_position)`` of the last event
applied, when that event was recorded (for lag in seconds), and who applies it (informative:
whether a runner is live is its advisory lock, see app/projections/sql/projection_store.py).

``session_state`` is one row per session for the session list, the API and SQL readers.
Everything in it is derived: a rebuild (``chronicle projections rebuild session_state``)
recomputes it from the log. ``status`` says where the agent is: ``working`` while the
controller last said loading / running / rate_limited (readers show ``running`` while a process
holds the session's claim and ``interrupted`` otherwise), else ``finished``,
``awaiting_user_input``, ``paused``, ``stopped``, ``limit`` (stopped at the iteration or cost
limit) or ``error``.

Like every table since 0003 both belong to ``chronicle_owner``. ``chronicle_app`` may read and
write their rows (the runner runs as the application; a rebuild replaces every row of
``session_state`` in one transaction) but not truncate, alter or drop them. An existing
``chronicle_analyst`` role (the read-only analyst of the analytics views) may read
``session_state``; a migration that creates that role later grants it there.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-16
"""

from app.migrations.helpers import run

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

PROJECTIONS_TABLE = r"""
CREATE TABLE projections (
    name             text        PRIMARY KEY,
    version          integer     NOT NULL CHECK (version >= 1),
    tx               xid8        NOT NULL DEFAULT '0',
    global_position  bigint      NOT NULL DEFAULT 0,
    last_event_at    timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    rebuilt_at       timestamptz,
    runner           text
);
COMMENT ON TABLE projections IS
    'One row per projection: the version that built its tables and the position (tx, '
    'global_position) of the last event applied, written in the transaction that applied it.';
COMMENT ON COLUMN projections.last_event_at IS 'created_at of the last event applied';
COMMENT ON COLUMN projections.runner IS
    'host and pid of the process that last took the projection''s lock (informative)';
"""

SESSION_STATE_TABLE = r"""
CREATE TABLE session_state (
    session_id      uuid        PRIMARY KEY,
    title           text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    ended_at        timestamptz,
    status          text CHECK (status IN ('working', 'finished', 'awaiting_user_input',
                                           'paused', 'stopped', 'limit', 'error')),
    agent_state     text,
    state_reason    text,
    agent           text,
    model           text,
    runtime         text,
    workspace       text,
    steps           integer     NOT NULL DEFAULT 0,
    model_calls     integer     NOT NULL DEFAULT 0,
    failed_calls    integer     NOT NULL DEFAULT 0,
    priced_calls    integer     NOT NULL DEFAULT 0,
    unpriced_calls  integer     NOT NULL DEFAULT 0,
    input_tokens    bigint      NOT NULL DEFAULT 0,
    output_tokens   bigint      NOT NULL DEFAULT 0,
    cached_tokens   bigint      NOT NULL DEFAULT 0,
    cost_usd        numeric,
    errors          integer     NOT NULL DEFAULT 0,
    last_seq        integer     NOT NULL,
    replay_of       uuid,
    forked_from     uuid,
    evaluation_run  text
);
COMMENT ON TABLE session_state IS
    'One row per session, derived from the log by the session_state projection '
    '(chronicle projections rebuild session_state recomputes it).';
COMMENT ON COLUMN session_state.created_at IS 'when the session''s first event was recorded';
COMMENT ON COLUMN session_state.updated_at IS 'when its last event was recorded';
COMMENT ON COLUMN session_state.ended_at IS
    'when the agent last stopped working (null while it works, or never did)';
COMMENT ON COLUMN session_state.status IS
    'working (shown as running while a process holds the session''s claim, else '
    'interrupted), finished, awaiting_user_input, paused, stopped, limit, error';
COMMENT ON COLUMN session_state.agent_state IS 'the controller''s last agent.state';
COMMENT ON COLUMN session_state.state_reason IS 'the reason it gave, as recorded';
COMMENT ON COLUMN session_state.model IS
    'the model of the last model call (before any: the configured one)';
COMMENT ON COLUMN session_state.steps IS 'actions the agent took (think and finish included)';
COMMENT ON COLUMN session_state.failed_calls IS 'model calls that failed for good (error set)';
COMMENT ON COLUMN session_state.priced_calls IS 'model calls with a known cost';
COMMENT ON COLUMN session_state.unpriced_calls IS
    'answered model calls whose cost is unknown (a model without a price)';
COMMENT ON COLUMN session_state.cost_usd IS
    'sum of the known costs; null when no call has a price and some have none';
COMMENT ON COLUMN session_state.errors IS 'error events (actions that could not be carried out)';
COMMENT ON COLUMN session_state.last_seq IS 'seq of its last event: the number of events';
"""

# The session list reads the newest first, optionally of one status or one model: each is
# an index range in created_at order (tests/integration/projections/test_query_plans.py).
SESSION_STATE_INDEXES = r"""
CREATE INDEX session_state_newest ON session_state (created_at DESC, session_id DESC);
CREATE INDEX session_state_by_status
    ON session_state (status, created_at DESC, session_id DESC);
CREATE INDEX session_state_by_model ON session_state (model, created_at DESC, session_id DESC);
"""

OWNERSHIP = r"""
ALTER TABLE projections OWNER TO chronicle_owner;
ALTER TABLE session_state OWNER TO chronicle_owner;
"""

APP_PRIVILEGES = r"""
REVOKE ALL ON projections, session_state FROM PUBLIC, chronicle_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON projections, session_state TO chronicle_app;
"""

ANALYST_PRIVILEGES = r"""
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_analyst') THEN
        GRANT SELECT ON session_state TO chronicle_analyst;
    END IF;
END
$$;
"""

DROP_TABLES = "DROP TABLE session_state; DROP TABLE projections;"


def upgrade() -> None:
    run(PROJECTIONS_TABLE)
    run(SESSION_STATE_TABLE)
    run(SESSION_STATE_INDEXES)
    run(OWNERSHIP)
    run(APP_PRIVILEGES)
    run(ANALYST_PRIVILEGES)


def downgrade() -> None:
    run(DROP_TABLES)
