"""Session leases and workers: which sessions must run, which worker runs each, who is there.

A session that must run (the API took a message for it, the user resumed it) gets a row in
``session_leases``. Workers claim rows with ``SELECT … FOR UPDATE SKIP LOCKED`` (two workers
never wait on, or take, the same row), hold them by a lease they extend with heartbeats, and
release them when the agent ends or needs the user. A worker killed with ``kill -9`` stops
heartbeating: once its lease expires the row is claimable again and another worker resumes the
session from the log. ``lease_id`` is a fencing token, new at every claim: a heartbeat or a
release with an old one is refused, so a worker that lost its lease learns it and stops.

``attempts`` counts claims since the last clean release, so a session that kills every
worker that runs it is noticed (the worker gives up on it after a limit) instead of looping.
``requested_at`` later than ``claimed_at`` means the session was asked to run again while it
ran (a message arrived as the agent finished): its release keeps the row, so that request is
not lost. A request sends ``NOTIFY chronicle_runs`` (payload: the session id only) so idle
workers wake at once; they also poll, since notifications are lost while disconnected.

``workers`` lists the worker processes present (a row refreshed by each worker's heartbeat,
removed when it stops) for ``/health/ready`` and operators.

As 0003 asks of every migration: the tables belong to ``chronicle_owner``; ``chronicle_app``
reads them and changes them only through the SECURITY DEFINER functions below.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-18
"""

from app.migrations.helpers import run, search_path, sql_file

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TABLES = r"""
CREATE TABLE session_leases (
    session_id       uuid        PRIMARY KEY REFERENCES sessions (id),
    requested_at     timestamptz NOT NULL DEFAULT now(),
    reason           text        NOT NULL,
    owner            text,
    lease_id         uuid,
    claimed_at       timestamptz,
    heartbeat_at     timestamptz,
    lease_expires_at timestamptz,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    CHECK ((owner IS NULL) = (lease_id IS NULL))
);
CREATE INDEX session_leases_due ON session_leases (lease_expires_at NULLS FIRST, requested_at);
COMMENT ON TABLE session_leases IS
    'One row per session that must run; a worker holds it by a lease (app/store/session_leases.py).';
COMMENT ON COLUMN session_leases.owner IS 'the worker id holding the lease (NULL: waiting)';
COMMENT ON COLUMN session_leases.lease_id IS
    'fencing token, new at every claim: heartbeats and releases must name it';
COMMENT ON COLUMN session_leases.lease_expires_at IS
    'claimable again from then (a held lease: unless renewed; a waiting row: retry after)';
COMMENT ON COLUMN session_leases.attempts IS 'claims since the last clean release';

CREATE TABLE workers (
    worker_id    text        PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    role         text        NOT NULL,
    started_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    running      integer     NOT NULL DEFAULT 0,
    capacity     integer     NOT NULL DEFAULT 0
);
COMMENT ON TABLE workers IS
    'Worker processes present: refreshed by their heartbeat, removed when they stop.';
"""

REQUEST_RUN = sql_file("functions/chronicle_request_run.sql")

CLAIM_RUN = sql_file("functions/chronicle_claim_run.sql")

HEARTBEAT_RUN = sql_file("functions/chronicle_heartbeat_run.sql")

# 'ended': the agent finished, awaits the user or failed; the row goes unless the session was
# requested again since the claim. 'handed_back': another worker should run it (this one
# drains, or the session was busy), claimable after p_retry_after seconds.
RELEASE_RUN = sql_file("functions/chronicle_release_run.sql")

WORKER_SEEN = sql_file("functions/chronicle_worker_seen.sql")

WORKER_GONE = sql_file("functions/chronicle_worker_gone.sql")

FUNCTIONS = (
    "chronicle_request_run(uuid, text)",
    "chronicle_claim_run(text, double precision)",
    "chronicle_heartbeat_run(uuid, uuid, double precision)",
    "chronicle_release_run(uuid, uuid, text, double precision)",
    "chronicle_worker_seen(text, text, integer, text, integer, integer, double precision)",
    "chronicle_worker_gone(text)",
)

OWNERSHIP = "\n".join(
    [
        "ALTER TABLE session_leases OWNER TO chronicle_owner;",
        "ALTER TABLE workers OWNER TO chronicle_owner;",
        *(f"ALTER FUNCTION {f} OWNER TO chronicle_owner;" for f in FUNCTIONS),
    ]
)

# Functions are executable by PUBLIC unless revoked: they are for chronicle_app only. The
# analyst reads views and session_state only (test_analyst_access): leases and workers are
# operational state, not granted to it.
APP_PRIVILEGES = "\n".join(
    [
        "REVOKE ALL ON session_leases, workers FROM PUBLIC, chronicle_app;",
        "GRANT SELECT ON session_leases, workers TO chronicle_app;",
        *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC;" for f in FUNCTIONS),
        *(f"GRANT EXECUTE ON FUNCTION {f} TO chronicle_app;" for f in FUNCTIONS),
    ]
)

DROP = "\n".join(
    [
        *(f"DROP FUNCTION {f};" for f in FUNCTIONS),
        "DROP TABLE workers;",
        "DROP TABLE session_leases;",
    ]
)


def upgrade() -> None:
    path = search_path()
    run(TABLES)
    for function in (REQUEST_RUN, CLAIM_RUN, HEARTBEAT_RUN, RELEASE_RUN, WORKER_SEEN, WORKER_GONE):
        run(function.replace("{search_path}", path))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    run(DROP)
