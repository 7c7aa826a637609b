"""Reserved: what chronicle_app may write: users and tokens through definer functions, appends that verify would accept (issue 22, item 7).

Filled in by the work on that item; until then it changes nothing.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
