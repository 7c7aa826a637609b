"""Reserved: statement timeouts for the app and analyst roles, evaluation run names per owner (issue 22, item 9).

Filled in by the work on that item; until then it changes nothing.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
