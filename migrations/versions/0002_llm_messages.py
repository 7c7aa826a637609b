"""Prompt messages of model calls, stored once each by content hash.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from app.migrations.helpers import run

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE llm_messages (
    hash        bytea       PRIMARY KEY CHECK (length(hash) = 32),
    message     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE llm_messages IS
    'Content-addressed prompt messages: an llm.call event lists the hashes of its prompt.';
-- Stored messages never change either.
CREATE TRIGGER llm_messages_append_only
    BEFORE UPDATE OR DELETE ON llm_messages
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        GRANT SELECT, INSERT ON llm_messages TO chronicle_app;
    END IF;
END
$$;
"""

DOWNGRADE = r"""
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        REVOKE ALL ON llm_messages FROM chronicle_app;
    END IF;
END
$$;
DROP TABLE llm_messages;
"""


def upgrade() -> None:
    run(UPGRADE)


def downgrade() -> None:
    run(DOWNGRADE)
