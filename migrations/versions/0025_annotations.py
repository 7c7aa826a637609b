"""Annotations: the ``annotation`` event kind, an index over it, and the ``annotations`` view.

Issue 27, item 8 (app/events/annotation.py, docs/web.md "Annotations and the review queue").
A person's label on a session or one of its events is an event of that session (its hash
chain covers it), so this revision adds no table:

- ``annotation`` joins the kind functions;
- ``events_annotations``, a partial index of the events table over that kind: the page reads
  a session's annotations without reading its events, and the session list's label, tag and
  "not reviewed" filters probe it per session;
- ``annotations``: one row per annotation (the session, its seq, the event it is about or
  NULL for the whole session, label, comment, tags, who and when), for ``chronicle_analyst``
  like every view. A fork's copies of its source's annotations (``replayed_from``) are left
  out: they were written about the source.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import kinds_kept_by, render_kind_functions, run, sql_file

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

EVENT_KINDS = (*kinds_kept_by("0022_received_spans.py", "EVENT_KINDS"), "annotation")

INDEX = r"""
CREATE INDEX events_annotations ON events (session_id, seq) WHERE kind = 'annotation';
"""

PRIVILEGES = r"""
ALTER VIEW annotations OWNER TO chronicle_owner;
REVOKE ALL ON annotations FROM PUBLIC, chronicle_app;
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON annotations TO chronicle_analyst;
    END IF;
END
$$;
"""


def upgrade() -> None:
    run(render_kind_functions(event_kinds=EVENT_KINDS))
    run(INDEX)
    run(sql_file("views/annotations.sql"))
    run(PRIVILEGES)


def downgrade() -> None:
    # The annotations stay in the log (it is append-only); the view and the index go.
    run("DROP VIEW annotations;")
    run("DROP INDEX events_annotations;")
    run(render_kind_functions(event_kinds=kinds_kept_by("0022_received_spans.py", "EVENT_KINDS")))
