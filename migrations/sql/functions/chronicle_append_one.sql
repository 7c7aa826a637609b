CREATE OR REPLACE FUNCTION chronicle_append_one(
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
    -- The chain covers the payload's tree commitment (chain 2: app/events/commitment.py), so
    -- a part can later be redacted and the chain still verify.
    hash := sha256(v_prev || convert_to(
        '{"cause":' || coalesce(p_cause::text, 'null')
        || ',"chain":2,"created_at":"'
        || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || p_event_id::text
        || '","kind":' || to_json(p_kind)::text
        || ',"payload_commitment":"'
        || encode(chronicle_tree_digest(v_payload, uuid_send(p_event_id)), 'hex')
        || '","schema_version":' || p_version::text
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
