"""The application reads the model-call, tool-call and error views, for the usage page.

Issue 27, item 10 (``GET /api/usage``, app/sessions/sql/usage.py). The page's numbers are the
analytics views' (``llm_calls``, ``tool_calls``, ``errors``: docs/analytics.md), narrowed to
one user's sessions for a member. ``chronicle_analyst`` cannot do that narrowing: it reads the
views and ``session_state``, never ``session_owners`` (who owns what is not an analyst's to
read). So the application reads the views itself, as it reads the evaluation views (0009), in
one fixed query that joins each row to its session's owner; a member never sends SQL.

The grant shows the application nothing new: the views are plain SQL over ``events``, which
it reads already. A later revision that makes one of these views again grants it again (as
0018 did for the analyst).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02
"""

from __future__ import annotations

from app.migrations.helpers import run

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

VIEWS = "llm_calls, tool_calls, errors"


def upgrade() -> None:
    run(f"GRANT SELECT ON {VIEWS} TO chronicle_app;")


def downgrade() -> None:
    run(f"REVOKE SELECT ON {VIEWS} FROM chronicle_app;")
