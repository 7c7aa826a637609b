"""Imported recordings: the ``imported`` action and ``imported.output`` observation kinds.

``chronicle import --from openhands|swe-agent`` (app/evaluation/importers) keeps another
agent's actions that no Chronicle tool expresses as ``imported`` actions, answered by
``imported.output`` (app/events/imported.py). The database's kind sets follow the protocol
(tests/integration/store/test_validation.py compares them): ``chronicle_action_kinds`` and
``chronicle_observation_kinds`` gain them, and the one-observation-per-action index covers
the new observation kind. ``chronicle_tool_kinds`` (actions a service answers) is unchanged:
nothing runs an imported action.

The functions are replaced in place (their owner and grants stay); the index is built again
under its name.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-20
"""

from app.migrations.helpers import quoted, run, sql_file

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The protocol's kinds at this revision (app/events/registry.py).
ACTION_KINDS = (
    "file.edit",
    "file.read",
    "file.write",
    "finish",
    "imported",
    "mcp.call",
    "run",
    "think",
)
OBSERVATION_KINDS = (
    "error",
    "file.edit.output",
    "file.read.output",
    "file.write.output",
    "imported.output",
    "mcp.result",
    "run.output",
)
# Before it (migration 0003's).
OLD_ACTION_KINDS = tuple(kind for kind in ACTION_KINDS if kind != "imported")
OLD_OBSERVATION_KINDS = tuple(kind for kind in OBSERVATION_KINDS if kind != "imported.output")

KINDS_FUNCTIONS = (
    "\n"
    + sql_file("functions/chronicle_action_kinds.sql")
    + sql_file("functions/chronicle_observation_kinds.sql")
)

ONE_OBSERVATION_PER_ACTION = r"""
DROP INDEX events_one_observation_per_action;
CREATE UNIQUE INDEX events_one_observation_per_action ON events (session_id, cause)
    WHERE cause IS NOT NULL AND kind IN ({observation_kinds});
"""


def _kinds(actions: tuple[str, ...], observations: tuple[str, ...]) -> None:
    run(
        KINDS_FUNCTIONS.replace("{action_kinds}", quoted(actions)).replace(
            "{observation_kinds}", quoted(observations)
        )
    )
    run(ONE_OBSERVATION_PER_ACTION.replace("{observation_kinds}", quoted(observations)))


def upgrade() -> None:
    _kinds(ACTION_KINDS, OBSERVATION_KINDS)


def downgrade() -> None:
    # Imported events stay in the log (it is append-only); they are only no longer actions
    # and observations to the database's checks.
    _kinds(OLD_ACTION_KINDS, OLD_OBSERVATION_KINDS)
