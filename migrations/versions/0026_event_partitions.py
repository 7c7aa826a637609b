"""Monthly partitions of ``events`` (issue 28, item 2; docs/scale-out.md "Monthly partitions").

``events`` becomes ``PARTITION BY RANGE (created_at)``, one partition a UTC month, and the
rows of the one table move into their months (``tx`` and ``global_position`` kept, so every
checkpoint and cursor stays where it was). A unique index of a partitioned table must include
the partition key, so each invariant gets its own keeper:

- ``(session_id, seq)`` gapless and unique: the head ``sessions(last_seq, last_hash)``, moved
  under the session's lock, as before; each partition keeps ``UNIQUE (session_id, seq)`` of
  its own as a guard within the month;
- ``event_id`` idempotency: ``event_ids (event_id PRIMARY KEY, session_id, seq, answers)``, one
  row per event, written by every append before its events (unique across sessions, as before);
- one observation per action: ``answers`` is an observation's cause, and
  ``event_ids_one_observation_per_action`` is ``UNIQUE (session_id, answers)``;
- one ``session.created``: a constraint trigger that looks at the session's months under the
  session's lock (it fires once per session); each partition keeps both partial unique
  indexes of 0003 as guards within the month;
- ``global_position`` unique: the identity sequence; the key is ``(global_position,
  created_at)``;
- append-only: the row triggers of the parent apply to every partition; each partition gets
  its own TRUNCATE trigger when it is made (``chronicle_event_partition_keys``).

``sessions`` gets ``first_event_at`` and ``last_event_at`` (the least and greatest
``created_at`` of its events), so a session's read can name the months it spans and
PostgreSQL prunes the others. Partitions are made by ``chronicle_ensure_event_partitions``
(the application may call it), dropped only by ``chronicle_drop_event_partition`` (the
owner's). This revision makes the months from the oldest row's to two after the current one.

Views over ``events`` are dropped with the old table and made again from their definitions,
owners, grants and comments as the database held them.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03
"""

from __future__ import annotations

from typing import NamedTuple

from alembic import op
from app.migrations.helpers import earlier_revision, run, search_path, sql_file

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

COLUMNS = (
    "global_position, session_id, seq, event_id, tx, kind, source, cause, payload, "
    "schema_version, created_at, hash"
)

#: The columns and checks of events as 0001-0025 made them; the key is what changes.
TABLE_BODY = r"""
    global_position bigint      GENERATED ALWAYS AS IDENTITY,
    session_id      uuid        NOT NULL,
    seq             integer     NOT NULL,
    event_id        uuid        NOT NULL,
    tx              xid8        NOT NULL DEFAULT pg_current_xact_id(),
    kind            text        NOT NULL,
    source          text        NOT NULL,
    cause           integer,
    payload         jsonb       NOT NULL,
    schema_version  smallint    NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    hash            bytea       NOT NULL,
    CONSTRAINT events_cause_earlier CHECK (((cause >= 1) AND (cause < seq))),
    CONSTRAINT events_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT events_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_.]*$'::text)),
    CONSTRAINT events_seq_check CHECK ((seq >= 1)),
    CONSTRAINT events_source_check CHECK ((source = ANY (ARRAY['user'::text, 'agent'::text,
                                                            'environment'::text, 'system'::text])))
"""

COMMENT = (
    "COMMENT ON TABLE events IS 'Chronicle event log: append-only, one hash chain per session. "
    "Write through chronicle_append().';"
)

NEW_TABLE = rf"""
CREATE TABLE events ({TABLE_BODY},
    CONSTRAINT events_pkey PRIMARY KEY (global_position, created_at)
) PARTITION BY RANGE (created_at);
ALTER TABLE events OWNER TO chronicle_owner;
{COMMENT}

CREATE TABLE event_ids (
    event_id   uuid    PRIMARY KEY,
    session_id uuid    NOT NULL,
    seq        integer NOT NULL,
    answers    integer
);
ALTER TABLE event_ids OWNER TO chronicle_owner;
GRANT SELECT ON event_ids TO chronicle_app;
COMMENT ON TABLE event_ids IS
    'The keys of events across its monthly partitions: one row per event, written by the append before the event.';
COMMENT ON COLUMN event_ids.answers IS
    'an observation''s cause (the seq of the action it answers), else null: one observation per action';

ALTER TABLE sessions ADD COLUMN first_event_at timestamptz, ADD COLUMN last_event_at timestamptz;
COMMENT ON COLUMN sessions.first_event_at IS
    'the least created_at of its events: a read bounds created_at by it, so PostgreSQL reads only the months the session spans';
COMMENT ON COLUMN sessions.last_event_at IS 'the greatest created_at of its events';
"""

#: Each new function's text (``{search_path}`` left in), and who may call it besides its
#: owner: the application makes months ahead and lists them, never drops one.
FUNCTIONS = (
    (
        "chronicle_event_partitions()",
        sql_file("functions/chronicle_event_partitions.sql"),
        "chronicle_app",
    ),
    (
        "chronicle_event_partition_keys(regclass)",
        sql_file("functions/chronicle_event_partition_keys.sql"),
        None,
    ),
    (
        "chronicle_ensure_event_partitions(date, integer)",
        sql_file("functions/chronicle_ensure_event_partitions.sql"),
        "chronicle_app",
    ),
    (
        "chronicle_drop_event_partition(text)",
        sql_file("functions/chronicle_drop_event_partition.sql"),
        None,
    ),
    (
        "chronicle_one_session_created()",
        sql_file("functions/chronicle_one_session_created.sql"),
        None,
    ),
)

#: The append functions of this revision (CREATE OR REPLACE keeps their owners and grants);
#: 0029 made them again (the chain over commitments), so their text here is this revision's.
CHRONICLE_APPEND_ONE_0026 = r"""CREATE OR REPLACE FUNCTION chronicle_append_one(
    p_session   uuid,
    p_expected  integer,
    p_event_id  uuid,
    p_kind      text,
    p_source    text,
    p_cause     integer,
    p_payload   text,
    p_version   smallint,
    p_notify    boolean DEFAULT true,
    OUT seq             integer,
    OUT global_position bigint,
    OUT tx              xid8,
    OUT created_at      timestamptz,
    OUT hash            bytea
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_payload  jsonb;
    v_last     integer;
    v_prev     bytea;
    v_first_at timestamptz;
    v_answered text;
BEGIN
    v_payload := chronicle_verifiable_payload(p_kind, p_payload);
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash, s.first_event_at INTO v_last, v_prev, v_first_at
    FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_prev := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'session % is at seq %, the writer expected %', p_session, v_last, p_expected
            USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    -- A cause beyond the head is left to events_cause_earlier, as in chronicle_append.
    IF p_cause IS NOT NULL AND p_cause <= v_last
       AND p_kind = ANY (chronicle_observation_kinds()) THEN
        SELECT e.kind INTO v_answered
        FROM events e WHERE e.session_id = p_session AND e.seq = p_cause
                            AND e.created_at >= v_first_at;
        IF FOUND AND NOT (
            v_answered = ANY (chronicle_action_kinds()) OR (p_kind = 'error' AND v_answered = 'llm.call')
        ) THEN
            RAISE EXCEPTION 'a % event must answer an action of its session, but its cause (seq %) is a % event',
                p_kind, p_cause, v_answered
                USING ERRCODE = 'CR003', DETAIL = p_cause::text,
                      HINT = 'set cause to the seq of the action this observation answers';
        END IF;
    END IF;

    seq := v_last + 1;
    created_at := now();
    hash := sha256(v_prev || convert_to(
        '{"cause":' || coalesce(p_cause::text, 'null')
        || ',"created_at":"' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || p_event_id::text
        || '","kind":' || to_json(p_kind)::text
        || ',"payload":' || p_payload
        || ',"schema_version":' || p_version::text
        || ',"seq":' || seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(p_source)::text
        || '}', 'UTF8'));

    INSERT INTO event_ids (event_id, session_id, seq, answers)
    VALUES (p_event_id, p_session, seq,
            CASE WHEN p_kind = ANY (chronicle_observation_kinds()) THEN p_cause END);
    INSERT INTO events AS e
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at, hash)
    VALUES (p_session, seq, p_event_id, p_kind, p_source, p_cause, v_payload, p_version,
            created_at, hash)
    RETURNING e.global_position, e.tx INTO global_position, tx;

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash, first_event_at, last_event_at)
        VALUES (p_session, created_at, 1, hash, created_at, created_at);
    ELSE
        UPDATE sessions s SET last_seq = seq, last_hash = hash,
               first_event_at = least(s.first_event_at, now()),  -- now() is created_at
               last_event_at = greatest(s.last_event_at, now())
        WHERE s.id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || seq::text);
    END IF;
END
$$;
"""

CHRONICLE_APPEND_0026 = r"""CREATE OR REPLACE FUNCTION chronicle_append(
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
    v_first_at     timestamptz;
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
    FOR i IN 1 .. n LOOP
        PERFORM chronicle_verifiable_payload(p_kinds[i], p_payloads[i], i);
    END LOOP;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash, s.first_event_at INTO v_last, v_hash, v_first_at
    FROM sessions s WHERE s.id = p_session;
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
                FROM events e WHERE e.session_id = p_session AND e.seq = p_causes[i]
                                    AND e.created_at >= v_first_at;
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

    -- The keys across months, before the rows: a re-sent event_id, or a second observation
    -- of an action (answers), fails here.
    INSERT INTO event_ids (event_id, session_id, seq, answers)
    SELECT t.event_id, p_session, v_last + t.ord::integer,
           CASE WHEN t.kind = ANY (v_observations) THEN t.cause END
    FROM unnest(p_event_ids, p_kinds, p_causes) WITH ORDINALITY AS t(event_id, kind, cause, ord);

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
        INSERT INTO sessions (id, created_at, last_seq, last_hash, first_event_at, last_event_at)
        VALUES (p_session, v_now, n, v_hash, v_now, v_now);
    ELSE
        UPDATE sessions SET last_seq = v_last + n, last_hash = v_hash,
               first_event_at = least(first_event_at, v_now),
               last_event_at = greatest(last_event_at, v_now)
        WHERE id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || (v_last + n)::text);
    END IF;
END
$$;
"""

CHRONICLE_IMPORT_0026 = r"""CREATE FUNCTION chronicle_import(
    p_session    uuid,
    p_seqs       integer[],
    p_event_ids  uuid[],
    p_kinds      text[],
    p_sources    text[],
    p_causes     integer[],
    p_payloads   text[],
    p_versions   smallint[],
    p_created_at timestamptz[],
    p_hashes     bytea[]
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    n              integer := coalesce(cardinality(p_seqs), 0);
    v_actions      text[] := chronicle_action_kinds();
    v_observations text[] := chronicle_observation_kinds();
    v_first        integer;
    v_last         integer;
    v_hash         bytea;
    v_known        integer;
    v_bad          integer;
    v_answered     text;
    i              integer;
BEGIN
    IF n = 0 THEN
        RETURN 0;
    END IF;
    IF cardinality(p_event_ids) IS DISTINCT FROM n OR cardinality(p_kinds) IS DISTINCT FROM n
       OR cardinality(p_sources) IS DISTINCT FROM n OR cardinality(p_causes) IS DISTINCT FROM n
       OR cardinality(p_payloads) IS DISTINCT FROM n OR cardinality(p_versions) IS DISTINCT FROM n
       OR cardinality(p_created_at) IS DISTINCT FROM n OR cardinality(p_hashes) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'every column array of an import must have % elements', n
            USING ERRCODE = 'CR005';
    END IF;
    v_first := p_seqs[1];
    FOR i IN 1 .. n LOOP
        IF p_seqs[i] IS DISTINCT FROM v_first + i - 1 OR v_first < 1 THEN
            RAISE EXCEPTION 'an import must give consecutive seqs from 1 or more, not % at position %',
                coalesce(p_seqs[i]::text, 'NULL'), i USING ERRCODE = 'CR005';
        END IF;
    END LOOP;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF v_first > v_last + 1 THEN
        RAISE EXCEPTION 'session % is at seq %: an import cannot start at seq %', p_session,
            v_last, v_first USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    -- Already recorded: must be the very same events.
    v_known := greatest(least(n, v_last - v_first + 1), 0);
    IF v_known > 0 THEN
        SELECT t.seq INTO v_bad
        FROM unnest(p_seqs[1:v_known], p_event_ids[1:v_known], p_hashes[1:v_known])
             AS t(seq, event_id, hash)
        LEFT JOIN events e ON e.session_id = p_session AND e.seq = t.seq
        WHERE e.event_id IS DISTINCT FROM t.event_id OR e.hash IS DISTINCT FROM t.hash
        ORDER BY t.seq
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'session % holds another event at seq % than the import',
                p_session, v_bad USING ERRCODE = 'CR006', DETAIL = v_bad::text,
                HINT = 'the two databases have different histories of this session';
        END IF;
    END IF;
    IF v_known = n THEN
        RETURN 0;
    END IF;

    FOR i IN v_known + 1 .. n LOOP
        IF p_causes[i] IS NOT NULL AND p_kinds[i] = ANY (v_observations) THEN
            IF p_causes[i] > v_last THEN
                v_answered := CASE WHEN p_causes[i] < p_seqs[i]
                                   THEN p_kinds[p_causes[i] - v_first + 1] END;
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
                    USING ERRCODE = 'CR003', DETAIL = p_causes[i]::text;
            END IF;
        END IF;
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"'
            || to_char(p_created_at[i] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || p_seqs[i]::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        IF v_hash IS DISTINCT FROM p_hashes[i] THEN
            RAISE EXCEPTION 'event % of session % does not match its hash', p_seqs[i], p_session
                USING ERRCODE = 'CR007', DETAIL = p_seqs[i]::text,
                      HINT = 'the file was changed, or it does not continue this database''s copy of the session';
        END IF;
    END LOOP;

    INSERT INTO event_ids (event_id, session_id, seq, answers)
    SELECT t.event_id, p_session, t.seq,
           CASE WHEN t.kind = ANY (v_observations) THEN t.cause END
    FROM unnest(p_event_ids[v_known + 1:n], p_seqs[v_known + 1:n], p_kinds[v_known + 1:n],
                p_causes[v_known + 1:n]) AS t(event_id, seq, kind, cause);

    INSERT INTO events
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at,
         hash)
    SELECT p_session, t.seq, t.event_id, t.kind, t.source, t.cause, t.payload::jsonb,
           t.version, t.created_at, t.hash
    FROM unnest(p_seqs[v_known + 1:n], p_event_ids[v_known + 1:n], p_kinds[v_known + 1:n],
                p_sources[v_known + 1:n], p_causes[v_known + 1:n], p_payloads[v_known + 1:n],
                p_versions[v_known + 1:n], p_created_at[v_known + 1:n], p_hashes[v_known + 1:n])
         AS t(seq, event_id, kind, source, cause, payload, version, created_at, hash);

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash, first_event_at, last_event_at)
        SELECT p_session, p_created_at[1], p_seqs[n], v_hash, min(t.at), max(t.at)
        FROM unnest(p_created_at[v_known + 1:n]) AS t(at);
    ELSE
        UPDATE sessions s SET last_seq = p_seqs[n], last_hash = v_hash,
               first_event_at = least(s.first_event_at, t.first_at),
               last_event_at = greatest(s.last_event_at, t.last_at)
        FROM (SELECT min(a.at) AS first_at, max(a.at) AS last_at
              FROM unnest(p_created_at[v_known + 1:n]) AS a(at)) AS t
        WHERE s.id = p_session;
    END IF;
    PERFORM pg_notify('chronicle_events', p_session::text || ':' || p_seqs[n]::text);
    RETURN n - v_known;
END
$$;
"""

APPEND_FUNCTIONS = (CHRONICLE_APPEND_ONE_0026, CHRONICLE_APPEND_0026, CHRONICLE_IMPORT_0026)

CONSTRAINT_TRIGGERS = r"""
CREATE CONSTRAINT TRIGGER events_one_session_created AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.kind = 'session.created')
    EXECUTE FUNCTION chronicle_one_session_created();
"""

#: One observation per action across months: a real key, on the key table.
ANSWERS_KEY = r"""
CREATE UNIQUE INDEX event_ids_one_observation_per_action ON event_ids (session_id, answers)
    WHERE answers IS NOT NULL;
"""

#: The keys of 0001-0025 that the unpartitioned table held (the downgrade makes them again).
OLD_KEYS = r"""
ALTER TABLE ONLY events ADD CONSTRAINT events_pkey PRIMARY KEY (global_position);
ALTER TABLE ONLY events ADD CONSTRAINT events_session_seq UNIQUE (session_id, seq);
ALTER TABLE ONLY events ADD CONSTRAINT events_event_id UNIQUE (event_id);
CREATE UNIQUE INDEX events_one_session_created ON events (session_id)
    WHERE kind = 'session.created';
"""

#: Objects of events this revision makes itself; the others (indexes, triggers, grants) are
#: carried over from the table before as the database held them.
OWN_INDEXES = frozenset(
    {
        "events_pkey",
        "events_session_seq",
        "events_event_id",
        "events_one_observation_per_action",
        "events_one_session_created",
    }
)
OWN_TRIGGERS = frozenset({"events_one_session_created"})


class View(NamedTuple):
    """A view over events, as the database holds it, to be made again after the swap."""

    name: str
    definition: str
    owner: str
    options: list[str]
    grants: list[tuple[str, str]]
    comment: str | None
    column_comments: list[tuple[str, str]]
    depends_on: set[str]


def _rows(sql: str) -> list[tuple]:
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


def _views_over_events() -> list[View]:
    """Every view reading events, directly or through another view, in an order that makes
    each after the views it reads."""
    rows = _rows(
        r"""
        WITH RECURSIVE over(oid) AS (
            SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = 'events'::regclass
              AND r.ev_class <> 'events'::regclass
            UNION
            SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            JOIN over ON d.refobjid = over.oid
            WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> over.oid
        )
        SELECT c.relname, c.relkind, pg_get_viewdef(c.oid), pg_get_userbyid(c.relowner),
               coalesce(c.reloptions, '{}'),
               ARRAY(SELECT ARRAY[CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                       ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                                  a.privilege_type]
                     FROM aclexplode(c.relacl) WITH ORDINALITY a
                     WHERE a.grantee <> c.relowner ORDER BY a.ordinality),
               obj_description(c.oid, 'pg_class'),
               ARRAY(SELECT ARRAY[quote_ident(a.attname), col_description(c.oid, a.attnum)]
                     FROM pg_attribute a
                     WHERE a.attrelid = c.oid AND a.attnum > 0
                       AND col_description(c.oid, a.attnum) IS NOT NULL ORDER BY a.attnum),
               ARRAY(SELECT DISTINCT d.refobjid::regclass::text
                     FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid
                     WHERE r.ev_class = c.oid AND d.classid = 'pg_rewrite'::regclass
                       AND d.refobjid IN (SELECT oid FROM over) AND d.refobjid <> c.oid)
        FROM over JOIN pg_class c ON c.oid = over.oid
        ORDER BY c.relname
        """
    )
    views = []
    for name, kind, definition, owner, options, grants, comment, columns, depends in rows:
        if kind != "v":
            raise RuntimeError(f"{name} reads events and is not a plain view: move it by hand")
        views.append(
            View(
                name,
                definition,
                owner,
                list(options),
                [tuple(g) for g in grants],
                comment,
                [tuple(c) for c in columns],
                set(depends),
            )
        )
    ordered: list[View] = []
    made: set[str] = set()
    while len(ordered) < len(views):
        ready = [v for v in views if v.name not in made and v.depends_on <= made]
        if not ready:
            raise RuntimeError("the views over events depend on each other in a circle")
        for view in ready:
            ordered.append(view)
            made.add(view.name)
    return ordered


def _make_views(views: list[View]) -> None:
    for view in views:
        options = f" WITH ({', '.join(view.options)})" if view.options else ""
        statements = [
            f"CREATE VIEW {view.name}{options} AS {view.definition}",
            f"ALTER VIEW {view.name} OWNER TO {view.owner};",
            *(f"GRANT {privilege} ON {view.name} TO {who};" for who, privilege in view.grants),
        ]
        if view.comment is not None:
            statements.append(f"COMMENT ON VIEW {view.name} IS {_literal(view.comment)};")
        statements += [
            f"COMMENT ON COLUMN {view.name}.{column} IS {_literal(text)};"
            for column, text in view.column_comments
        ]
        run("\n".join(statements))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _carried_over(table: str) -> tuple[list[str], list[str], list[str]]:
    """What ``table`` holds that the new events must hold again: its indexes (other than the
    keys this revision makes), its triggers (other than this revision's) and its grants."""
    indexes = [
        definition.replace(" ON ONLY ", " ON ")
        for name, definition in _rows(
            f"SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '{table}' "
            "AND schemaname = current_schema() ORDER BY indexname"
        )
        if name not in OWN_INDEXES
    ]
    triggers = [
        definition
        for name, definition in _rows(
            f"SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = '{table}'::regclass "
            "AND NOT tgisinternal ORDER BY tgname"
        )
        if name not in OWN_TRIGGERS
    ]
    grants = [
        f"GRANT {privilege} ON events TO {who};"
        for who, privilege in _rows(
            "SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' "
            "ELSE quote_ident(pg_get_userbyid(a.grantee)) END, a.privilege_type "
            f"FROM pg_class c, aclexplode(c.relacl) WITH ORDINALITY a "
            f"WHERE c.oid = '{table}'::regclass AND a.grantee <> c.relowner ORDER BY a.ordinality"
        )
    ]
    return indexes, triggers, grants


def _set_aside(old: str) -> None:
    """Rename events and what is named after it, so the new table can take the names."""
    names = _rows(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'events' "
        "AND schemaname = current_schema()"
    )
    run(
        "\n".join(
            [
                f"ALTER TABLE events RENAME TO {old};",
                f"ALTER SEQUENCE events_global_position_seq RENAME TO {old}_global_position_seq;",
                *(
                    f"ALTER INDEX {name} RENAME TO {old}_{name[len('events_') :]};"
                    for (name,) in names
                ),
            ]
        )
    )


def _functions_sql(path: str) -> str:
    statements = []
    for signature, text, grantee in FUNCTIONS:
        statements.append(text.replace("{search_path}", path))
        statements.append(f"ALTER FUNCTION {signature} OWNER TO chronicle_owner;")
        statements.append(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC;")
        if grantee:
            statements.append(f"GRANT EXECUTE ON FUNCTION {signature} TO {grantee};")
    return "\n".join(statements)


def _append_functions(path: str) -> str:
    return "\n".join(
        text.replace("{search_path}", path).replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
        for text in APPEND_FUNCTIONS
    )


def upgrade() -> None:
    path = search_path()
    old = "events_0025"
    views = _views_over_events()
    indexes, triggers, grants = _carried_over("events")
    _set_aside(old)
    if views:
        run(f"DROP VIEW {', '.join(v.name for v in views)};")
    run(NEW_TABLE)
    # The indexes first: each month made below makes its part of them under their names.
    run("\n".join(f"{statement};" for statement in indexes))
    run(_functions_sql(path))
    # The months from the oldest row's to two after this one, made before the rows move in.
    run(
        f"""
        SELECT chronicle_ensure_event_partitions(first, months)
        FROM (SELECT date_trunc('month', coalesce(min(created_at), now()) AT TIME ZONE 'UTC')::date
                     AS first
              FROM {old}) AS o,
             LATERAL (SELECT (extract(year FROM age(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                                    o.first)) * 12
                              + extract(month FROM age(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                                       o.first)))::integer + 3 AS months) AS m;
        """
    )
    run(
        f"""
        INSERT INTO events ({COLUMNS}) OVERRIDING SYSTEM VALUE SELECT {COLUMNS} FROM {old};
        INSERT INTO event_ids (event_id, session_id, seq, answers)
        SELECT event_id, session_id, seq,
               CASE WHEN kind = ANY (chronicle_observation_kinds()) THEN cause END
        FROM {old};
        UPDATE sessions s SET first_event_at = o.first_at, last_event_at = o.last_at
        FROM (SELECT session_id, min(created_at) AS first_at, max(created_at) AS last_at
              FROM {old} GROUP BY session_id) AS o
        WHERE o.session_id = s.id;
        SELECT setval(pg_get_serial_sequence('events', 'global_position'),
                      (SELECT max(global_position) FROM {old}))
        WHERE EXISTS (SELECT FROM {old});
        """
    )
    # The head exists only with events, and with them its bounds.
    run(
        "UPDATE sessions SET first_event_at = created_at, last_event_at = created_at "
        "WHERE first_event_at IS NULL;"
        "ALTER TABLE sessions ALTER COLUMN first_event_at SET NOT NULL, "
        "ALTER COLUMN last_event_at SET NOT NULL;"
    )
    run("\n".join(f"{statement};" for statement in triggers))
    run(CONSTRAINT_TRIGGERS)
    run(ANSWERS_KEY)
    run("\n".join(grants))
    run(f"DROP TABLE {old};")
    _make_views(views)
    run(_append_functions(path))
    run("ANALYZE events, event_ids, sessions;")


def _functions_before(path: str) -> str:
    """chronicle_append_one and chronicle_append as 0014 made them, chronicle_import as 0006."""
    v14 = earlier_revision("0014_app_role_limits.py")
    v06 = earlier_revision("0006_analytics.py")
    texts = (v14.APPEND_ONE_FUNCTION, v14.APPEND_FUNCTION, v06.IMPORT_FUNCTION)
    return "\n".join(
        text.replace("{search_path}", path).replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
        for text in texts
    )


def downgrade() -> None:
    path = search_path()
    old = "events_0026"
    views = _views_over_events()
    indexes, triggers, grants = _carried_over("events")
    observation_kinds = _rows("SELECT array_to_string(chronicle_observation_kinds(), ',')")[0][0]
    _set_aside(old)
    if views:
        run(f"DROP VIEW {', '.join(v.name for v in views)};")
    run(
        f"""
        CREATE TABLE events ({TABLE_BODY});
        ALTER TABLE events OWNER TO chronicle_owner;
        {COMMENT}
        INSERT INTO events ({COLUMNS}) OVERRIDING SYSTEM VALUE SELECT {COLUMNS} FROM {old};
        SELECT setval(pg_get_serial_sequence('events', 'global_position'),
                      (SELECT max(global_position) FROM {old}))
        WHERE EXISTS (SELECT FROM {old});
        """
    )
    kinds = ", ".join(f"'{kind}'" for kind in observation_kinds.split(","))
    run(
        OLD_KEYS
        + "CREATE UNIQUE INDEX events_one_observation_per_action ON events (session_id, cause)\n"
        + f"    WHERE cause IS NOT NULL AND kind IN ({kinds});"
    )
    run("\n".join(f"{statement};" for statement in (*indexes, *triggers)))
    run("\n".join(grants))
    run(f"DROP TABLE {old};")
    _make_views(views)
    run(_functions_before(path))
    run(
        "DROP FUNCTION "
        + ", ".join(signature for signature, _, _ in reversed(FUNCTIONS))
        + ";\nDROP TABLE event_ids;\n"
        "ALTER TABLE sessions DROP COLUMN first_event_at, DROP COLUMN last_event_at;"
    )
