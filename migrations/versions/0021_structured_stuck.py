"""evaluation_sessions reads stuck detection's end from the state it recorded, not its words.

The controller now records ``stuck: true`` on the ``agent.state`` with which stuck detection
ends a run (as 0020's ``limit`` for a limit). ``evaluation_sessions.ending`` is ``stuck`` when
the session's last state says so; a state recorded without the field (every one before this
revision) is read by its reason's words as before, so the column says the same for old events.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import earlier_revision, run, sql_file

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # CREATE OR REPLACE: the same columns, so the view keeps its owner, grants and dependents.
    run(sql_file("views/evaluation_sessions.sql"))


def downgrade() -> None:
    made: str = earlier_revision("0009_evaluation_reports.py").EVALUATION_SESSIONS_VIEW
    run(made.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1))
