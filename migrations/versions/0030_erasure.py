"""Erasing whole sessions under a signed tombstone, and secrets the masker knows by hash.

Issue 29 (erase what must go, prove the rest), after 0029's redaction of parts:

- ``sessions`` gets a tombstone: ``erased_at``, ``erased_by``, ``erased_policy``, and the
  Ed25519 ``tombstone_key`` (its key id) and ``tombstone_signature`` over the session id,
  its number of events and last hash (the row's ``last_seq`` and ``last_hash``, which stay),
  who, when and which policy (``app/store/integrity/tombstones.py``). ``session_tombstones``
  is the view of the erased ones.
- ``chronicle_erase_session`` (``SECURITY DEFINER``) writes the tombstone and deletes the
  session's events, keys, run requests and received spans in one transaction; the events'
  trigger lets exactly that delete through (``chronicle.erasing``). It refuses unless the
  head is the one signed and the usage rollups count the session's calls already, so the
  aggregates (tokens and cost by day and model, per session and user) outlive the events.
- ``session_state`` can say ``erased`` (and when).
- ``masked_secrets``: secrets found after the fact (``chronicle redact --value-file``) that
  the masker must recognise from now on, kept only as keyed hashes (``masker_key``: the
  deployment's one random key), never as text.
- Three kinds of the platform's audit log: ``audit.redaction``, ``audit.session_erased`` and
  ``audit.user_erased``.
- ``chronicle_redact`` takes an event appended before 0029 (chain 1, hashed over its text),
  its whole payload only: its hash stays as given, proving its place, not what went
  (``app/events/chain.py``); ``chronicle_import`` takes such an event with its record.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-03
"""

from __future__ import annotations

from app.migrations.helpers import (
    earlier_revision,
    kinds_kept_by,
    render_kind_functions,
    run,
    search_path,
    sql_file,
)

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

ERASE = "chronicle_erase_session(uuid, integer, bytea, timestamptz, text, text, text, text)"
ERASE_USER = "chronicle_erase_user(uuid, text)"
REWRITE_MANIFEST = "chronicle_rewrite_archive_manifest(text, bytea, bytea)"
EVENT_KINDS = (
    *kinds_kept_by("0029_chain_over_commitments.py", "EVENT_KINDS"),
    "audit.redaction",
    "audit.session_erased",
    "audit.user_erased",
)

TOMBSTONES = r"""
ALTER TABLE sessions
    ADD COLUMN erased_at timestamptz,
    ADD COLUMN erased_by text,
    ADD COLUMN erased_policy text,
    ADD COLUMN tombstone_key text,
    ADD COLUMN tombstone_signature text,
    ADD CONSTRAINT sessions_tombstone CHECK (
        (erased_at IS NULL AND erased_by IS NULL AND erased_policy IS NULL
         AND tombstone_key IS NULL AND tombstone_signature IS NULL)
        OR (erased_at IS NOT NULL AND erased_by IS NOT NULL AND erased_policy IS NOT NULL
            AND tombstone_key ~ '^[0-9a-f]{32}$' AND tombstone_signature ~ '^[0-9a-f]{128}$'));
COMMENT ON COLUMN sessions.erased_at IS
    'set: the session was erased (its events deleted); the row is its signed tombstone';
CREATE VIEW session_tombstones AS
    SELECT id AS session_id, last_seq, last_hash, created_at, erased_at, erased_by,
           erased_policy AS policy, tombstone_key AS key_id, tombstone_signature AS signature
      FROM sessions WHERE erased_at IS NOT NULL;
ALTER VIEW session_tombstones OWNER TO chronicle_owner;
COMMENT ON VIEW session_tombstones IS
    'Erased sessions: how many events they had, their last hash, who erased them, when, by '
    'which policy, signed (chronicle verify checks the signature)';
GRANT SELECT ON session_tombstones TO chronicle_app, chronicle_analyst;

ALTER TABLE session_state DROP CONSTRAINT session_state_status_check;
ALTER TABLE session_state ADD CONSTRAINT session_state_status_check CHECK (status = ANY (ARRAY[
    'working', 'finished', 'awaiting_user_input', 'paused', 'stopped', 'limit', 'error',
    'erased']));
ALTER TABLE session_state ADD COLUMN erased_at timestamptz;
COMMENT ON COLUMN session_state.erased_at IS
    'when the session was erased (status erased): its content is gone, its counts stay';
"""

TOMBSTONES_BEFORE = r"""
DROP VIEW session_tombstones;
ALTER TABLE sessions
    DROP CONSTRAINT sessions_tombstone,
    DROP COLUMN erased_at, DROP COLUMN erased_by, DROP COLUMN erased_policy,
    DROP COLUMN tombstone_key, DROP COLUMN tombstone_signature;
DELETE FROM session_state WHERE status = 'erased';
ALTER TABLE session_state DROP COLUMN erased_at;
ALTER TABLE session_state DROP CONSTRAINT session_state_status_check;
ALTER TABLE session_state ADD CONSTRAINT session_state_status_check CHECK (status = ANY (ARRAY[
    'working', 'finished', 'awaiting_user_input', 'paused', 'stopped', 'limit', 'error']));
"""

MASKED_SECRETS = r"""
CREATE TABLE masker_key (
    only_one boolean PRIMARY KEY DEFAULT true CHECK (only_one),
    key bytea NOT NULL CHECK (octet_length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE masker_key IS
    'The one random key the masker''s hashes of found secrets are made with (masked_secrets)';
CREATE TABLE masked_secrets (
    digest bytea PRIMARY KEY CHECK (octet_length(digest) = 32),
    tokens integer NOT NULL CHECK (tokens >= 1),
    added_at timestamptz NOT NULL DEFAULT now(),
    added_by text NOT NULL,
    reason text NOT NULL
);
COMMENT ON TABLE masked_secrets IS
    'Secrets found after the fact, as HMAC-SHA256 under masker_key of their tokens: the '
    'masker replaces them from now on; their text is kept nowhere';
ALTER TABLE masker_key OWNER TO chronicle_owner;
ALTER TABLE masked_secrets OWNER TO chronicle_owner;
GRANT SELECT, INSERT ON masker_key, masked_secrets TO chronicle_app;
"""

ERASED_HEAD = r"""
CREATE FUNCTION chronicle_erased_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An erased session's row is its tombstone: it takes no more events and stays as signed.
    RAISE EXCEPTION 'session % was erased (at %, by %): its tombstone cannot change',
        OLD.id, OLD.erased_at, OLD.erased_by
        USING ERRCODE = 'CR022', DETAIL = OLD.id::text;
END
$$;
ALTER FUNCTION chronicle_erased_head() OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_erased_head() FROM PUBLIC;
CREATE TRIGGER sessions_erased_head BEFORE UPDATE OR DELETE ON sessions
    FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL)
    EXECUTE FUNCTION chronicle_erased_head();
"""


def upgrade() -> None:
    path = search_path()
    run(render_kind_functions(event_kinds=EVENT_KINDS))
    run(TOMBSTONES)
    run(MASKED_SECRETS)
    # the events' trigger lets an erasure through; the platform log takes the ``redaction``
    # records of its own events (a person's name redacted from it: ``chronicle users
    # erase``); an archived head takes a rewritten manifest; chronicle_redact takes events
    # hashed before 0029 too (their whole payload only), and chronicle_import takes such an
    # event with its record
    run(_replacing(sql_file("functions/chronicle_refuse_event_change.sql")))
    run(_replacing(sql_file("functions/chronicle_platform_log_kinds.sql", search_path=path)))
    run(_replacing(sql_file("functions/chronicle_archived_head.sql", search_path=path)))
    run(_replacing(sql_file("functions/chronicle_redact.sql", search_path=path)))
    run(_replacing(sql_file("functions/chronicle_import.sql", search_path=path)))
    run(sql_file("functions/chronicle_erase_session.sql", search_path=path))
    run(sql_file("functions/chronicle_erase_user.sql", search_path=path))
    run(sql_file("functions/chronicle_rewrite_archive_manifest.sql", search_path=path))
    run(ERASED_HEAD)
    run(
        "\n".join(
            f"ALTER FUNCTION {function} OWNER TO chronicle_owner;\n"
            f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC;\n"
            f"GRANT EXECUTE ON FUNCTION {function} TO chronicle_app;"
            for function in (ERASE, ERASE_USER, REWRITE_MANIFEST)
        )
    )


def _replacing(text: str) -> str:
    return text.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def downgrade() -> None:
    path = search_path()
    run("DROP TRIGGER sessions_erased_head ON sessions; DROP FUNCTION chronicle_erased_head();")
    for function in (ERASE, ERASE_USER, REWRITE_MANIFEST):
        run(f"DROP FUNCTION {function};")
    before = earlier_revision("0029_chain_over_commitments.py")
    run(_replacing(before.REFUSE_EVENT_CHANGE))
    run(_replacing(before.REDACT_FUNCTION.replace("{search_path}", path)))
    run(_replacing(before.CHRONICLE_IMPORT_0029.replace("{search_path}", path)))
    for revision in ("0016_platform_audit.py", "0027_session_archives.py"):
        module = earlier_revision(revision)
        text = module.PLATFORM_LOG_KINDS if revision.startswith("0016") else module.ARCHIVED_HEAD
        run(_replacing(text[: text.index("$$;") + 3].replace("{search_path}", path)))
    run("DROP TABLE masked_secrets; DROP TABLE masker_key;")
    run(TOMBSTONES_BEFORE)
    run(
        render_kind_functions(
            event_kinds=kinds_kept_by("0029_chain_over_commitments.py", "EVENT_KINDS")
        )
    )
