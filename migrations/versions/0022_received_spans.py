"""Spans received from instrumented applications (``POST /v1/traces``), and their event kind.

Issue 26, item 2 (app/interchange/otel/receiving.py, docs/opentelemetry.md "Receiving
traces"). ``otel_spans`` holds each span an OTLP client sent, once per user (the key is the
user, the trace and the span: the same span sent again is the same row), until its trace is
settled into the log: then ``settled_seq`` is the seq of the first event it became in
``session_id``. A trace settles when its root span arrives or after it has been quiet for a
while, its waiting spans appended in the order they ran, so the session does not depend on
the order an exporter sent them in. ``span`` is the span as received, JSON (bytes: a string
may hold a NUL, which jsonb cannot). The application's login reads and writes it.

The new kind ``otel.span`` (a span that is neither a model call nor a tool execution, kept
in its session) joins the kind functions.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import kinds_kept_by, render_kind_functions, run

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

EVENT_KINDS = (*kinds_kept_by("0014_app_role_limits.py", "EVENT_KINDS"), "otel.span")

TABLES = r"""
CREATE TABLE otel_spans (
    user_id      uuid        NOT NULL REFERENCES users (id),
    trace_id     text        NOT NULL CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    span_id      text        NOT NULL CHECK (span_id ~ '^[0-9a-f]{16}$'),
    is_root      boolean     NOT NULL,
    start_ns     bigint      NOT NULL,
    end_ns       bigint      NOT NULL,
    conversation text,
    span         bytea       NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    session_id   uuid,
    settled_seq  integer,
    PRIMARY KEY (user_id, trace_id, span_id)
);
CREATE INDEX otel_spans_waiting ON otel_spans (received_at) WHERE settled_seq IS NULL;
COMMENT ON TABLE otel_spans IS
    'Spans received over OTLP, each once per user, until their trace is settled into the log';
COMMENT ON COLUMN otel_spans.settled_seq IS
    'seq of the first event the span became in session_id; NULL while its trace waits';
"""

PRIVILEGES = r"""
ALTER TABLE otel_spans OWNER TO chronicle_owner;
REVOKE ALL ON otel_spans FROM PUBLIC, chronicle_app;
GRANT SELECT, INSERT, UPDATE (session_id, settled_seq) ON otel_spans TO chronicle_app;
"""


def upgrade() -> None:
    run(TABLES)
    run(PRIVILEGES)
    run(render_kind_functions(event_kinds=EVENT_KINDS))


def downgrade() -> None:
    run(render_kind_functions(event_kinds=kinds_kept_by("0014_app_role_limits.py", "EVENT_KINDS")))
    run("DROP TABLE otel_spans;")
