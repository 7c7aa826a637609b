"""agent_states reads the limit a stop names, not its reason's words.

The controller (and the SWE-agent importer) now record which limit stopped a run in
``agent.state``'s ``limit`` (``iterations`` or ``cost``). ``agent_states.limit_reached``
reads that field; a state recorded without it (every one before this revision) is read by its
reason's words as before, so the column says the same for old and new events.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import earlier_revision, run, sql_file

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # CREATE OR REPLACE: the same columns, so the view keeps its owner and grants.
    run(sql_file("views/agent_states.sql"))


def downgrade() -> None:
    made: str = earlier_revision("0006_analytics.py").AGENT_STATES_VIEW
    run(made.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1))
