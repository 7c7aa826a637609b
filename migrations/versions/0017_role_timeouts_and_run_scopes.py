"""Statement timeouts for the app and analyst roles (issue 22, item 9).

Before, neither role had a ``statement_timeout``: a BI tool's query as ``chronicle_analyst``
(or a runaway query over the application's login) ran for ever, holding a connection, a
snapshot that stops vacuum, and the CPU. Now each role's sessions start with a default:

- ``chronicle_analyst``: 60 s, what a dashboard or an ad-hoc query needs (``chronicle sql``
  sets its own per transaction, ``--timeout``);
- ``chronicle_app``: 5 min, far beyond any query of the application. Chronicle's own
  connections set theirs when they connect (``database_statement_timeout``, 300 s), and the
  commands that legitimately run long (archive, import, ``verify``, a projection rebuild)
  set none; migrations run as the owner, which has no default.

A role's default applies to logins *as* that role (the embedded server's
``chronicle_analyst`` login, the one ``chronicle sql --url`` hands to a BI tool); a login made
a member of the role carries its own: ``ALTER ROLE alice SET statement_timeout = '60s'``
(docs/analytics.md). A migrating role that may not alter the roles leaves them as they were,
with a notice.

The other half of this reserved revision, evaluation run names per owner, needed no schema
change: a run's name is scoped by what it is recorded as (``app.evaluation.api_runs.run_key``).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

#: Each role's default statement timeout.
TIMEOUTS = {"chronicle_analyst": "60s", "chronicle_app": "5min"}


def _set(role: str, value: str | None) -> str:
    action = f"SET statement_timeout = {value!r}" if value else "RESET statement_timeout"
    return f"""
DO $$
BEGIN
    IF to_regrole('{role}') IS NOT NULL THEN
        BEGIN
            ALTER ROLE {role} {action};
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE '{role}: statement_timeout left as it was (%): run ALTER ROLE {role} '
                         '{action.replace("'", "''")} as a superuser', SQLERRM;
        END;
    END IF;
END
$$;
"""


def upgrade() -> None:
    for role, value in TIMEOUTS.items():
        op.execute(_set(role, value))


def downgrade() -> None:
    for role in TIMEOUTS:
        op.execute(_set(role, None))
