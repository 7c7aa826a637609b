"""chronicle_append_one: a single event in one round trip, with scalar arguments.

Most appends carry one event (an action, an observation, a message). ``chronicle_append`` takes
column arrays, returns a set through ``RETURN QUERY`` and sends its NOTIFY only when asked; for
one event that costs measurably more than the work itself (the numbers are in the git history
of README.md's Benchmarks section). This function does exactly what ``chronicle_append`` does
for a one-event batch — the per-session lock, the expected-seq check, the gapless seq, the hash
chain over the same canonical text, the check that an observation answers an action of its
session, the sessions row — with scalar arguments and one output row.

``p_notify``: the caller may have the NOTIFY sent in this transaction (one round trip in all)
or send it itself after the commit. A transaction that notifies holds a database-wide lock
from its commit until the commit is flushed, so the store asks for it only when no other
append of its process is in flight (see app/store/coalescer.py).

Like every writer it runs as ``chronicle_owner`` with a pinned search_path, and only
``chronicle_app`` may execute it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-14
"""

from app.migrations.helpers import run, search_path

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SIGNATURE = (
    "chronicle_append_one(uuid, integer, uuid, text, text, integer, text, smallint, boolean)"
)

# The hashed text is exactly app.events.canonical.hashed_document(), as in chronicle_append.
APPEND_ONE_FUNCTION = r"""
CREATE FUNCTION chronicle_append_one(
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
    v_last     integer;
    v_prev     bytea;
    v_answered text;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_prev FROM sessions s WHERE s.id = p_session;
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
        FROM events e WHERE e.session_id = p_session AND e.seq = p_cause;
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

    INSERT INTO events AS e
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at, hash)
    VALUES (p_session, seq, p_event_id, p_kind, p_source, p_cause, p_payload::jsonb, p_version,
            created_at, hash)
    RETURNING e.global_position, e.tx INTO global_position, tx;

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, created_at, 1, hash);
    ELSE
        UPDATE sessions s SET last_seq = seq, last_hash = hash WHERE s.id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || seq::text);
    END IF;
END
$$;
"""

OWNERSHIP = f"ALTER FUNCTION {SIGNATURE} OWNER TO chronicle_owner;"

# Functions are executable by PUBLIC unless revoked: the writer is for chronicle_app only.
APP_PRIVILEGES = f"""
REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {SIGNATURE} TO chronicle_app;
"""

DROP_APPEND_ONE = f"DROP FUNCTION {SIGNATURE};"


def upgrade() -> None:
    run(APPEND_ONE_FUNCTION.replace("{search_path}", search_path()))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    run(DROP_APPEND_ONE)
