"""The session list's text filter: an index of the words of each session's title.

``GET /api/sessions?q=...`` (and the web page's filter) finds sessions whose title (the task's
first line) has words beginning with each word of ``q``, case-insensitive. A ``LIKE
'%...%'`` over 100,000 titles reads every row when few match; pg_trgm, which would index it,
is not in the embedded PostgreSQL. PostgreSQL's own full-text search is: a GIN index over the
``simple`` configuration's words of the title (no stemming, no stop words: a title is a
sentence of any language, and ``fix`` must find ``fixes`` only as a prefix), which the
filter's ``@@`` with prefix terms uses. ``session_state``'s owner owns the index as it owns
the table's others.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-21
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX session_state_title_words ON session_state "
        "USING gin (to_tsvector('simple'::regconfig, coalesce(title, '')))"
    )


def downgrade() -> None:
    op.execute("DROP INDEX session_state_title_words")
