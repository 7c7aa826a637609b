"""Archives: an archived session says so in its head row, and takes no more events.

Issue 28, item 2 (`chronicle archive`, docs/scale-out.md "Archives"). A session written to an
archive directory (JSONL, Parquet, anchors and a manifest, verified) is marked on its
``sessions`` row: ``archived_at``, ``archived_by`` (who ran the command), ``archived_to``
(the directory) and ``archive_manifest`` (sha256 of the archive's manifest.json). Once its
events are detached with their month, that row is what tells ``chronicle verify`` an archived
session from one whose events were removed behind the log's back (which is still reported as
tampering: a head with no events and no such record).

- the four columns, all set or none;
- ``sessions_archived_head``: an archived session's head and its record stay as they were
  (an append to it is refused, CR017), so its archive stays whole; and the row is kept when
  ``chronicle_drop_event_partition`` (0026) drops a month with the session's events (its
  DELETE of a head left without events skips an archived one), so ``verify`` can still tell
  the events left with their month;
- ``chronicle_restore_archived``: the owner's, for ``chronicle import DIR`` into the database
  the session was archived from: the archived head is let go, in the import's transaction,
  only for the very same session (same last seq and head hash) with none of its events left;
- two kinds of the platform's audit log, ``audit.sessions_archived`` and
  ``audit.partition_detached``: every archive and every detached month is recorded there.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-03
"""

from __future__ import annotations

from app.migrations.helpers import (
    kinds_kept_by,
    render_kind_functions,
    run,
    search_path,
    sql_file,
)

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

EVENT_KINDS = (
    *kinds_kept_by("0025_annotations.py", "EVENT_KINDS"),
    "audit.partition_detached",
    "audit.sessions_archived",
)

COLUMNS = r"""
ALTER TABLE sessions
    ADD COLUMN archived_at timestamptz,
    ADD COLUMN archived_by text,
    ADD COLUMN archived_to text,
    ADD COLUMN archive_manifest bytea,
    ADD CONSTRAINT sessions_archive_record CHECK (
        (archived_at IS NULL AND archived_by IS NULL AND archived_to IS NULL
         AND archive_manifest IS NULL)
        OR (archived_at IS NOT NULL AND archived_by IS NOT NULL AND archived_to IS NOT NULL
            AND octet_length(archive_manifest) = 32));
"""


RESTORE_PRIVILEGES = r"""
ALTER FUNCTION chronicle_restore_archived(uuid, integer, bytea) OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_restore_archived(uuid, integer, bytea) FROM PUBLIC;
"""


#: The archived head's trigger as this revision made it (0030 lets a manifest rewrite through).
ARCHIVED_HEAD = r"""
CREATE FUNCTION chronicle_archived_head() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    -- An archived session's head row is the record of its archive, and the copy there is
    -- whole: the head and that record stay as they were (an append is refused here), and the
    -- row is kept when a month is dropped with the session's events (a DELETE of it does
    -- nothing), so `chronicle verify` can tell the events left with their month. Only
    -- chronicle_restore_archived, bringing the very same session back, lets it go.
    IF TG_OP = 'DELETE' THEN
        IF current_setting('chronicle.restoring_archived', true) = OLD.id::text THEN
            RETURN OLD;
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.last_seq IS DISTINCT FROM OLD.last_seq
        OR NEW.last_hash IS DISTINCT FROM OLD.last_hash
        OR NEW.archived_at IS DISTINCT FROM OLD.archived_at
        OR NEW.archived_to IS DISTINCT FROM OLD.archived_to
        OR NEW.archived_by IS DISTINCT FROM OLD.archived_by
        OR NEW.archive_manifest IS DISTINCT FROM OLD.archive_manifest THEN
        RAISE EXCEPTION 'session % is archived (to %, at %): it takes no more events',
            OLD.id, OLD.archived_to, OLD.archived_at
            USING ERRCODE = 'CR017', DETAIL = OLD.id::text,
                  HINT = 'an archived session is read from its archive (chronicle sql --archive DIR) '
                         'or brought back with chronicle import DIR';
    END IF;
    RETURN NEW;
END
$$;
ALTER FUNCTION chronicle_archived_head() OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_archived_head() FROM PUBLIC;
CREATE TRIGGER sessions_archived_head BEFORE UPDATE OR DELETE ON sessions
    FOR EACH ROW WHEN (OLD.archived_at IS NOT NULL)
    EXECUTE FUNCTION chronicle_archived_head();
"""


def upgrade() -> None:
    path = search_path()
    run(render_kind_functions(event_kinds=EVENT_KINDS))
    run(COLUMNS)
    run(ARCHIVED_HEAD.replace("{search_path}", path))
    run(sql_file("functions/chronicle_restore_archived.sql", search_path=path))
    run(RESTORE_PRIVILEGES)


def downgrade() -> None:
    run("DROP FUNCTION chronicle_restore_archived(uuid, integer, bytea);")
    run("DROP TRIGGER sessions_archived_head ON sessions;")
    run("DROP FUNCTION chronicle_archived_head();")
    run(
        "ALTER TABLE sessions DROP CONSTRAINT sessions_archive_record, "
        "DROP COLUMN archived_at, DROP COLUMN archived_by, DROP COLUMN archived_to, "
        "DROP COLUMN archive_manifest;"
    )
    run(render_kind_functions(event_kinds=kinds_kept_by("0025_annotations.py", "EVENT_KINDS")))
