"""Blobs: long strings of payloads, stored once by content hash and referenced from events.

A payload string over the blob threshold is replaced in the payload by
``{"$blob": "<sha256 hex>", "chars": N}`` and its text stored in ``blobs`` under the sha256 of
its UTF-8 bytes (see app/events/stored_form.py). Like ``llm_messages`` the table is
append-only, owned by ``chronicle_owner``, readable by ``chronicle_app``, and written only
through ``chronicle_put_blobs``, which checks every key with the shared
``chronicle_require_content_hashes`` of 0003.

Downgrading drops the table: events that refer to blobs then refer to nothing.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-09
"""

from app.migrations.helpers import run, search_path, sql_file

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BLOBS_TABLE = r"""
CREATE TABLE blobs (
    sha256      bytea       PRIMARY KEY CHECK (length(sha256) = 32),
    content     text        NOT NULL,
    bytes       integer     GENERATED ALWAYS AS (octet_length(content)) STORED,
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE blobs IS
    'Long payload strings, stored once: a payload holds {"$blob": "<sha256 hex>", "chars": N} '
    'where the string was; sha256 is the sha256 of content''s UTF-8 bytes.';
"""

# The refusal names the table it protects (0001's said "events" for llm_messages too).
REFUSE_CHANGE_NAMING_THE_TABLE = sql_file("functions/chronicle_refuse_change.sql")

REFUSE_CHANGE_AS_IN_0001 = r"""
CREATE OR REPLACE FUNCTION chronicle_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the events table is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one';
END
$$;
"""

BLOBS_APPEND_ONLY = r"""
CREATE TRIGGER blobs_append_only
    BEFORE UPDATE OR DELETE ON blobs
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();
"""

BLOBS_NO_TRUNCATE = r"""
CREATE TRIGGER blobs_no_truncate
    BEFORE TRUNCATE ON blobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_refuse_change();
"""

PUT_BLOBS_FUNCTION = sql_file("functions/chronicle_put_blobs.sql")

OWNERSHIP = r"""
ALTER TABLE blobs OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_put_blobs(bytea[], text[]) OWNER TO chronicle_owner;
"""

# Functions are executable by PUBLIC unless revoked: the writer is for chronicle_app only.
APP_PRIVILEGES = r"""
REVOKE ALL ON blobs FROM PUBLIC, chronicle_app;
GRANT SELECT ON blobs TO chronicle_app;
REVOKE ALL ON FUNCTION chronicle_put_blobs(bytea[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle_put_blobs(bytea[], text[]) TO chronicle_app;
"""

DROP_PUT_BLOBS = "DROP FUNCTION chronicle_put_blobs(bytea[], text[]);"
DROP_BLOBS_TABLE = "DROP TABLE blobs;"


def upgrade() -> None:
    run(REFUSE_CHANGE_NAMING_THE_TABLE)
    run(BLOBS_TABLE)
    run(BLOBS_APPEND_ONLY)
    run(BLOBS_NO_TRUNCATE)
    run(PUT_BLOBS_FUNCTION.replace("{search_path}", search_path()))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    run(DROP_PUT_BLOBS)
    run(DROP_BLOBS_TABLE)
    run(REFUSE_CHANGE_AS_IN_0001)
