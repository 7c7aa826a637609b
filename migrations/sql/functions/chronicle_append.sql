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
        -- chain 2: over the payload's tree commitment (see chronicle_append_one)
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"chain":2,"created_at":"' || v_ts
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload_commitment":"'
            || encode(chronicle_tree_digest(p_payloads[i]::jsonb, uuid_send(p_event_ids[i])), 'hex')
            || '","schema_version":' || p_versions[i]::text
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
