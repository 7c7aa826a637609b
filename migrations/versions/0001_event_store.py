"""Event store: events (append-only, hash-chained), sessions, checkpoints, chronicle_app role.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from app.migrations.helpers import run, sql_file

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Observation kinds of the protocol at this revision (app.events.OBSERVATION_KINDS);
# a later kind needs a migration that widens the index.
OBSERVATION_KINDS = (
    "error",
    "file.edit.output",
    "file.read.output",
    "file.write.output",
    "mcp.result",
    "run.output",
)

UPGRADE = r"""
CREATE TABLE events (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      uuid        NOT NULL,
    seq             integer     NOT NULL CHECK (seq >= 1),
    event_id        uuid        NOT NULL,
    tx              xid8        NOT NULL DEFAULT pg_current_xact_id(),
    kind            text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_.]*$'),
    source          text        NOT NULL
                    CHECK (source IN ('user', 'agent', 'environment', 'system')),
    cause           integer,
    payload         jsonb       NOT NULL,
    schema_version  smallint    NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    hash            bytea       NOT NULL CHECK (length(hash) = 32),
    CONSTRAINT events_session_seq UNIQUE (session_id, seq),
    CONSTRAINT events_event_id UNIQUE (event_id),
    -- seqs are gapless from 1, so an earlier seq always names a recorded event of the
    -- session: this check does what a foreign key would, without a trigger per row.
    CONSTRAINT events_cause_earlier CHECK (cause >= 1 AND cause < seq)
);

-- At most one observation answers an action.
CREATE UNIQUE INDEX events_one_observation_per_action ON events (session_id, cause)
    WHERE cause IS NOT NULL AND kind IN ({observation_kinds});

-- The gap-safe global cursor (tx, global_position).
CREATE INDEX events_global_cursor ON events (tx, global_position);

COMMENT ON TABLE events IS
    'Chronicle event log: append-only, one hash chain per session. Write through chronicle_append().';

CREATE TABLE sessions (
    id          uuid        PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    last_seq    integer     NOT NULL CHECK (last_seq >= 0),
    last_hash   bytea       NOT NULL
);

CREATE TABLE checkpoints (
    name            text        PRIMARY KEY,
    tx              xid8        NOT NULL,
    global_position bigint      NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Append-only is the database's rule, not a convention.
CREATE FUNCTION chronicle_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the events table is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_refuse_change();

-- Append a batch to one session in one round trip: lock the session, check the writer's
-- expected last seq, assign gapless seqs, extend the hash chain, insert, notify once.
-- A re-sent batch fails on the unique event_id (or on the expected seq) and writes nothing;
-- the caller then recognises it as already recorded (EventStore.append returns the rows).
-- p_notify => false leaves the NOTIFY to the caller, to be sent right after the commit: a
-- transaction that notifies holds a database-wide lock until its commit is flushed, which
-- serialises every appending transaction in the cluster (EventStore sends it afterwards). The hashed text is exactly
-- app.events.canonical.hashed_document(); p_payloads are canonical JSON texts.
CREATE FUNCTION chronicle_append(
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
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n        integer := coalesce(cardinality(p_event_ids), 0);
    v_now    timestamptz := now();
    v_ts     text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_last   integer;
    v_hash   bytea;
    v_hashes bytea[] := '{}';
    i        integer;
BEGIN
    IF n = 0 THEN
        RETURN;
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

UPGRADE_PRIVILEGES = r"""
-- Least privilege for the application: read and append, never change or delete events.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        BEGIN
            CREATE ROLE chronicle_app NOLOGIN;
        EXCEPTION WHEN insufficient_privilege OR duplicate_object THEN
            RAISE NOTICE 'chronicle_app role not created: %', SQLERRM;
        END;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        GRANT SELECT, INSERT ON events TO chronicle_app;
        GRANT SELECT, INSERT, UPDATE ON sessions TO chronicle_app;
        GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints TO chronicle_app;
        GRANT EXECUTE ON FUNCTION chronicle_append(uuid, integer, uuid[], text[], text[],
                                                   integer[], text[], smallint[], boolean)
            TO chronicle_app;
        GRANT EXECUTE ON FUNCTION chronicle_append_many(uuid[], integer[], integer[], uuid[],
                                                        text[], text[], integer[], text[],
                                                        smallint[])
            TO chronicle_app;
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO chronicle_app', current_database());
    END IF;
END
$$;
"""

DOWNGRADE = r"""
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'chronicle_app') THEN
        EXECUTE format('REVOKE ALL ON DATABASE %I FROM chronicle_app', current_database());
        REVOKE ALL ON events, sessions, checkpoints FROM chronicle_app;
        BEGIN
            DROP ROLE chronicle_app;
        EXCEPTION WHEN dependent_objects_still_exist OR insufficient_privilege THEN
            RAISE NOTICE 'chronicle_app kept: it still has privileges elsewhere (%)', SQLERRM;
        END;
    END IF;
END
$$;
DROP FUNCTION chronicle_append_many(uuid[], integer[], integer[], uuid[], text[], text[],
                                    integer[], text[], smallint[]);
DROP FUNCTION chronicle_append(uuid, integer, uuid[], text[], text[], integer[], text[],
                               smallint[], boolean);
DROP TABLE checkpoints;
DROP TABLE sessions;
DROP TABLE events;
DROP FUNCTION chronicle_refuse_change();
"""


def upgrade() -> None:
    kinds = ", ".join(f"'{kind}'" for kind in OBSERVATION_KINDS)
    run(UPGRADE.replace("{observation_kinds}", kinds))
    run(sql_file("functions/chronicle_append_many.sql"))
    run(UPGRADE_PRIVILEGES)


def downgrade() -> None:
    run(DOWNGRADE)
