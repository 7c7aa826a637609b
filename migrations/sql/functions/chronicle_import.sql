CREATE FUNCTION chronicle_import(
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
    v_link         bytea;
    v_chain_2      boolean := false;
    v_marker       jsonb;
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
        -- An event's hash is over its payload (chain 1, before migration 0029) or over the
        -- payload's tree commitment (chain 2): whichever it matches.
        v_link := sha256(v_hash || convert_to(
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
        IF v_link IS DISTINCT FROM p_hashes[i] THEN
            v_link := sha256(v_hash || convert_to(
                '{"cause":' || coalesce(p_causes[i]::text, 'null')
                || ',"chain":2,"created_at":"'
                || to_char(p_created_at[i] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                || '","event_id":"' || p_event_ids[i]::text
                || '","kind":' || to_json(p_kinds[i])::text
                || ',"payload_commitment":"'
                || encode(chronicle_tree_digest(p_payloads[i]::jsonb, uuid_send(p_event_ids[i])), 'hex')
                || '","schema_version":' || p_versions[i]::text
                || ',"seq":' || p_seqs[i]::text
                || ',"session_id":"' || p_session::text
                || '","source":' || to_json(p_sources[i])::text
                || '}', 'UTF8'));
            v_chain_2 := v_chain_2 OR v_link = p_hashes[i];
            -- An event of chain 1 whose whole payload was redacted matches neither: its hash
            -- is taken as given (the next one links to it) if its payload is one whole-payload
            -- marker, no chain-2 event came before it, and a redaction record of that digest
            -- (path "") follows it in this call (app/events/chain.py).
            v_marker := p_payloads[i]::jsonb;
            IF v_link IS DISTINCT FROM p_hashes[i] AND NOT v_chain_2
               AND jsonb_typeof(v_marker) = 'object' THEN
                IF (v_marker ->> '$redacted') ~ '^[0-9a-f]{64}$'
                   AND v_marker = jsonb_build_object('$redacted', v_marker ->> '$redacted',
                                                     'was', 'object')
                   AND EXISTS (
                       SELECT 1 FROM generate_subscripts(p_seqs, 1) AS j
                       WHERE j > i AND p_kinds[j] = 'redaction'
                         AND p_payloads[j]::jsonb ->> 'target_seq' = p_seqs[i]::text
                         AND coalesce(p_payloads[j]::jsonb ->> 'path', '') = ''
                         AND p_payloads[j]::jsonb ->> 'removed' = v_marker ->> '$redacted') THEN
                    v_link := p_hashes[i];
                END IF;
            END IF;
        END IF;
        v_hash := v_link;
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
