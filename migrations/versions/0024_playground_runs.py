"""The playground's runs of a session's model calls, found by the session they came from.

Issue 27, item 9 (app/external/playground.py, docs/access.md "The playground"). A playground
run is a session whose ``session.created`` names the call it sent again in
``config.from_call`` (``{"session", "seq", "changes"}``); a session's page lists the runs of its
calls (``app/external/sql/playground_runs.py``). The index holds only those ``session.created``
events, by the session they came from, so the list costs the runs it finds, not a read of
every session's first event.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import run

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

PLAYGROUND_RUNS = r"""
CREATE INDEX events_playground_runs
    ON events ((payload->'config'->'from_call'->>'session'), created_at)
    WHERE kind = 'session.created' AND payload->'config' ? 'from_call';
"""


def upgrade() -> None:
    run(PLAYGROUND_RUNS)


def downgrade() -> None:
    run("DROP INDEX events_playground_runs;")
