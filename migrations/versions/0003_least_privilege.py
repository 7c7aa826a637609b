"""Least privilege: a non-login owner, SECURITY DEFINER writers, validation at the log's door.

``chronicle_owner`` (NOLOGIN) owns the tables and the functions. ``chronicle_app`` (the
application's login, or a group role its login is a member of) may read, append through
``chronicle_append``/``chronicle_append_many``, store prompt messages through
``chronicle_put_messages`` (which checks each message's hash), and write ``checkpoints``; it
cannot INSERT into ``events``, change ``sessions`` or write ``llm_messages`` directly. The
append function now also refuses an observation whose cause is not an action of its session,
and a second ``session.created`` in a session is refused by a unique index.

Later migrations run as the migrating role (a superuser, or a login that is a member of
``chronicle_owner``) and must hand every new object to ``chronicle_owner`` and grant
``chronicle_app`` only what it needs.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from app.migrations.helpers import earlier_revision, quoted, run, search_path, sql_file

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The protocol's kinds (app/events/registry.py; a test compares them): which events are
# actions, and which observations answer one.
ACTION_KINDS = ("file.edit", "file.read", "file.write", "finish", "mcp.call", "run", "think")
OBSERVATION_KINDS = (
    "error",
    "file.edit.output",
    "file.read.output",
    "file.write.output",
    "mcp.result",
    "run.output",
)

ROLES = r"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_owner') THEN
        CREATE ROLE chronicle_owner NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        CREATE ROLE chronicle_app NOLOGIN;
    END IF;
    -- The migrating role hands its objects over, so it must be able to act as the owner.
    IF NOT pg_has_role(current_user, 'chronicle_owner', 'MEMBER') THEN
        EXECUTE format('GRANT chronicle_owner TO %I', current_user);
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE EXCEPTION 'cannot set up the roles chronicle_owner and chronicle_app: %', SQLERRM
        USING HINT = 'run migrations as a superuser, or create both roles first and run '
                     'them as a login that is a member of chronicle_owner (docs/configuration.md: Database roles)';
END
$$;
"""

# A new owner must be able to create in the tables' schema (ALTER ... OWNER TO checks it).
OWNER_MAY_CREATE = r"""
DO $$
BEGIN
    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO chronicle_owner', current_schema());
END
$$;
"""

ACTION_KINDS_FUNCTION = r"""
CREATE FUNCTION chronicle_action_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{action_kinds}]::text[] $$;
"""

OBSERVATION_KINDS_FUNCTION = r"""
CREATE FUNCTION chronicle_observation_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{observation_kinds}]::text[] $$;
"""

ONE_SESSION_CREATED = r"""
CREATE UNIQUE INDEX events_one_session_created ON events (session_id)
    WHERE kind = 'session.created';
"""

# The same function as in 0001 (same signature, same hashed text), now running as its owner
# and refusing an observation that does not answer an action of its own session. An `error`
# may also answer an `llm.call`: tool calls the agent could not turn into actions.
APPEND_FUNCTION = r"""
CREATE OR REPLACE FUNCTION chronicle_append(
    p_session   uuid,
    p_expected  integer,
    p_event_ids uuid[],
    p_kinds     text[],
    p_sources   text[],
    p_causes    integer[],
    p_payloads  text[],
    p_versions  smallint[],
    p_notify    boolean DEFAULT true
) RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
                 hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    n              integer := coalesce(cardinality(p_event_ids), 0);
    v_now          timestamptz := now();
    v_ts           text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_actions      text[] := chronicle_action_kinds();
    v_observations text[] := chronicle_observation_kinds();
    v_last         integer;
    v_hash         bytea;
    v_hashes       bytea[] := '{}';
    v_answered     text;
    i              integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_kinds) IS DISTINCT FROM n OR cardinality(p_sources) IS DISTINCT FROM n
       OR cardinality(p_causes) IS DISTINCT FROM n OR cardinality(p_payloads) IS DISTINCT FROM n
       OR cardinality(p_versions) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'every column array of an append must have % elements', n
            USING ERRCODE = 'CR005';
    END IF;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'session % is at seq %, the writer expected %', p_session, v_last, p_expected
            USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    FOR i IN 1 .. n LOOP
        IF p_causes[i] IS NOT NULL AND p_kinds[i] = ANY (v_observations) THEN
            IF p_causes[i] > v_last THEN
                -- An event earlier in this batch; a later one is left to events_cause_earlier.
                v_answered := CASE WHEN p_causes[i] < v_last + i
                                   THEN p_kinds[p_causes[i] - v_last] END;
            ELSE
                SELECT e.kind INTO v_answered
                FROM events e WHERE e.session_id = p_session AND e.seq = p_causes[i];
                IF NOT FOUND THEN
                    v_answered := NULL;
                END IF;
            END IF;
            IF v_answered IS NOT NULL AND NOT (
                v_answered = ANY (v_actions) OR (p_kinds[i] = 'error' AND v_answered = 'llm.call')
            ) THEN
                RAISE EXCEPTION 'a % event must answer an action of its session, but its cause (seq %) is a % event',
                    p_kinds[i], p_causes[i], v_answered
                    USING ERRCODE = 'CR003', DETAIL = p_causes[i]::text,
                          HINT = 'set cause to the seq of the action this observation answers';
            END IF;
        END IF;
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"' || v_ts
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || (v_last + i)::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        v_hashes[i] := v_hash;
    END LOOP;

    RETURN QUERY
        INSERT INTO events AS e
            (session_id, seq, event_id, kind, source, cause, payload, schema_version,
             created_at, hash)
        SELECT p_session, v_last + t.ord::integer, t.event_id, t.kind, t.source, t.cause,
               t.payload::jsonb, t.version, v_now, t.hash
        FROM unnest(p_event_ids, p_kinds, p_sources, p_causes, p_payloads, p_versions, v_hashes)
             WITH ORDINALITY AS t(event_id, kind, source, cause, payload, version, hash, ord)
        RETURNING e.seq, e.global_position, e.tx, e.created_at, e.hash;

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, v_now, n, v_hash);
    ELSE
        UPDATE sessions SET last_seq = v_last + n, last_hash = v_hash WHERE id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || (v_last + n)::text);
    END IF;
END
$$;
"""

APPEND_SIGNATURE = "chronicle_append(uuid, integer, uuid[], text[], text[], integer[], text[], smallint[], boolean)"
APPEND_MANY_SIGNATURE = "chronicle_append_many(uuid[], integer[], integer[], uuid[], text[], text[], integer[], text[], smallint[])"

APPEND_MANY_AS_OWNER = rf"""
ALTER FUNCTION {APPEND_MANY_SIGNATURE} SECURITY DEFINER SET search_path = {{search_path}};
"""

# Content-addressed writes share one check: each text's sha256 must be its key. A future
# chronicle_put_blobs(p_hashes, p_texts) is this check followed by its own INSERT.
REQUIRE_CONTENT_HASHES = sql_file("functions/chronicle_require_content_hashes.sql")

PUT_MESSAGES_FUNCTION = sql_file("functions/chronicle_put_messages.sql")

OWNERSHIP = rf"""
ALTER TABLE events OWNER TO chronicle_owner;
ALTER TABLE sessions OWNER TO chronicle_owner;
ALTER TABLE checkpoints OWNER TO chronicle_owner;
ALTER TABLE llm_messages OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_refuse_change() OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_action_kinds() OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_observation_kinds() OWNER TO chronicle_owner;
ALTER FUNCTION {APPEND_SIGNATURE} OWNER TO chronicle_owner;
ALTER FUNCTION {APPEND_MANY_SIGNATURE} OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_require_content_hashes(text, bytea[], text[]) OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_put_messages(bytea[], text[]) OWNER TO chronicle_owner;
"""

# Functions are executable by PUBLIC unless revoked: the writers are for chronicle_app only.
APP_PRIVILEGES = rf"""
REVOKE ALL ON events, sessions, checkpoints, llm_messages FROM PUBLIC, chronicle_app;
GRANT SELECT ON events, sessions, llm_messages TO chronicle_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints TO chronicle_app;
GRANT SELECT ON chronicle_schema_version TO chronicle_app;
REVOKE ALL ON FUNCTION {APPEND_SIGNATURE}, {APPEND_MANY_SIGNATURE},
    chronicle_put_messages(bytea[], text[]),
    chronicle_require_content_hashes(text, bytea[], text[]),
    chronicle_refuse_change() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {APPEND_SIGNATURE}, {APPEND_MANY_SIGNATURE},
    chronicle_put_messages(bytea[], text[]) TO chronicle_app;
"""

# A SECURITY DEFINER function is only as safe as its search_path: no schema on it may let
# the application create objects that could shadow what the function calls.
SCHEMA_NOT_WRITABLE_BY_APP = r"""
DO $$
BEGIN
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM chronicle_app', current_schema());
    IF has_schema_privilege('chronicle_app', current_schema(), 'CREATE') THEN
        RAISE EXCEPTION 'chronicle_app can create objects in schema %', current_schema()
            USING HINT = format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC (the default since '
                                'PostgreSQL 15), then migrate again', current_schema());
    END IF;
END
$$;
"""

# -- downgrade: back to 0002 (the 0001 function body, privileges of 0001 and 0002) ----------

DOWNGRADE_PRIVILEGES = rf"""
REVOKE SELECT ON chronicle_schema_version FROM chronicle_app;
GRANT SELECT, INSERT ON events TO chronicle_app;
GRANT SELECT, INSERT, UPDATE ON sessions TO chronicle_app;
GRANT SELECT, INSERT ON llm_messages TO chronicle_app;
GRANT EXECUTE ON FUNCTION {APPEND_SIGNATURE}, {APPEND_MANY_SIGNATURE} TO PUBLIC, chronicle_app;
GRANT EXECUTE ON FUNCTION chronicle_refuse_change() TO PUBLIC;
"""

DOWNGRADE_OWNERSHIP = rf"""
ALTER TABLE events OWNER TO CURRENT_USER;
ALTER TABLE sessions OWNER TO CURRENT_USER;
ALTER TABLE checkpoints OWNER TO CURRENT_USER;
ALTER TABLE llm_messages OWNER TO CURRENT_USER;
ALTER FUNCTION chronicle_refuse_change() OWNER TO CURRENT_USER;
ALTER FUNCTION {APPEND_SIGNATURE} OWNER TO CURRENT_USER;
ALTER FUNCTION {APPEND_MANY_SIGNATURE} OWNER TO CURRENT_USER;
"""

DOWNGRADE_APPEND_MANY = rf"""
ALTER FUNCTION {APPEND_MANY_SIGNATURE} SECURITY INVOKER RESET search_path;
"""


DROP_PUT_MESSAGES = "DROP FUNCTION chronicle_put_messages(bytea[], text[]);"
DROP_REQUIRE_CONTENT_HASHES = (
    "DROP FUNCTION chronicle_require_content_hashes(text, bytea[], text[]);"
)
DROP_ONE_SESSION_CREATED = "DROP INDEX events_one_session_created;"
DROP_ACTION_KINDS = "DROP FUNCTION chronicle_action_kinds();"
DROP_OBSERVATION_KINDS = "DROP FUNCTION chronicle_observation_kinds();"

DOWNGRADE_OWNER_MAY_CREATE = r"""
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM chronicle_owner', current_schema());
END
$$;
"""

# The owner role is cluster-wide: other databases of the cluster may still use it.
DROP_OWNER_ROLE = r"""
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_owner') THEN
        BEGIN
            DROP ROLE chronicle_owner;
        EXCEPTION WHEN dependent_objects_still_exist OR insufficient_privilege THEN
            RAISE NOTICE 'chronicle_owner kept: it still owns objects elsewhere (%)', SQLERRM;
        END;
    END IF;
END
$$;
"""


def _append_as_in_0001() -> str:
    """0001's chronicle_append, which the downgrade restores (over this revision's, so as
    CREATE OR REPLACE; SECURITY INVOKER undoes this revision's SECURITY DEFINER)."""
    made: str = earlier_revision("0001_event_store.py").UPGRADE
    start = made.index("CREATE FUNCTION chronicle_append(")
    end = made.index("$$;\n", start) + len("$$;\n")
    return (
        made[start:end]
        .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
        .replace("LANGUAGE plpgsql AS $$", "LANGUAGE plpgsql SECURITY INVOKER AS $$", 1)
    )


def upgrade() -> None:
    path = search_path()
    run(ROLES)
    run(OWNER_MAY_CREATE)
    run(ACTION_KINDS_FUNCTION.replace("{action_kinds}", quoted(ACTION_KINDS)))
    run(OBSERVATION_KINDS_FUNCTION.replace("{observation_kinds}", quoted(OBSERVATION_KINDS)))
    run(ONE_SESSION_CREATED)
    run(APPEND_FUNCTION.replace("{search_path}", path))
    run(APPEND_MANY_AS_OWNER.replace("{search_path}", path))
    run(REQUIRE_CONTENT_HASHES.replace("{search_path}", path))
    run(PUT_MESSAGES_FUNCTION.replace("{search_path}", path))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)
    run(SCHEMA_NOT_WRITABLE_BY_APP)


def downgrade() -> None:
    run(DOWNGRADE_PRIVILEGES)
    run(DROP_PUT_MESSAGES)
    run(DROP_REQUIRE_CONTENT_HASHES)
    run(_append_as_in_0001())
    run(DOWNGRADE_APPEND_MANY)
    run(DROP_ONE_SESSION_CREATED)
    run(DROP_ACTION_KINDS)
    run(DROP_OBSERVATION_KINDS)
    run(DOWNGRADE_OWNERSHIP)
    run(DOWNGRADE_OWNER_MAY_CREATE)
    run(DROP_OWNER_ROLE)
