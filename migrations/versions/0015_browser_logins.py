"""Reserved: browser logins and one-time sign-in codes, disabled users (issue 22, item 5).

Filled in by the work on that item; until then it changes nothing.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
