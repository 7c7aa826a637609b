"""Reserved: the platform's own hash-chained audit trail (issue 22, item 10).

Filled in by the work on that item; until then it changes nothing.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
