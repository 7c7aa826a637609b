CREATE FUNCTION public.chronicle_action_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ARRAY['file.edit', 'file.read', 'file.write', 'finish', 'imported', 'mcp.call', 'run', 'think']::text[] $$;

ALTER FUNCTION public.chronicle_action_kinds() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean) RETURNS TABLE(id uuid, name text, is_admin boolean, created_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    INSERT INTO users AS u (id, name, is_admin) VALUES (p_id, p_name, coalesce(p_is_admin, false))
    RETURNING u.id, u.name, u.is_admin, u.created_at;
$$;

ALTER FUNCTION public.chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_admins_by_owner() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF NEW.is_admin AND (TG_OP = 'INSERT' OR NOT OLD.is_admin) AND NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may make % an admin', NEW.name
            USING ERRCODE = 'CR015',
                  HINT = 'run the command with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;

ALTER FUNCTION public.chronicle_admins_by_owner() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_append(p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_notify boolean DEFAULT true) RETURNS TABLE(seq integer, global_position bigint, tx xid8, created_at timestamp with time zone, hash bytea)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
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

ALTER FUNCTION public.chronicle_append(p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_notify boolean) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_append_many(p_sessions uuid[], p_expected integer[], p_sizes integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[]) RETURNS TABLE(grp integer, seq integer, global_position bigint, tx xid8, created_at timestamp with time zone, hash bytea, error_state text, error_message text, error_detail text, error_constraint text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    g            integer;
    v_first      integer := 1;
    v_last       integer;
    v_state      text;
    v_message    text;
    v_detail     text;
    v_constraint text;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, keys.k)
    FROM (SELECT DISTINCT hashtext(s::text) AS k FROM unnest(p_sessions) AS s ORDER BY 1) AS keys;
    FOR g IN 1 .. coalesce(cardinality(p_sessions), 0) LOOP
        v_last := v_first + p_sizes[g] - 1;
        BEGIN
            RETURN QUERY
                SELECT g, a.seq, a.global_position, a.tx, a.created_at, a.hash,
                       NULL::text, NULL::text, NULL::text, NULL::text
                FROM chronicle_append(
                    p_sessions[g], p_expected[g], p_event_ids[v_first:v_last],
                    p_kinds[v_first:v_last], p_sources[v_first:v_last],
                    p_causes[v_first:v_last], p_payloads[v_first:v_last],
                    p_versions[v_first:v_last], false) AS a;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT,
                                    v_detail = PG_EXCEPTION_DETAIL,
                                    v_constraint = CONSTRAINT_NAME;
            RETURN QUERY SELECT g, NULL::integer, NULL::bigint, NULL::xid8, NULL::timestamptz,
                                NULL::bytea, v_state, v_message, v_detail, v_constraint;
        END;
        v_first := v_last + 1;
    END LOOP;
END
$$;

ALTER FUNCTION public.chronicle_append_many(p_sessions uuid[], p_expected integer[], p_sizes integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_append_one(p_session uuid, p_expected integer, p_event_id uuid, p_kind text, p_source text, p_cause integer, p_payload text, p_version smallint, p_notify boolean DEFAULT true, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
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

ALTER FUNCTION public.chronicle_append_one(p_session uuid, p_expected integer, p_event_id uuid, p_kind text, p_source text, p_cause integer, p_payload text, p_version smallint, p_notify boolean, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_archived_head() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
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
    -- A manifest rewritten without a secret (chronicle_rewrite_archive_manifest): that column
    -- alone, of the rows archived where the function says.
    IF current_setting('chronicle.rewriting_archive', true) = OLD.archived_to
       AND (NEW.id, NEW.last_seq, NEW.last_hash, NEW.archived_at, NEW.archived_to, NEW.archived_by)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.last_seq, OLD.last_hash, OLD.archived_at, OLD.archived_to, OLD.archived_by)
    THEN
        RETURN NEW;
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

ALTER FUNCTION public.chronicle_archived_head() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_begin_login(p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) RETURNS TABLE(login_id uuid, user_id uuid, name text, is_admin boolean, token_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_user uuid;
    v_token uuid;
    v_expires timestamptz;
BEGIN
    SELECT t.user_id, t.id, least(now() + make_interval(secs => p_hours * 3600), t.expires_at)
    INTO v_user, v_token, v_expires
    FROM api_tokens t JOIN users u ON u.id = t.user_id
    WHERE t.hash = p_token_hash AND t.kind = 'api' AND t.revoked_at IS NULL
      AND (t.expires_at IS NULL OR t.expires_at > now()) AND u.disabled_at IS NULL AND u.removed_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;

ALTER FUNCTION public.chronicle_begin_login(p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_canonical_json(p_value jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        RETURN '{' || coalesce((
            SELECT string_agg(to_json(e.key)::text || ':' || CASE jsonb_typeof(e.value)
                       WHEN 'object' THEN chronicle_canonical_json(e.value)
                       WHEN 'array' THEN chronicle_canonical_json(e.value)
                       WHEN 'number' THEN CASE WHEN strpos(e.value::text, '.') = 0 AND length(e.value::text) < 19
                                                THEN e.value::text
                                                ELSE chronicle_canonical_number(e.value::text) END
                       ELSE e.value::text END, ',' ORDER BY e.key COLLATE "C")
            FROM jsonb_each(p_value) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((
            SELECT string_agg(CASE jsonb_typeof(a.value)
                       WHEN 'object' THEN chronicle_canonical_json(a.value)
                       WHEN 'array' THEN chronicle_canonical_json(a.value)
                       WHEN 'number' THEN CASE WHEN strpos(a.value::text, '.') = 0 AND length(a.value::text) < 19
                                                THEN a.value::text
                                                ELSE chronicle_canonical_number(a.value::text) END
                       ELSE a.value::text END, ',' ORDER BY a.ord)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, ord)), '') || ']';
    WHEN 'number' THEN
        RETURN chronicle_canonical_number(p_value::text);
    ELSE
        RETURN p_value::text;
    END CASE;
END
$$;

ALTER FUNCTION public.chronicle_canonical_json(p_value jsonb) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_canonical_number(p_number text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    v_number numeric;
    v_float  double precision;
    v_text   text;
    v_digits text;
    v_shift  integer;
    v_exact  numeric;
BEGIN
    IF strpos(p_number, '.') = 0 THEN
        IF length(p_number) < 19 THEN
            RETURN p_number;
        END IF;
        v_number := p_number::numeric;
        IF v_number BETWEEN -9223372036854775808 AND 18446744073709551615 THEN
            RETURN p_number;
        END IF;
        IF abs(v_number) > 2::numeric ^ 1024 - 2::numeric ^ 971 THEN
            RETURN NULL;
        END IF;
        v_float := v_number::double precision;
        v_shift := floor(log(2, abs(v_number)))::integer - 53;
        v_exact := (v_float / 2::double precision ^ v_shift)::bigint * 2::numeric ^ v_shift;
        RETURN CASE WHEN v_exact = v_number THEN p_number END;
    END IF;
    v_number := abs(p_number::numeric);
    IF v_number >= 9007199254740992 OR v_number < 2.5e-324 THEN
        RETURN NULL;
    END IF;
    v_float := p_number::double precision;
    IF v_float = trunc(v_float) THEN
        RETURN NULL;
    END IF;
    v_text := v_float::text;
    IF v_text LIKE '%e+15' THEN
        v_digits := replace(split_part(ltrim(v_text, '-'), 'e', 1), '.', '');
        v_text := CASE WHEN v_float < 0 THEN '-' ELSE '' END
                  || left(v_digits, 16) || '.' || substr(v_digits, 17);
    END IF;
    RETURN v_text;
END
$$;

ALTER FUNCTION public.chronicle_canonical_number(p_number text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_claim_run(p_worker text, p_lease_seconds double precision) RETURNS TABLE(session_id uuid, lease_id uuid, attempts integer, reason text, requested_at timestamp with time zone, taken_over_from text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_session uuid;
    v_previous text;
BEGIN
    SELECT l.session_id, l.owner INTO v_session, v_previous
    FROM session_leases l
    WHERE l.lease_expires_at IS NULL OR l.lease_expires_at <= now()
    ORDER BY l.lease_expires_at NULLS FIRST, l.requested_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
        UPDATE session_leases l
        SET owner = p_worker, lease_id = gen_random_uuid(), claimed_at = now(),
            heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_seconds),
            attempts = l.attempts + 1
        WHERE l.session_id = v_session
        RETURNING l.session_id, l.lease_id, l.attempts, l.reason, l.requested_at, v_previous;
END
$$;

ALTER FUNCTION public.chronicle_claim_run(p_worker text, p_lease_seconds double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_count(p_value jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'number'
                 AND p_value::numeric BETWEEN 0 AND 9007199254740991
                 AND p_value::numeric = trunc(p_value::numeric)
                THEN p_value::numeric::bigint END
$$;

ALTER FUNCTION public.chronicle_count(p_value jsonb) OWNER TO chronicle_owner;

COMMENT ON FUNCTION public.chronicle_count(p_value jsonb) IS 'A count of a payload: a whole JSON number from 0 to 2^53 - 1, else NULL (unknown)';

CREATE FUNCTION public.chronicle_create_login_code(p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_expires timestamptz := now() + make_interval(secs => p_minutes * 60);
    v_admin boolean;
BEGIN
    -- FOR SHARE: a promotion (or a disable) not committed yet is waited for, then read.
    SELECT u.is_admin INTO v_admin FROM users u WHERE u.id = p_user AND u.disabled_at IS NULL AND u.removed_at IS NULL FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user is disabled' USING ERRCODE = 'CR010';
    END IF;
    -- A link signs in as the user: for an admin, only what may make an admin's token may
    -- make one (the owner's login, as 0014 has it for tokens), never the application's.
    IF v_admin AND NOT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'only the database owner''s login may make a sign-in link for an admin'
            USING ERRCODE = 'CR015';
    END IF;
    IF p_token IS NOT NULL THEN
        PERFORM 1 FROM api_tokens t WHERE t.id = p_token AND t.user_id = p_user
            AND t.kind = 'api' AND t.revoked_at IS NULL;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no such live token of this user' USING ERRCODE = 'CR010';
        END IF;
    END IF;
    INSERT INTO login_codes (id, user_id, token_id, hash, expires_at)
    VALUES (p_code, p_user, p_token, p_code_hash, v_expires);
    RETURN v_expires;
END
$$;

ALTER FUNCTION public.chronicle_create_login_code(p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_create_token(p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamp with time zone) RETURNS TABLE(id uuid, user_id uuid, user_name text, kind text, label text, created_at timestamp with time zone, expires_at timestamp with time zone, revoked_at timestamp with time zone, last_used_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    IF octet_length(p_hash) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'a token is kept as its sha256 (32 bytes), not % bytes',
            coalesce(octet_length(p_hash), 0) USING ERRCODE = 'CR005';
    END IF;
    RETURN QUERY
        WITH t AS (
            INSERT INTO api_tokens AS k (id, user_id, kind, label, hash, expires_at)
            VALUES (p_id, p_user, coalesce(p_kind, 'api'), left(coalesce(p_label, ''), 200),
                    p_hash, p_expires)
            RETURNING k.*
        )
        SELECT t.id, t.user_id, u.name, t.kind, t.label, t.created_at, t.expires_at,
               t.revoked_at, t.last_used_at
        FROM t JOIN users u ON u.id = t.user_id;
END
$$;

ALTER FUNCTION public.chronicle_create_token(p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamp with time zone) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_credentials_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_notify('chronicle_credentials', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

ALTER FUNCTION public.chronicle_credentials_changed() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_drop_event_partition(p_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_part record;
BEGIN
    SELECT * INTO v_part FROM chronicle_event_partitions() p WHERE p.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'events has no partition %', p_name
            USING ERRCODE = 'CR016', HINT = 'chronicle db partitions list names them';
    END IF;
    IF v_part.ends > now() THEN
        RAISE EXCEPTION 'the partition % holds events until %, which has not come yet', p_name,
            v_part.ends USING ERRCODE = 'CR016',
            HINT = 'only a month that has ended can be archived and dropped';
    END IF;
    PERFORM set_config('lock_timeout', '10s', true);
    IF v_part.attached THEN
        EXECUTE format('DELETE FROM event_ids k USING %I e WHERE k.event_id = e.event_id',
                       p_name);
        EXECUTE format('ALTER TABLE events DETACH PARTITION %I', p_name);
        EXECUTE format('DELETE FROM session_leases l WHERE l.session_id IN '
                       '(SELECT DISTINCT d.session_id FROM %I d) '
                       'AND NOT EXISTS (SELECT FROM events e WHERE e.session_id = l.session_id)',
                       p_name);
        EXECUTE format('DELETE FROM sessions s WHERE s.id IN '
                       '(SELECT DISTINCT d.session_id FROM %I d) '
                       'AND NOT EXISTS (SELECT FROM events e WHERE e.session_id = s.id)',
                       p_name);
    END IF;
    EXECUTE format('DROP TABLE %I', p_name);
END
$$;

ALTER FUNCTION public.chronicle_drop_event_partition(p_name text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_end_logins(p_user uuid, p_login uuid) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_count integer;
BEGIN
    UPDATE browser_logins l SET ended_at = now()
    WHERE l.user_id = p_user AND (p_login IS NULL OR l.id = p_login) AND l.ended_at IS NULL
      AND l.expires_at > now();
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;

ALTER FUNCTION public.chronicle_end_logins(p_user uuid, p_login uuid) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_ensure_event_partitions(p_from date, p_months integer) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_month date := date_trunc('month', p_from)::date;
    v_start timestamptz;
    v_end   timestamptz;
    v_name  text;
    -- The schema of events: the first of search_path is pg_catalog, where nothing is made.
    v_schema text := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE c.oid = 'events'::regclass);
BEGIN
    IF p_from IS NULL OR p_months IS NULL OR p_months < 0 OR p_months > 1200 THEN
        RAISE EXCEPTION 'partitions are made for 0 to 1200 months from a date, not % from %',
            p_months, p_from USING ERRCODE = 'CR005';
    END IF;
    PERFORM pg_advisory_xact_lock(1140, hashtext('events partitions'));
    -- Rather fail than queue every append behind a long DDL lock wait.
    PERFORM set_config('lock_timeout', '10s', true);
    FOR i IN 1 .. p_months LOOP
        v_start := v_month::timestamp AT TIME ZONE 'UTC';
        v_end := (v_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        v_name := 'events_' || to_char(v_month, 'YYYY_MM');
        IF NOT EXISTS (SELECT FROM chronicle_event_partitions() p
                       WHERE p.attached AND p.starts < v_end AND p.ends > v_start) THEN
            IF to_regclass(quote_ident(v_name)) IS NOT NULL THEN
                RAISE EXCEPTION 'a table % exists but is not a partition of events', v_name
                    USING ERRCODE = 'CR016',
                          HINT = 'attach it (ALTER TABLE events ATTACH PARTITION ...) or drop it';
            END IF;
            EXECUTE format('CREATE TABLE %I.%I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           v_schema, v_name);
            PERFORM chronicle_event_partition_keys(format('%I.%I', v_schema, v_name)::regclass);
            EXECUTE format('ALTER TABLE events ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                           v_schema, v_name, v_start, v_end);
            RETURN NEXT v_name;
        END IF;
        v_month := (v_month + interval '1 month')::date;
    END LOOP;
END
$$;

ALTER FUNCTION public.chronicle_ensure_event_partitions(p_from date, p_months integer) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_erase_session(p_session uuid, p_last_seq integer, p_last_hash bytea, p_erased_at timestamp with time zone, p_by text, p_policy text, p_key text, p_signature text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_row     sessions%ROWTYPE;
    v_deleted integer;
BEGIN
    IF p_session = '00000000-0000-4000-8000-00000000a0d1'::uuid THEN
        RAISE EXCEPTION 'the platform''s audit log is never erased' USING ERRCODE = 'CR022';
    END IF;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT * INTO v_row FROM sessions s WHERE s.id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'there is no session %', p_session
            USING ERRCODE = 'CR022', DETAIL = p_session::text;
    END IF;
    IF v_row.erased_at IS NOT NULL THEN
        RAISE EXCEPTION 'session % was erased already (at %, by %)', p_session,
            v_row.erased_at, v_row.erased_by
            USING ERRCODE = 'CR022', DETAIL = p_session::text;
    END IF;
    IF (v_row.last_seq, v_row.last_hash) IS DISTINCT FROM (p_last_seq, p_last_hash) THEN
        RAISE EXCEPTION 'session % has seq % now, not the % its tombstone was signed for',
            p_session, v_row.last_seq, p_last_seq
            USING ERRCODE = 'CR022', DETAIL = p_session::text,
                  HINT = 'it took an event meanwhile: sign its tombstone again';
    END IF;
    IF EXISTS (SELECT 1 FROM chronicle_usage_tail() t WHERE t.session_id = p_session) THEN
        RAISE EXCEPTION 'the usage rollups do not count all of session %''s model calls yet',
            p_session
            USING ERRCODE = 'CR023', DETAIL = p_session::text,
                  HINT = 'refresh them first (chronicle_refresh_usage_rollups), so the '
                         'aggregates outlive the events';
    END IF;
    UPDATE sessions s
       SET erased_at = p_erased_at, erased_by = p_by, erased_policy = p_policy,
           tombstone_key = p_key, tombstone_signature = p_signature
     WHERE s.id = p_session;
    PERFORM set_config('chronicle.erasing', p_session::text, true);
    DELETE FROM events e WHERE e.session_id = p_session;
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    PERFORM set_config('chronicle.erasing', '', true);
    DELETE FROM event_ids i WHERE i.session_id = p_session;
    DELETE FROM session_leases l WHERE l.session_id = p_session;
    DELETE FROM otel_spans o WHERE o.session_id = p_session;
    RETURN v_deleted;
END
$$;

ALTER FUNCTION public.chronicle_erase_session(p_session uuid, p_last_seq integer, p_last_hash bytea, p_erased_at timestamp with time zone, p_by text, p_policy text, p_key text, p_signature text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_erase_user(p_user uuid, p_new_name text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_name text;
BEGIN
    IF NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may erase a user'
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle users erase` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    SELECT u.name INTO v_name FROM users u WHERE u.id = p_user FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user' USING ERRCODE = 'CR010';
    END IF;
    UPDATE users SET name = p_new_name, is_admin = false,
                     removed_at = coalesce(removed_at, now()),
                     disabled_at = coalesce(disabled_at, now())
     WHERE id = p_user;
    UPDATE api_tokens SET label = '', revoked_at = coalesce(revoked_at, now())
     WHERE user_id = p_user;
    UPDATE browser_logins SET address = '', ended_at = coalesce(ended_at, now())
     WHERE user_id = p_user;
    DELETE FROM login_codes WHERE user_id = p_user;
    RETURN v_name;
END
$$;

ALTER FUNCTION public.chronicle_erase_user(p_user uuid, p_new_name text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_erased_head() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- An erased session's row is its tombstone: it takes no more events and stays as signed.
    RAISE EXCEPTION 'session % was erased (at %, by %): its tombstone cannot change',
        OLD.id, OLD.erased_at, OLD.erased_by
        USING ERRCODE = 'CR022', DETAIL = OLD.id::text;
END
$$;

ALTER FUNCTION public.chronicle_erased_head() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_event_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ARRAY['agent.condensation', 'agent.state', 'annotation', 'audit.fork_started', 'audit.login', 'audit.logout', 'audit.partition_detached', 'audit.redaction', 'audit.replay_started', 'audit.session_erased', 'audit.session_read', 'audit.sessions_archived', 'audit.token_created', 'audit.token_revoked', 'audit.user_changed', 'audit.user_erased', 'environment.divergence', 'error', 'eval.score', 'file.edit', 'file.edit.output', 'file.read', 'file.read.output', 'file.write', 'file.write.output', 'finish', 'imported', 'imported.output', 'llm.call', 'mcp.call', 'mcp.result', 'message', 'otel.span', 'redaction', 'replay.result', 'run', 'run.output', 'runtime.failed', 'runtime.ready', 'runtime.restarted', 'runtime.starting', 'session.closed', 'session.created', 'think', 'workspace.diff', 'workspace.snapshot']::text[] $$;

ALTER FUNCTION public.chronicle_event_kinds() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_event_partition_keys(p_partition regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_name  text := (SELECT c.relname FROM pg_class c WHERE c.oid = p_partition);
    v_index record;
BEGIN
    FOR v_index IN
        SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition
        FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
        WHERE x.indrelid = 'events'::regclass AND NOT x.indisprimary
    LOOP
        EXECUTE regexp_replace(
            v_index.definition, '^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ ',
            'CREATE \1INDEX IF NOT EXISTS '
            || quote_ident(v_name || substr(v_index.name, length('events') + 1))
            || ' ON ' || p_partition::text || ' ');
    END LOOP;
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id, seq)',
                   v_name || '_session_seq', p_partition);
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id, cause) '
                   'WHERE cause IS NOT NULL AND kind = ANY (%L::text[])',
                   v_name || '_one_observation_per_action', p_partition,
                   chronicle_observation_kinds());
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id) '
                   'WHERE kind = ''session.created''',
                   v_name || '_one_session_created', p_partition);
    IF NOT EXISTS (SELECT FROM pg_trigger t
                   WHERE t.tgrelid = p_partition AND t.tgname = 'events_no_truncate') THEN
        EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %s '
                       'FOR EACH STATEMENT EXECUTE FUNCTION chronicle_refuse_change()',
                       p_partition);
    END IF;
END
$$;

ALTER FUNCTION public.chronicle_event_partition_keys(p_partition regclass) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_event_partitions() RETURNS TABLE(name text, starts timestamp with time zone, ends timestamp with time zone, attached boolean)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
    -- The attached partitions, with the bounds PostgreSQL holds for them ...
    SELECT c.relname::text, b[1]::timestamptz, b[2]::timestamptz, true
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid,
         regexp_match(pg_get_expr(c.relpartbound, c.oid),
                      'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
    WHERE i.inhparent = 'events'::regclass
    UNION ALL
    -- ... and a month's table left behind, not attached (its month read from its name).
    SELECT c.relname::text, m::timestamp AT TIME ZONE 'UTC',
           (m + interval '1 month')::timestamp AT TIME ZONE 'UTC', false
    FROM pg_class c,
         make_date(substr(c.relname, 8, 4)::integer, substr(c.relname, 13, 2)::integer, 1) AS m
    WHERE c.relname ~ '^events_[0-9]{4}_(0[1-9]|1[0-2])$' AND c.relkind = 'r'
      AND NOT c.relispartition
      AND c.relnamespace = (SELECT e.relnamespace FROM pg_class e WHERE e.oid = 'events'::regclass)
    ORDER BY 2, 1
$_$;

ALTER FUNCTION public.chronicle_event_partitions() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_exchange_login_code(p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) RETURNS TABLE(login_id uuid, user_id uuid, name text, is_admin boolean, token_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_code uuid;
    v_user uuid;
    v_token uuid;
    v_expires timestamptz := now() + make_interval(secs => p_hours * 3600);
BEGIN
    UPDATE login_codes c SET used_at = now()
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now()
    RETURNING c.id, c.user_id, c.token_id INTO v_code, v_user, v_token;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM users u WHERE u.id = v_user AND u.disabled_at IS NULL AND u.removed_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_token IS NOT NULL THEN
        SELECT least(v_expires, t.expires_at) INTO v_expires FROM api_tokens t
        WHERE t.id = v_token AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    UPDATE login_codes c SET login_id = p_login WHERE c.id = v_code;
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;

ALTER FUNCTION public.chronicle_exchange_login_code(p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_float(p_value jsonb) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'number'
                 AND abs(p_value::numeric) <= 1e300
                THEN p_value::numeric::double precision END
$$;

ALTER FUNCTION public.chronicle_float(p_value jsonb) OWNER TO chronicle_owner;

COMMENT ON FUNCTION public.chronicle_float(p_value jsonb) IS 'A number of a payload as float8, else NULL (a string, or beyond what float8 holds)';

CREATE FUNCTION public.chronicle_forget(p_kind text, p_key bytea) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_hex text := encode(p_key, 'hex');
BEGIN
    IF p_kind = 'blob' THEN
        IF EXISTS (SELECT 1 FROM events e WHERE strpos(e.payload::text, '"' || v_hex || '"') > 0) THEN
            RETURN false;
        END IF;
        PERFORM set_config('chronicle.forgetting', 'blob:' || v_hex, true);
        DELETE FROM blobs b WHERE b.sha256 = p_key;
    ELSIF p_kind = 'message' THEN
        IF EXISTS (SELECT 1 FROM events e
                   WHERE e.kind = 'llm.call'
                     AND (e.payload -> 'prompt' ? v_hex OR e.payload ->> 'tools' = v_hex)) THEN
            RETURN false;
        END IF;
        PERFORM set_config('chronicle.forgetting', 'message:' || v_hex, true);
        DELETE FROM llm_messages m WHERE m.hash = p_key;
    ELSE
        RAISE EXCEPTION 'chronicle_forget forgets a blob or a message, not a %', p_kind
            USING ERRCODE = 'CR020';
    END IF;
    PERFORM set_config('chronicle.forgetting', '', true);
    RETURN true;
END
$$;

ALTER FUNCTION public.chronicle_forget(p_kind text, p_key bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_gen_ai_provider(p_model text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN strpos(p_model, '/') = 0 THEN NULL
                ELSE CASE split_part(p_model, '/', 1)
                         WHEN 'bedrock' THEN 'aws.bedrock'
                         WHEN 'azure' THEN 'azure.ai.openai'
                         WHEN 'azure_ai' THEN 'azure.ai.inference'
                         WHEN 'gemini' THEN 'gcp.gemini'
                         WHEN 'vertex_ai' THEN 'gcp.vertex_ai'
                         WHEN 'mistral' THEN 'mistral_ai'
                         WHEN 'xai' THEN 'x_ai'
                         WHEN 'watsonx' THEN 'ibm.watsonx.ai'
                         ELSE split_part(p_model, '/', 1)
                     END
           END
$$;

ALTER FUNCTION public.chronicle_gen_ai_provider(p_model text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_heartbeat_run(p_session uuid, p_lease uuid, p_lease_seconds double precision) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE session_leases l
    SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_seconds)
    WHERE l.session_id = p_session AND l.lease_id = p_lease;
    RETURN FOUND;
END
$$;

ALTER FUNCTION public.chronicle_heartbeat_run(p_session uuid, p_lease uuid, p_lease_seconds double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_import(p_session uuid, p_seqs integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_created_at timestamp with time zone[], p_hashes bytea[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION public.chronicle_import(p_session uuid, p_seqs integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_created_at timestamp with time zone[], p_hashes bytea[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_latency_bucket(ms double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN ms <= 0 THEN -2147483648 ELSE floor(ln(ms) / ln(1.01::float8))::integer END
$$;

ALTER FUNCTION public.chronicle_latency_bucket(ms double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_latency_percentile(p double precision, bands double precision[]) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n float8 := 0;
    rank float8;
    low float8;
    high float8;
    lo_value float8;
    hi_value float8;
    before float8 := 0;
    calls float8;
    i integer;
BEGIN
    FOR i IN 1 .. coalesce(array_length(bands, 1), 0) LOOP
        n := n + bands[i][1];
    END LOOP;
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    rank := p * (n - 1);
    low := floor(rank);
    high := ceil(rank);
    FOR i IN 1 .. array_length(bands, 1) LOOP
        calls := bands[i][1];
        IF lo_value IS NULL AND low < before + calls THEN
            lo_value := CASE WHEN low = before THEN bands[i][2]
                             WHEN low = before + calls - 1 THEN bands[i][3]
                             ELSE bands[i][2] + (bands[i][3] - bands[i][2])
                                  * (low - before) / (calls - 1) END;
        END IF;
        IF high < before + calls THEN
            hi_value := CASE WHEN high = before THEN bands[i][2]
                             WHEN high = before + calls - 1 THEN bands[i][3]
                             ELSE bands[i][2] + (bands[i][3] - bands[i][2])
                                  * (high - before) / (calls - 1) END;
            EXIT;
        END IF;
        before := before + calls;
    END LOOP;
    IF low = high THEN
        RETURN lo_value;
    END IF;
    RETURN lo_value + (rank - low) * (hi_value - lo_value);
END
$$;

ALTER FUNCTION public.chronicle_latency_percentile(p double precision, bands double precision[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_observation_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ARRAY['error', 'file.edit.output', 'file.read.output', 'file.write.output', 'imported.output', 'mcp.result', 'run.output']::text[] $$;

ALTER FUNCTION public.chronicle_observation_kinds() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_one_session_created() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(NEW.session_id::text));
    IF EXISTS (SELECT FROM events e
               WHERE e.session_id = NEW.session_id AND e.kind = 'session.created'
                 AND e.created_at >= least((SELECT s.first_event_at FROM sessions s
                                            WHERE s.id = NEW.session_id), NEW.created_at)
                 AND e.seq <> NEW.seq) THEN
        RAISE EXCEPTION 'session % already has its session.created event', NEW.session_id
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'events_one_session_created',
                  DETAIL = format('Key (session_id)=(%s) already exists.', NEW.session_id);
    END IF;
    RETURN NULL;
END
$$;

ALTER FUNCTION public.chronicle_one_session_created() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_owner_login() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') $$;

ALTER FUNCTION public.chronicle_owner_login() OWNER TO chronicle_owner;

COMMENT ON FUNCTION public.chronicle_owner_login() IS 'Is the login behind this statement (not the definer it runs as) the owner''s?';

CREATE FUNCTION public.chronicle_peek_login_code(p_code_hash bytea) RETURNS TABLE(name text, is_admin boolean, expires_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    SELECT u.name, u.is_admin, c.expires_at
    FROM login_codes c JOIN users u ON u.id = c.user_id
    LEFT JOIN api_tokens t ON t.id = c.token_id
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now() AND u.disabled_at IS NULL AND u.removed_at IS NULL
      AND (c.token_id IS NULL OR (t.revoked_at IS NULL
                                  AND (t.expires_at IS NULL OR t.expires_at > now())));
$$;

ALTER FUNCTION public.chronicle_peek_login_code(p_code_hash bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_platform_log_kinds() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    -- Its session.created again, later: a re-sent append, which the event id's uniqueness
    -- refuses as such (so seq 1 is the only one there is).
    IF ((NEW.kind LIKE 'audit.%' OR NEW.kind = 'redaction') AND NEW.seq > 1)
       OR (NEW.kind = 'session.created'
           AND NEW.event_id = '00000000-0000-4000-8000-00000000a0d2'::uuid
           AND NEW.payload->'config'->'platform_log' = 'true'::jsonb) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the platform''s audit log takes only audit records, not %', NEW.kind
        USING ERRCODE = 'CR014',
              HINT = 'the platform log''s session.created is the platform''s own (its fixed '
                     'event id, marked platform_log)';
END
$$;

ALTER FUNCTION public.chronicle_platform_log_kinds() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_promotion_ends_logins() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE browser_logins SET ended_at = now() WHERE user_id = NEW.id AND ended_at IS NULL;
    UPDATE login_codes SET used_at = now() WHERE user_id = NEW.id AND used_at IS NULL;
    RETURN NULL;
END
$$;

ALTER FUNCTION public.chronicle_promotion_ends_logins() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_promotion_revokes_tokens() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE api_tokens SET revoked_at = now()
    WHERE user_id = NEW.id AND revoked_at IS NULL AND NOT by_owner;
    RETURN NULL;
END
$$;

ALTER FUNCTION public.chronicle_promotion_revokes_tokens() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_put_blobs(p_hashes bytea[], p_texts text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_inserted integer;
BEGIN
    PERFORM chronicle_require_content_hashes('blob', p_hashes, p_texts);
    INSERT INTO blobs (sha256, content)
    SELECT t.hash, t.text FROM unnest(p_hashes, p_texts) AS t(hash, text)
    ON CONFLICT (sha256) DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted;
END
$$;

ALTER FUNCTION public.chronicle_put_blobs(p_hashes bytea[], p_texts text[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_put_messages(p_hashes bytea[], p_texts text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_inserted integer;
BEGIN
    PERFORM chronicle_require_content_hashes('message', p_hashes, p_texts);
    INSERT INTO llm_messages (hash, message)
    SELECT t.hash, t.text::jsonb FROM unnest(p_hashes, p_texts) AS t(hash, text)
    ON CONFLICT (hash) DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted;
END
$$;

ALTER FUNCTION public.chronicle_put_messages(p_hashes bytea[], p_texts text[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_redact(p_session uuid, p_seq integer, p_payload text, p_record_id uuid, p_record text, p_version smallint, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    SET extra_float_digits TO '1'
    AS $_$
#variable_conflict use_column
DECLARE
    v_new      jsonb;
    v_row      events%ROWTYPE;
    v_prev     bytea;
    v_salt     bytea;
    v_digest   bytea;
    v_head     text;
    v_tail     text;
    v_record   jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT e.* INTO v_row FROM events e WHERE e.session_id = p_session AND e.seq = p_seq;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session % has no event %', p_session, p_seq
            USING ERRCODE = 'CR020', DETAIL = p_seq::text;
    END IF;
    v_new := chronicle_verifiable_payload(v_row.kind, p_payload);
    v_salt := uuid_send(v_row.event_id);
    v_digest := chronicle_tree_digest(v_row.payload, v_salt);
    SELECT e.hash INTO v_prev FROM events e WHERE e.session_id = p_session AND e.seq = p_seq - 1;
    v_prev := coalesce(v_prev, '\x'::bytea);
    -- The hashed document's fields around the payload (chain 1) or its commitment (chain 2).
    v_head := ',"created_at":"'
        || to_char(v_row.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || v_row.event_id::text
        || '","kind":' || to_json(v_row.kind)::text;
    v_tail := ',"schema_version":' || v_row.schema_version::text
        || ',"seq":' || v_row.seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(v_row.source)::text
        || '}';
    IF v_row.hash = sha256(v_prev || convert_to(
        '{"cause":' || coalesce(v_row.cause::text, 'null') || ',"chain":2' || v_head
        || ',"payload_commitment":"' || encode(v_digest, 'hex') || '"' || v_tail, 'UTF8')) THEN
        IF chronicle_tree_digest(v_new, v_salt) IS DISTINCT FROM v_digest THEN
            RAISE EXCEPTION 'the new payload of event % is not its old one with parts redacted', p_seq
                USING ERRCODE = 'CR020', DETAIL = p_seq::text,
                      HINT = 'a redaction may only replace parts with their markers (app/events/commitment.py)';
        END IF;
    ELSIF v_row.hash = sha256(v_prev || convert_to(
        '{"cause":' || coalesce(v_row.cause::text, 'null') || v_head
        || ',"payload":' || chronicle_canonical_json(v_row.payload) || v_tail, 'UTF8')) THEN
        IF v_new IS DISTINCT FROM jsonb_build_object('$redacted', encode(v_digest, 'hex'),
                                                     'was', 'object') THEN
            RAISE EXCEPTION 'event % of session % was recorded before migration 0029: only its whole payload can be redacted',
                p_seq, p_session
                USING ERRCODE = 'CR021', DETAIL = p_seq::text,
                      HINT = 'its hash covers its payload''s text, so no part of it can go alone: '
                             'redact the whole payload (path "", chronicle redact without --field); '
                             'that proves the event''s place in the chain, not what was removed '
                             '(docs/erasure.md)';
        END IF;
        v_record := p_record::jsonb;
        IF v_record ->> 'target_seq' IS DISTINCT FROM p_seq::text
           OR coalesce(v_record ->> 'path', '') <> ''
           OR v_record ->> 'removed' IS DISTINCT FROM encode(v_digest, 'hex')
           OR v_record ->> 'was' IS DISTINCT FROM 'object' THEN
            RAISE EXCEPTION 'the redaction record of event % does not name its whole payload''s removal', p_seq
                USING ERRCODE = 'CR020', DETAIL = p_seq::text,
                      HINT = 'record target_seq, path "", the removed digest and was "object"';
        END IF;
    ELSE
        RAISE EXCEPTION 'event % of session % does not match its hash', p_seq, p_session
            USING ERRCODE = 'CR021', DETAIL = p_seq::text,
                  HINT = 'the log was changed, or its whole payload was redacted already: '
                         'run chronicle verify (docs/erasure.md)';
    END IF;
    PERFORM set_config('chronicle.redacting', p_session::text || ':' || p_seq::text, true);
    UPDATE events e SET payload = v_new WHERE e.session_id = p_session AND e.seq = p_seq;
    PERFORM set_config('chronicle.redacting', '', true);
    SELECT a.seq, a.global_position, a.tx, a.created_at, a.hash
    INTO seq, global_position, tx, created_at, hash
    FROM chronicle_append_one(p_session, NULL, p_record_id, 'redaction', 'user', NULL, p_record,
                              p_version) AS a;
END
$_$;

ALTER FUNCTION public.chronicle_redact(p_session uuid, p_seq integer, p_payload text, p_record_id uuid, p_record text, p_version smallint, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_refresh_usage_rollups(p_calls integer) RETURNS TABLE(counted bigint, caught_up boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_from_tx xid8;
    v_from_position bigint;
    v_to_tx xid8;
    v_to_position bigint;
    v_caught_up boolean := false;
    v_counted bigint;
BEGIN
    SELECT r.tx, r.global_position INTO v_from_tx, v_from_position
    FROM usage_rollup_position r WHERE r.name = 'usage' FOR UPDATE;
    -- The p_calls-th call after the position that every reader can see, else the last event
    -- every reader can see.
    SELECT e.tx, e.global_position INTO v_to_tx, v_to_position
    FROM events e
    WHERE e.kind = 'llm.call'
      AND (e.tx, e.global_position) > (v_from_tx, v_from_position)
      AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx, e.global_position
    OFFSET greatest(p_calls, 1) - 1 LIMIT 1;
    IF NOT FOUND THEN
        v_caught_up := true;
        SELECT e.tx, e.global_position INTO v_to_tx, v_to_position
        FROM events e
        WHERE e.tx < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx DESC, e.global_position DESC LIMIT 1;
        IF NOT FOUND OR (v_to_tx, v_to_position) <= (v_from_tx, v_from_position) THEN
            RETURN QUERY SELECT 0::bigint, true;
            RETURN;
        END IF;
    END IF;

    WITH batch AS MATERIALIZED (
        SELECT u.*, (u.created_at AT TIME ZONE 'UTC')::date AS day
        FROM usage_calls u
        LEFT JOIN usage_rollup_sessions r ON r.session_id = u.session_id
        WHERE (u.tx, u.global_position) > (v_from_tx, v_from_position)
          AND (u.tx, u.global_position) <= (v_to_tx, v_to_position)
          AND u.seq > coalesce(r.counted_seq, 0)
    ),
    answered AS MATERIALIZED (
        SELECT * FROM batch WHERE NOT replayed
    ),
    markers AS (
        INSERT INTO usage_rollup_day_sessions
            (session_id, day, gen_ai_request_model, gen_ai_provider_name)
        SELECT DISTINCT a.session_id, a.day, a.gen_ai_request_model, a.gen_ai_provider_name
        FROM answered a
        ON CONFLICT DO NOTHING
        RETURNING day, gen_ai_request_model, gen_ai_provider_name
    ),
    new_sessions AS (
        SELECT m.day, m.gen_ai_request_model, m.gen_ai_provider_name, count(*) AS sessions
        FROM markers m GROUP BY 1, 2, 3
    ),
    day_sums AS (
        SELECT a.day, a.gen_ai_request_model, a.gen_ai_provider_name,
               count(*) AS llm_calls,
               count(*) FILTER (WHERE a.error_message IS NOT NULL) AS failed_llm_calls,
               sum(a.gen_ai_usage_input_tokens) AS input_tokens,
               sum(a.gen_ai_usage_output_tokens) AS output_tokens,
               sum(a.gen_ai_usage_cache_read_input_tokens) AS cache_read_input_tokens,
               sum(a.cost_usd) AS cost_usd,
               count(*) FILTER (WHERE a.cost_usd IS NULL AND a.error_message IS NULL)
                   AS unpriced_calls,
               sum(a."gen_ai.usage.cache_creation.input_tokens") AS cache_creation_input_tokens,
               sum(a."gen_ai.usage.reasoning.output_tokens") AS reasoning_output_tokens,
               count(*) FILTER (WHERE a.usage_unknown) AS unknown_usage_calls
        FROM answered a GROUP BY 1, 2, 3
    ),
    days AS (
        INSERT INTO usage_rollup_days AS d
        SELECT s.day, s.gen_ai_request_model, s.gen_ai_provider_name,
               coalesce(n.sessions, 0), s.llm_calls, s.failed_llm_calls, s.input_tokens,
               s.output_tokens, s.cache_read_input_tokens, s.cost_usd, s.unpriced_calls,
               s.cache_creation_input_tokens, s.reasoning_output_tokens, s.unknown_usage_calls
        FROM day_sums s
        LEFT JOIN new_sessions n
            ON n.day = s.day
           AND n.gen_ai_request_model IS NOT DISTINCT FROM s.gen_ai_request_model
           AND n.gen_ai_provider_name IS NOT DISTINCT FROM s.gen_ai_provider_name
        ON CONFLICT (day, gen_ai_request_model, gen_ai_provider_name) DO UPDATE SET
            sessions = d.sessions + excluded.sessions,
            llm_calls = d.llm_calls + excluded.llm_calls,
            failed_llm_calls = d.failed_llm_calls + excluded.failed_llm_calls,
            input_tokens = coalesce(d.input_tokens + excluded.input_tokens, d.input_tokens, excluded.input_tokens),
            output_tokens = coalesce(d.output_tokens + excluded.output_tokens, d.output_tokens, excluded.output_tokens),
            cache_read_input_tokens = coalesce(d.cache_read_input_tokens + excluded.cache_read_input_tokens, d.cache_read_input_tokens, excluded.cache_read_input_tokens),
            cost_usd = coalesce(d.cost_usd + excluded.cost_usd, d.cost_usd, excluded.cost_usd),
            unpriced_calls = d.unpriced_calls + excluded.unpriced_calls,
            cache_creation_input_tokens = coalesce(d.cache_creation_input_tokens + excluded.cache_creation_input_tokens, d.cache_creation_input_tokens, excluded.cache_creation_input_tokens),
            reasoning_output_tokens = coalesce(d.reasoning_output_tokens + excluded.reasoning_output_tokens, d.reasoning_output_tokens, excluded.reasoning_output_tokens),
            unknown_usage_calls = d.unknown_usage_calls + excluded.unknown_usage_calls
        RETURNING 1
    ),
    bands AS (
        INSERT INTO usage_rollup_latencies AS l
        SELECT a.day, a.gen_ai_request_model, a.gen_ai_provider_name,
               chronicle_latency_bucket(a.latency_ms), count(*), min(a.latency_ms),
               max(a.latency_ms)
        FROM answered a
        WHERE a.error_message IS NULL AND a.latency_ms IS NOT NULL
        GROUP BY 1, 2, 3, 4
        ON CONFLICT (day, gen_ai_request_model, gen_ai_provider_name, bucket) DO UPDATE SET
            calls = l.calls + excluded.calls,
            min_ms = least(l.min_ms, excluded.min_ms),
            max_ms = greatest(l.max_ms, excluded.max_ms)
        RETURNING 1
    ),
    per_session AS (
        INSERT INTO usage_rollup_sessions AS r
        SELECT b.session_id, max(b.seq),
               count(*) FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.error_message IS NOT NULL),
               sum(b.gen_ai_usage_input_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.gen_ai_usage_output_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.cost_usd) FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.cost_usd IS NULL
                                      AND b.error_message IS NULL),
               array_agg(DISTINCT b.gen_ai_request_model ORDER BY b.gen_ai_request_model)
                   FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE b.replayed),
               sum(b.cost_usd) FILTER (WHERE b.replayed),
               sum(b."gen_ai.usage.cache_creation.input_tokens") FILTER (WHERE NOT b.replayed),
               sum(b."gen_ai.usage.reasoning.output_tokens") FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.usage_unknown)
        FROM batch b
        GROUP BY b.session_id
        ON CONFLICT (session_id) DO UPDATE SET
            counted_seq = greatest(r.counted_seq, excluded.counted_seq),
            llm_calls = r.llm_calls + excluded.llm_calls,
            failed_llm_calls = r.failed_llm_calls + excluded.failed_llm_calls,
            input_tokens = coalesce(r.input_tokens + excluded.input_tokens, r.input_tokens, excluded.input_tokens),
            output_tokens = coalesce(r.output_tokens + excluded.output_tokens, r.output_tokens, excluded.output_tokens),
            cache_read_input_tokens = coalesce(r.cache_read_input_tokens + excluded.cache_read_input_tokens, r.cache_read_input_tokens, excluded.cache_read_input_tokens),
            cost_usd = coalesce(r.cost_usd + excluded.cost_usd, r.cost_usd, excluded.cost_usd),
            unpriced_calls = r.unpriced_calls + excluded.unpriced_calls,
            models = (SELECT array_agg(DISTINCT m ORDER BY m)
                      FROM unnest(r.models || excluded.models) AS m),
            replayed_llm_calls = r.replayed_llm_calls + excluded.replayed_llm_calls,
            replayed_cost_usd = coalesce(r.replayed_cost_usd + excluded.replayed_cost_usd, r.replayed_cost_usd, excluded.replayed_cost_usd),
            cache_creation_input_tokens = coalesce(r.cache_creation_input_tokens + excluded.cache_creation_input_tokens, r.cache_creation_input_tokens, excluded.cache_creation_input_tokens),
            reasoning_output_tokens = coalesce(r.reasoning_output_tokens + excluded.reasoning_output_tokens, r.reasoning_output_tokens, excluded.reasoning_output_tokens),
            unknown_usage_calls = r.unknown_usage_calls + excluded.unknown_usage_calls
        RETURNING 1
    )
    -- (every data-modifying part runs to its end whether read or not)
    SELECT count(*) INTO v_counted FROM batch;

    UPDATE usage_rollup_position
    SET tx = v_to_tx, global_position = v_to_position, refreshed_at = now()
    WHERE name = 'usage';
    RETURN QUERY SELECT v_counted, v_caught_up;
END
$$;

ALTER FUNCTION public.chronicle_refresh_usage_rollups(p_calls integer) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one';
END
$$;

ALTER FUNCTION public.chronicle_refuse_change() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_refuse_content_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'blobs' THEN
        IF current_setting('chronicle.forgetting', true) = 'blob:' || encode(OLD.sha256, 'hex') THEN
            RETURN OLD;
        END IF;
    ELSIF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'llm_messages' THEN
        IF current_setting('chronicle.forgetting', true) = 'message:' || encode(OLD.hash, 'hex') THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'content goes only when every event that names it was redacted (chronicle redact)';
END
$$;

ALTER FUNCTION public.chronicle_refuse_content_change() OWNER TO CURRENT_USER;

CREATE FUNCTION public.chronicle_refuse_event_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND current_setting('chronicle.redacting', true) = OLD.session_id::text || ':' || OLD.seq::text
       AND (NEW.global_position, NEW.session_id, NEW.seq, NEW.event_id, NEW.tx, NEW.kind,
            NEW.source, NEW.cause, NEW.schema_version, NEW.created_at, NEW.hash)
           IS NOT DISTINCT FROM
           (OLD.global_position, OLD.session_id, OLD.seq, OLD.event_id, OLD.tx, OLD.kind,
            OLD.source, OLD.cause, OLD.schema_version, OLD.created_at, OLD.hash) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE'
       AND current_setting('chronicle.erasing', true) = OLD.session_id::text THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one, or redact '
                     'content with chronicle redact';
END
$$;

ALTER FUNCTION public.chronicle_refuse_event_change() OWNER TO CURRENT_USER;

CREATE FUNCTION public.chronicle_release_run(p_session uuid, p_lease uuid, p_outcome text, p_retry_after double precision DEFAULT 0) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF p_outcome IS NULL OR p_outcome NOT IN ('ended', 'handed_back') THEN
        RAISE EXCEPTION 'a release is ended or handed_back, not %', p_outcome
            USING ERRCODE = 'CR005';
    END IF;
    IF p_outcome = 'ended' THEN
        DELETE FROM session_leases l
        WHERE l.session_id = p_session AND l.lease_id = p_lease
          AND l.requested_at <= l.claimed_at;
        IF FOUND THEN
            RETURN 'released';
        END IF;
    END IF;
    UPDATE session_leases l
    SET owner = NULL, lease_id = NULL, claimed_at = NULL, heartbeat_at = NULL, attempts = 0,
        lease_expires_at = CASE WHEN p_retry_after > 0
                                THEN now() + make_interval(secs => p_retry_after) END
    WHERE l.session_id = p_session AND l.lease_id = p_lease;
    IF NOT FOUND THEN
        RETURN 'not_held';
    END IF;
    PERFORM pg_notify('chronicle_runs', p_session::text);
    RETURN 'requeued';
END
$$;

ALTER FUNCTION public.chronicle_release_run(p_session uuid, p_lease uuid, p_outcome text, p_retry_after double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_request_run(p_session uuid, p_reason text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    LOOP
        INSERT INTO session_leases (session_id, reason) VALUES (p_session, p_reason)
        ON CONFLICT (session_id) DO NOTHING;
        IF FOUND THEN
            PERFORM pg_notify('chronicle_runs', p_session::text);
            RETURN 'requested';
        END IF;
        -- Running: remember the request, so that the run's release keeps the row.
        UPDATE session_leases l SET requested_at = now(), reason = p_reason
        WHERE l.session_id = p_session AND l.owner IS NOT NULL;
        IF FOUND THEN
            RETURN 'running';
        END IF;
        PERFORM 1 FROM session_leases l WHERE l.session_id = p_session AND l.owner IS NULL;
        IF FOUND THEN
            RETURN 'waiting';
        END IF;
        -- Released between our statements: request it afresh.
    END LOOP;
END
$$;

ALTER FUNCTION public.chronicle_request_run(p_session uuid, p_reason text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_require_content_hashes(p_what text, p_hashes bytea[], p_texts text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_bad integer;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) <> coalesce(cardinality(p_texts), 0) THEN
        RAISE EXCEPTION '% hashes but % texts', coalesce(cardinality(p_hashes), 0),
            coalesce(cardinality(p_texts), 0) USING ERRCODE = 'CR005';
    END IF;
    SELECT t.ord INTO v_bad
    FROM unnest(p_hashes, p_texts) WITH ORDINALITY AS t(hash, text, ord)
    WHERE t.hash IS NULL OR t.text IS NULL
       OR sha256(convert_to(t.text, 'UTF8')) IS DISTINCT FROM t.hash
    ORDER BY t.ord
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% % of % does not match its hash %', p_what, v_bad,
            cardinality(p_hashes), coalesce(encode(p_hashes[v_bad], 'hex'), 'NULL')
            USING ERRCODE = 'CR004', DETAIL = v_bad::text,
                  HINT = 'the key of stored content is the sha256 of its canonical JSON text';
    END IF;
END
$$;

ALTER FUNCTION public.chronicle_require_content_hashes(p_what text, p_hashes bytea[], p_texts text[]) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_restore_archived(p_session uuid, p_last_seq integer, p_head bytea) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_head record;
    v_here bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash, s.archived_at INTO v_head
    FROM sessions s WHERE s.id = p_session FOR UPDATE;
    IF NOT FOUND OR v_head.archived_at IS NULL THEN
        RETURN false;
    END IF;
    SELECT count(*) INTO v_here FROM events e WHERE e.session_id = p_session;
    IF v_here = v_head.last_seq THEN
        RETURN false;  -- all still here: the import finds them present
    ELSIF v_here > 0 THEN
        RAISE EXCEPTION 'session % is archived here and % of its % events are still here (its other months were dropped): an import cannot fill the gap',
            p_session, v_here, v_head.last_seq USING ERRCODE = 'CR006',
            HINT = 'import the archive into another database, or read it in place (chronicle sql --archive DIR)';
    END IF;
    IF (v_head.last_seq, v_head.last_hash) IS DISTINCT FROM (p_last_seq, p_head) THEN
        RAISE EXCEPTION 'session % was archived here at seq % with another head than the import''s (seq %)',
            p_session, v_head.last_seq, p_last_seq USING ERRCODE = 'CR006',
            HINT = 'the archive is not the one this database archived the session to';
    END IF;
    PERFORM set_config('chronicle.restoring_archived', p_session::text, true);
    DELETE FROM sessions WHERE id = p_session;
    PERFORM set_config('chronicle.restoring_archived', '', true);
    RETURN true;
END
$$;

ALTER FUNCTION public.chronicle_restore_archived(p_session uuid, p_last_seq integer, p_head bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_revoke_token(p_token uuid, p_user uuid) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    WITH revoked AS (
        UPDATE api_tokens SET revoked_at = now()
        WHERE id = p_token AND revoked_at IS NULL AND (p_user IS NULL OR user_id = p_user)
        RETURNING id
    )
    SELECT EXISTS (SELECT FROM revoked);
$$;

ALTER FUNCTION public.chronicle_revoke_token(p_token uuid, p_user uuid) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_rewrite_archive_manifest(p_archived_to text, p_old bytea, p_new bytea) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_rows integer;
BEGIN
    IF octet_length(p_new) <> 32 THEN
        RAISE EXCEPTION 'a manifest''s sha256 is 32 bytes' USING ERRCODE = 'CR017';
    END IF;
    PERFORM set_config('chronicle.rewriting_archive', p_archived_to, true);
    UPDATE sessions s SET archive_manifest = p_new
     WHERE s.archived_to = p_archived_to AND s.archive_manifest = p_old AND s.erased_at IS NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM set_config('chronicle.rewriting_archive', '', true);
    IF v_rows = 0 THEN
        RAISE EXCEPTION 'no session is archived to % with that manifest', p_archived_to
            USING ERRCODE = 'CR017';
    END IF;
    RETURN v_rows;
END
$$;

ALTER FUNCTION public.chronicle_rewrite_archive_manifest(p_archived_to text, p_old bytea, p_new bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_set_user_state(p_user uuid, p_state text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may change a user''s state (%)', p_state
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle users` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    PERFORM 1 FROM users u WHERE u.id = p_user AND u.removed_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user was removed' USING ERRCODE = 'CR010';
    END IF;
    IF p_state = 'disabled' THEN
        UPDATE users SET disabled_at = now() WHERE id = p_user AND disabled_at IS NULL;
        IF NOT FOUND THEN RETURN false; END IF;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
    ELSIF p_state = 'enabled' THEN
        UPDATE users SET disabled_at = NULL WHERE id = p_user AND disabled_at IS NOT NULL;
        IF NOT FOUND THEN RETURN false; END IF;
    ELSIF p_state = 'removed' THEN
        UPDATE users SET removed_at = now(), disabled_at = coalesce(disabled_at, now())
        WHERE id = p_user;
        UPDATE api_tokens SET revoked_at = now() WHERE user_id = p_user AND revoked_at IS NULL;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
        UPDATE login_codes SET used_at = now() WHERE user_id = p_user AND used_at IS NULL;
    ELSIF p_state IN ('admin', 'member') THEN
        UPDATE users SET is_admin = (p_state = 'admin')
        WHERE id = p_user AND is_admin <> (p_state = 'admin');
        IF NOT FOUND THEN RETURN false; END IF;
    ELSE
        RAISE EXCEPTION 'a user state is disabled, enabled, removed, admin or member, not %',
            p_state USING ERRCODE = 'CR010';
    END IF;
    RETURN true;
END
$$;

ALTER FUNCTION public.chronicle_set_user_state(p_user uuid, p_state text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_token_by_hash(p_hash bytea) RETURNS TABLE(id uuid, user_id uuid, kind text, expires_at timestamp with time zone, revoked_at timestamp with time zone, last_used_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    SELECT t.id, t.user_id, t.kind, t.expires_at, t.revoked_at, t.last_used_at
    FROM api_tokens t WHERE t.hash = p_hash;
$$;

ALTER FUNCTION public.chronicle_token_by_hash(p_hash bytea) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_tokens_by_owner() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NOT NULL
       AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'token % is revoked, and stays revoked', OLD.id USING ERRCODE = 'CR015';
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.by_owner := chronicle_owner_login();
    END IF;
    IF chronicle_owner_login() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.hash, NEW.user_id, NEW.kind, NEW.created_at, NEW.by_owner)
       IS DISTINCT FROM (OLD.hash, OLD.user_id, OLD.kind, OLD.created_at, OLD.by_owner) THEN
        RAISE EXCEPTION 'only the database owner''s login may change what token % is', OLD.id
            USING ERRCODE = 'CR015';
    END IF;
    -- FOR SHARE: a promotion not committed yet is waited for and then read, never the user
    -- as it was (its revocation cannot see this row, not committed yet either).
    IF TG_OP = 'INSERT' AND (SELECT u.is_admin FROM users u WHERE u.id = NEW.user_id FOR SHARE) THEN
        RAISE EXCEPTION 'only the database owner''s login may make a token for an admin'
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle tokens create` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;

ALTER FUNCTION public.chronicle_tokens_by_owner() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_tool_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ARRAY['file.edit', 'file.read', 'file.write', 'mcp.call', 'run']::text[] $$;

ALTER FUNCTION public.chronicle_tool_kinds() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_touch_login(p_login uuid, p_resolution double precision) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    UPDATE browser_logins SET last_used_at = now()
    WHERE id = p_login AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;

ALTER FUNCTION public.chronicle_touch_login(p_login uuid, p_resolution double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_touch_token(p_token uuid, p_resolution double precision) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    UPDATE api_tokens SET last_used_at = now()
    WHERE id = p_token AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;

ALTER FUNCTION public.chronicle_touch_token(p_token uuid, p_resolution double precision) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_tree_digest(p_value jsonb, p_salt bytea) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $_$
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        IF p_value ? '$redacted' AND jsonb_typeof(p_value -> '$redacted') = 'string'
           AND (p_value ->> '$redacted') ~ '^[0-9a-f]{64}$'
           AND NOT EXISTS (SELECT 1 FROM jsonb_object_keys(p_value) AS k
                           WHERE k NOT IN ('$redacted', 'was'))
           AND coalesce(jsonb_typeof(p_value -> 'was'), 'string') = 'string'
           AND coalesce(p_value ->> 'was', 'null')
               IN ('string', 'number', 'boolean', 'null', 'array', 'object') THEN
            RETURN decode(p_value ->> '$redacted', 'hex');
        END IF;
        RETURN sha256(p_salt || '\x6f'::bytea || coalesce((
            SELECT string_agg(k.h || chronicle_tree_digest(e.value, p_salt), ''::bytea ORDER BY k.h)
            FROM jsonb_each(p_value) AS e,
                 LATERAL (SELECT sha256(convert_to(e.key, 'UTF8')) AS h) AS k), ''::bytea));
    WHEN 'array' THEN
        RETURN sha256(p_salt || '\x61'::bytea || coalesce((
            SELECT string_agg(chronicle_tree_digest(a.value, p_salt), ''::bytea ORDER BY a.ord)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, ord)), ''::bytea));
    ELSE
        RETURN sha256(p_salt || '\x73'::bytea
                      || convert_to(chronicle_canonical_json(p_value), 'UTF8'));
    END CASE;
END
$_$;

ALTER FUNCTION public.chronicle_tree_digest(p_value jsonb, p_salt bytea) OWNER TO chronicle_owner;

CREATE TABLE public.events (
    global_position bigint NOT NULL,
    session_id uuid NOT NULL,
    seq integer NOT NULL,
    event_id uuid NOT NULL,
    tx xid8 DEFAULT pg_current_xact_id() NOT NULL,
    kind text NOT NULL,
    source text NOT NULL,
    cause integer,
    payload jsonb NOT NULL,
    schema_version smallint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    hash bytea NOT NULL,
    CONSTRAINT events_cause_earlier CHECK (((cause >= 1) AND (cause < seq))),
    CONSTRAINT events_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT events_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_.]*$'::text)),
    CONSTRAINT events_seq_check CHECK ((seq >= 1)),
    CONSTRAINT events_source_check CHECK ((source = ANY (ARRAY['user'::text, 'agent'::text, 'environment'::text, 'system'::text])))
)
PARTITION BY RANGE (created_at);

ALTER TABLE public.events OWNER TO chronicle_owner;

COMMENT ON TABLE public.events IS 'Chronicle event log: append-only, one hash chain per session. Write through chronicle_append().';

CREATE VIEW public.usage_calls AS
 SELECT session_id,
    seq,
    event_id,
    created_at,
    cause,
    'chat'::text AS gen_ai_operation_name,
    (payload ->> 'model'::text) AS gen_ai_request_model,
    public.chronicle_gen_ai_provider((payload ->> 'model'::text)) AS gen_ai_provider_name,
    public.chronicle_float(((payload -> 'params'::text) -> 'temperature'::text)) AS gen_ai_request_temperature,
    public.chronicle_count(((payload -> 'params'::text) -> 'max_tokens'::text)) AS gen_ai_request_max_tokens,
    (payload ->> 'tool_calling'::text) AS tool_calling,
    public.chronicle_float((payload -> 'latency_ms'::text)) AS latency_ms,
    public.chronicle_count((payload -> 'attempts'::text)) AS attempts,
    COALESCE(public.chronicle_count(((payload -> 'usage'::text) -> 'prompt_tokens'::text)), (
        CASE
            WHEN (NOT COALESCE(((payload -> 'usage'::text) ? 'prompt_tokens'::text), false)) THEN 0
            ELSE NULL::integer
        END)::bigint) AS gen_ai_usage_input_tokens,
    COALESCE(public.chronicle_count(((payload -> 'usage'::text) -> 'completion_tokens'::text)), (
        CASE
            WHEN (NOT COALESCE(((payload -> 'usage'::text) ? 'completion_tokens'::text), false)) THEN 0
            ELSE NULL::integer
        END)::bigint) AS gen_ai_usage_output_tokens,
    COALESCE(public.chronicle_count(((payload -> 'usage'::text) -> 'cached_tokens'::text)), (
        CASE
            WHEN (NOT COALESCE(((payload -> 'usage'::text) ? 'cached_tokens'::text), false)) THEN 0
            ELSE NULL::integer
        END)::bigint) AS gen_ai_usage_cache_read_input_tokens,
    public.chronicle_float((payload -> 'cost_usd'::text)) AS cost_usd,
        CASE
            WHEN (((payload -> 'response'::text) ->> 'finish_reason'::text) IS NOT NULL) THEN ARRAY[((payload -> 'response'::text) ->> 'finish_reason'::text)]
            ELSE NULL::text[]
        END AS gen_ai_response_finish_reasons,
        CASE
            WHEN (jsonb_typeof(((payload -> 'response'::text) -> 'tool_calls'::text)) = 'array'::text) THEN jsonb_array_length(((payload -> 'response'::text) -> 'tool_calls'::text))
            ELSE 0
        END AS response_tool_calls,
    (payload ->> 'error_kind'::text) AS error_type,
    (payload ->> 'error'::text) AS error_message,
    (payload ? 'replayed_from'::text) AS replayed,
    public.chronicle_count((payload -> 'replayed_from'::text)) AS replayed_from,
    public.chronicle_count(((payload -> 'usage'::text) -> 'prompt_tokens'::text)) AS "gen_ai.usage.input_tokens",
    public.chronicle_count(((payload -> 'usage'::text) -> 'completion_tokens'::text)) AS "gen_ai.usage.output_tokens",
    public.chronicle_count(((payload -> 'usage'::text) -> 'cached_tokens'::text)) AS "gen_ai.usage.cache_read.input_tokens",
    public.chronicle_count(((payload -> 'usage'::text) -> 'cache_creation_tokens'::text)) AS "gen_ai.usage.cache_creation.input_tokens",
    public.chronicle_count(((payload -> 'usage'::text) -> 'reasoning_tokens'::text)) AS "gen_ai.usage.reasoning.output_tokens",
    ((payload -> 'response'::text) ->> 'id'::text) AS "gen_ai.response.id",
    ((payload -> 'response'::text) ->> 'model'::text) AS "gen_ai.response.model",
    (payload ->> 'error_kind'::text) AS "error.type",
    ((NOT (jsonb_typeof(((payload -> 'usage'::text) -> 'as_sent'::text)) IS DISTINCT FROM 'object'::text)) OR (EXISTS ( SELECT 1
           FROM jsonb_each(
                CASE
                    WHEN (jsonb_typeof((e.payload -> 'usage'::text)) = 'object'::text) THEN (e.payload -> 'usage'::text)
                    ELSE NULL::jsonb
                END) c(key, value)
          WHERE ((c.key = ANY (ARRAY['prompt_tokens'::text, 'completion_tokens'::text, 'total_tokens'::text, 'cached_tokens'::text])) AND (public.chronicle_count(c.value) IS NULL))))) AS usage_unknown,
    (COALESCE(((payload -> 'response'::text) ->> 'reasoning_content'::text), ''::text) <> ''::text) AS has_reasoning,
    tx,
    global_position
   FROM public.events e
  WHERE (kind = 'llm.call'::text);

ALTER VIEW public.usage_calls OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_usage_tail() RETURNS SETOF public.usage_calls
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_tx xid8 := '0';
    v_position bigint := 0;
BEGIN
    SELECT r.tx, r.global_position INTO v_tx, v_position
    FROM usage_rollup_position r WHERE r.name = 'usage';
    RETURN QUERY EXECUTE
        'SELECT u.* FROM usage_calls u '
        'LEFT JOIN usage_rollup_sessions r ON r.session_id = u.session_id '
        'WHERE u.tx >= $1 AND (u.tx, u.global_position) > ($1, $2) '
        'AND u.seq > coalesce(r.counted_seq, 0)'
        USING coalesce(v_tx, '0'::xid8), coalesce(v_position, 0);
END
$_$;

ALTER FUNCTION public.chronicle_usage_tail() OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_verifiable_payload(p_kind text, p_payload text, p_index integer DEFAULT 1) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET extra_float_digits TO '1'
    AS $$
DECLARE
    v_payload jsonb := p_payload::jsonb;
BEGIN
    IF p_kind IS NOT NULL AND NOT (p_kind = ANY (chronicle_event_kinds())) THEN
        RAISE EXCEPTION 'event % has the kind %, which the protocol does not know', p_index, p_kind
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'append only the kinds of app/events (verify could not read the event)';
    END IF;
    IF jsonb_typeof(v_payload) IS DISTINCT FROM 'object' AND v_payload IS NOT NULL THEN
        RAISE EXCEPTION 'event % has a payload that is a JSON %, not an object', p_index,
            jsonb_typeof(v_payload) USING ERRCODE = 'CR014', DETAIL = p_index::text;
    END IF;
    IF chronicle_canonical_json(v_payload) IS DISTINCT FROM p_payload THEN
        RAISE EXCEPTION 'event % has a payload text that is not canonical JSON', p_index
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'send the payload as app.events.canonical writes it (sorted keys, no '
                         'whitespace): the chain covers that text, and verify re-hashes the stored value';
    END IF;
    RETURN v_payload;
END
$$;

ALTER FUNCTION public.chronicle_verifiable_payload(p_kind text, p_payload text, p_index integer) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_worker_gone(p_worker text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
    DELETE FROM workers WHERE worker_id = p_worker;
$$;

ALTER FUNCTION public.chronicle_worker_gone(p_worker text) OWNER TO chronicle_owner;

CREATE FUNCTION public.chronicle_worker_seen(p_worker text, p_host text, p_pid integer, p_role text, p_running integer, p_capacity integer, p_forget_after double precision) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO workers AS w (worker_id, host, pid, role, started_at, last_seen_at, running,
                              capacity)
    VALUES (p_worker, p_host, p_pid, p_role, now(), now(), p_running, p_capacity)
    ON CONFLICT (worker_id) DO UPDATE
    SET last_seen_at = now(), running = EXCLUDED.running, capacity = EXCLUDED.capacity;
    -- Workers that died without saying so: gone from the list after a while.
    DELETE FROM workers w
    WHERE w.last_seen_at < now() - make_interval(secs => p_forget_after);
END
$$;

ALTER FUNCTION public.chronicle_worker_seen(p_worker text, p_host text, p_pid integer, p_role text, p_running integer, p_capacity integer, p_forget_after double precision) OWNER TO chronicle_owner;

CREATE VIEW public.agent_states AS
 SELECT session_id,
    seq,
    event_id,
    created_at,
    source,
    (payload ->> 'state'::text) AS state,
    (payload ->> 'reason'::text) AS reason,
        CASE
            WHEN (payload ? 'limit'::text) THEN (payload ->> 'limit'::text)
            WHEN ((payload ->> 'reason'::text) ~~ 'reached the iteration limit%'::text) THEN 'iterations'::text
            WHEN ((payload ->> 'reason'::text) ~~ 'reached the cost limit%'::text) THEN 'cost'::text
            ELSE NULL::text
        END AS limit_reached
   FROM public.events e
  WHERE (kind = 'agent.state'::text);

ALTER VIEW public.agent_states OWNER TO chronicle_owner;

CREATE VIEW public.annotations AS
 SELECT session_id,
    seq,
    ((payload ->> 'target_seq'::text))::integer AS target_seq,
    (payload ->> 'label'::text) AS label,
    COALESCE((payload ->> 'comment'::text), ''::text) AS comment,
    ARRAY( SELECT jsonb_array_elements_text(COALESCE((e.payload -> 'tags'::text), '[]'::jsonb)) AS jsonb_array_elements_text) AS tags,
    (payload ->> 'user'::text) AS annotated_by,
    created_at,
    event_id
   FROM public.events e
  WHERE ((kind = 'annotation'::text) AND (NOT (payload ? 'replayed_from'::text)));

ALTER VIEW public.annotations OWNER TO chronicle_owner;

COMMENT ON VIEW public.annotations IS 'People''s labels on sessions (target_seq NULL) and on their events, with comment, tags, who and when';

CREATE TABLE public.api_tokens (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    kind text DEFAULT 'api'::text NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    by_owner boolean DEFAULT false NOT NULL,
    CONSTRAINT api_tokens_hash_check CHECK ((octet_length(hash) = 32)),
    CONSTRAINT api_tokens_kind_check CHECK ((kind = ANY (ARRAY['api'::text, 'cookie'::text])))
);

ALTER TABLE public.api_tokens OWNER TO chronicle_owner;

COMMENT ON TABLE public.api_tokens IS 'Only the sha256 of each token; the token is shown once when created.';

COMMENT ON COLUMN public.api_tokens.kind IS 'api: an Authorization: Bearer token; cookie: a browser login''s session cookie';

COMMENT ON COLUMN public.api_tokens.by_owner IS 'made by an owner login (set by a trigger); the others are revoked when the user is promoted';

CREATE TABLE public.blobs (
    sha256 bytea NOT NULL,
    content text NOT NULL,
    bytes integer GENERATED ALWAYS AS (octet_length(content)) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT blobs_sha256_check CHECK ((length(sha256) = 32))
);

ALTER TABLE public.blobs OWNER TO chronicle_owner;

COMMENT ON TABLE public.blobs IS 'Long payload strings, stored once: a payload holds {"$blob": "<sha256 hex>", "chars": N} where the string was; sha256 is the sha256 of content''s UTF-8 bytes.';

CREATE TABLE public.browser_logins (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    token_id uuid,
    hash bytea NOT NULL,
    address text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    last_used_at timestamp with time zone,
    CONSTRAINT browser_logins_hash_check CHECK ((octet_length(hash) = 32))
);

ALTER TABLE public.browser_logins OWNER TO chronicle_owner;

COMMENT ON TABLE public.browser_logins IS 'A browser''s session cookie (its sha256 only); live while its token and user are.';

COMMENT ON COLUMN public.browser_logins.token_id IS 'the API token the login was made with (NULL: a sign-in link made for the user)';

CREATE TABLE public.checkpoints (
    name text NOT NULL,
    tx xid8 NOT NULL,
    global_position bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE public.checkpoints OWNER TO chronicle_owner;

CREATE TABLE public.chronicle_schema_version (
    version_num character varying(32) NOT NULL
);

ALTER TABLE public.chronicle_schema_version OWNER TO CURRENT_USER;

CREATE TABLE public.usage_rollup_day_sessions (
    session_id uuid NOT NULL,
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text
);

ALTER TABLE public.usage_rollup_day_sessions OWNER TO chronicle_owner;

CREATE TABLE public.usage_rollup_days (
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text,
    sessions bigint NOT NULL,
    llm_calls bigint NOT NULL,
    failed_llm_calls bigint NOT NULL,
    input_tokens numeric,
    output_tokens numeric,
    cache_read_input_tokens numeric,
    cost_usd double precision,
    unpriced_calls bigint NOT NULL,
    cache_creation_input_tokens numeric,
    reasoning_output_tokens numeric,
    unknown_usage_calls bigint NOT NULL
);

ALTER TABLE public.usage_rollup_days OWNER TO chronicle_owner;

CREATE TABLE public.usage_rollup_latencies (
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text,
    bucket integer NOT NULL,
    calls bigint NOT NULL,
    min_ms double precision NOT NULL,
    max_ms double precision NOT NULL
);

ALTER TABLE public.usage_rollup_latencies OWNER TO chronicle_owner;

CREATE VIEW public.daily_usage AS
 WITH tail AS MATERIALIZED (
         SELECT c.session_id,
            c.seq,
            c.event_id,
            c.created_at,
            c.cause,
            c.gen_ai_operation_name,
            c.gen_ai_request_model,
            c.gen_ai_provider_name,
            c.gen_ai_request_temperature,
            c.gen_ai_request_max_tokens,
            c.tool_calling,
            c.latency_ms,
            c.attempts,
            c.gen_ai_usage_input_tokens,
            c.gen_ai_usage_output_tokens,
            c.gen_ai_usage_cache_read_input_tokens,
            c.cost_usd,
            c.gen_ai_response_finish_reasons,
            c.response_tool_calls,
            c.error_type,
            c.error_message,
            c.replayed,
            c.replayed_from,
            c."gen_ai.usage.input_tokens",
            c."gen_ai.usage.output_tokens",
            c."gen_ai.usage.cache_read.input_tokens",
            c."gen_ai.usage.cache_creation.input_tokens",
            c."gen_ai.usage.reasoning.output_tokens",
            c."gen_ai.response.id",
            c."gen_ai.response.model",
            c."error.type",
            c.usage_unknown,
            c.has_reasoning,
            c.tx,
            c.global_position,
            c.day,
                CASE
                    WHEN (NOT (EXISTS ( SELECT 1
                       FROM public.usage_rollup_day_sessions m
                      WHERE ((m.session_id = c.session_id) AND (m.day = c.day) AND (NOT (m.gen_ai_request_model IS DISTINCT FROM c.gen_ai_request_model)) AND (NOT (m.gen_ai_provider_name IS DISTINCT FROM c.gen_ai_provider_name)))))) THEN c.session_id
                    ELSE NULL::uuid
                END AS uncounted_session
           FROM ( SELECT u.session_id,
                    u.seq,
                    u.event_id,
                    u.created_at,
                    u.cause,
                    u.gen_ai_operation_name,
                    u.gen_ai_request_model,
                    u.gen_ai_provider_name,
                    u.gen_ai_request_temperature,
                    u.gen_ai_request_max_tokens,
                    u.tool_calling,
                    u.latency_ms,
                    u.attempts,
                    u.gen_ai_usage_input_tokens,
                    u.gen_ai_usage_output_tokens,
                    u.gen_ai_usage_cache_read_input_tokens,
                    u.cost_usd,
                    u.gen_ai_response_finish_reasons,
                    u.response_tool_calls,
                    u.error_type,
                    u.error_message,
                    u.replayed,
                    u.replayed_from,
                    u."gen_ai.usage.input_tokens",
                    u."gen_ai.usage.output_tokens",
                    u."gen_ai.usage.cache_read.input_tokens",
                    u."gen_ai.usage.cache_creation.input_tokens",
                    u."gen_ai.usage.reasoning.output_tokens",
                    u."gen_ai.response.id",
                    u."gen_ai.response.model",
                    u."error.type",
                    u.usage_unknown,
                    u.has_reasoning,
                    u.tx,
                    u.global_position,
                    ((u.created_at AT TIME ZONE 'UTC'::text))::date AS day
                   FROM public.chronicle_usage_tail() u(session_id, seq, event_id, created_at, cause, gen_ai_operation_name, gen_ai_request_model, gen_ai_provider_name, gen_ai_request_temperature, gen_ai_request_max_tokens, tool_calling, latency_ms, attempts, gen_ai_usage_input_tokens, gen_ai_usage_output_tokens, gen_ai_usage_cache_read_input_tokens, cost_usd, gen_ai_response_finish_reasons, response_tool_calls, error_type, error_message, replayed, replayed_from, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens", "gen_ai.response.id", "gen_ai.response.model", "error.type", usage_unknown, has_reasoning, tx, global_position)
                  WHERE (NOT u.replayed)) c
        ), tail_sums AS (
         SELECT t.day,
            t.gen_ai_request_model,
            t.gen_ai_provider_name,
            count(DISTINCT t.uncounted_session) AS sessions,
            count(*) AS llm_calls,
            count(*) FILTER (WHERE (t.error_message IS NOT NULL)) AS failed_llm_calls,
            sum(t.gen_ai_usage_input_tokens) AS input_tokens,
            sum(t.gen_ai_usage_output_tokens) AS output_tokens,
            sum(t.gen_ai_usage_cache_read_input_tokens) AS cache_read_input_tokens,
            sum(t.cost_usd) AS cost_usd,
            count(*) FILTER (WHERE ((t.cost_usd IS NULL) AND (t.error_message IS NULL))) AS unpriced_calls,
            sum(t."gen_ai.usage.cache_creation.input_tokens") AS cache_creation_input_tokens,
            sum(t."gen_ai.usage.reasoning.output_tokens") AS reasoning_output_tokens,
            count(*) FILTER (WHERE t.usage_unknown) AS unknown_usage_calls
           FROM tail t
          GROUP BY t.day, t.gen_ai_request_model, t.gen_ai_provider_name
        ), sums AS (
         SELECT p.day,
            p.gen_ai_request_model,
            p.gen_ai_provider_name,
            (sum(p.sessions))::bigint AS sessions,
            (sum(p.llm_calls))::bigint AS llm_calls,
            (sum(p.failed_llm_calls))::bigint AS failed_llm_calls,
            COALESCE(sum(p.input_tokens), (0)::numeric) AS gen_ai_usage_input_tokens,
            COALESCE(sum(p.output_tokens), (0)::numeric) AS gen_ai_usage_output_tokens,
            COALESCE(sum(p.cache_read_input_tokens), (0)::numeric) AS gen_ai_usage_cache_read_input_tokens,
            sum(p.cost_usd) AS cost_usd,
            (sum(p.unpriced_calls))::bigint AS unpriced_calls,
            COALESCE(sum(p.cache_creation_input_tokens), (0)::numeric) AS cache_creation_input_tokens,
            COALESCE(sum(p.reasoning_output_tokens), (0)::numeric) AS reasoning_output_tokens,
            (sum(p.unknown_usage_calls))::bigint AS unknown_usage_calls
           FROM ( SELECT d.day,
                    d.gen_ai_request_model,
                    d.gen_ai_provider_name,
                    d.sessions,
                    d.llm_calls,
                    d.failed_llm_calls,
                    d.input_tokens,
                    d.output_tokens,
                    d.cache_read_input_tokens,
                    d.cost_usd,
                    d.unpriced_calls,
                    d.cache_creation_input_tokens,
                    d.reasoning_output_tokens,
                    d.unknown_usage_calls
                   FROM public.usage_rollup_days d
                UNION ALL
                 SELECT tail_sums.day,
                    tail_sums.gen_ai_request_model,
                    tail_sums.gen_ai_provider_name,
                    tail_sums.sessions,
                    tail_sums.llm_calls,
                    tail_sums.failed_llm_calls,
                    tail_sums.input_tokens,
                    tail_sums.output_tokens,
                    tail_sums.cache_read_input_tokens,
                    tail_sums.cost_usd,
                    tail_sums.unpriced_calls,
                    tail_sums.cache_creation_input_tokens,
                    tail_sums.reasoning_output_tokens,
                    tail_sums.unknown_usage_calls
                   FROM tail_sums) p
          GROUP BY p.day, p.gen_ai_request_model, p.gen_ai_provider_name
        ), bands AS (
         SELECT b.day,
            b.gen_ai_request_model,
            b.gen_ai_provider_name,
            b.bucket,
            sum(b.calls) AS calls,
            min(b.min_ms) AS min_ms,
            max(b.max_ms) AS max_ms
           FROM ( SELECT l.day,
                    l.gen_ai_request_model,
                    l.gen_ai_provider_name,
                    l.bucket,
                    l.calls,
                    l.min_ms,
                    l.max_ms
                   FROM public.usage_rollup_latencies l
                UNION ALL
                 SELECT t.day,
                    t.gen_ai_request_model,
                    t.gen_ai_provider_name,
                    public.chronicle_latency_bucket(t.latency_ms) AS chronicle_latency_bucket,
                    count(*) AS count,
                    min(t.latency_ms) AS min,
                    max(t.latency_ms) AS max
                   FROM tail t
                  WHERE ((t.error_message IS NULL) AND (t.latency_ms IS NOT NULL))
                  GROUP BY t.day, t.gen_ai_request_model, t.gen_ai_provider_name, (public.chronicle_latency_bucket(t.latency_ms))) b
          GROUP BY b.day, b.gen_ai_request_model, b.gen_ai_provider_name, b.bucket
        ), histograms AS (
         SELECT b.day,
            b.gen_ai_request_model,
            b.gen_ai_provider_name,
            array_agg(ARRAY[(b.calls)::double precision, b.min_ms, b.max_ms] ORDER BY b.bucket) AS bands
           FROM bands b
          GROUP BY b.day, b.gen_ai_request_model, b.gen_ai_provider_name
        )
 SELECT s.day,
    s.gen_ai_request_model,
    s.gen_ai_provider_name,
    s.sessions,
    s.llm_calls,
    s.failed_llm_calls,
    s.gen_ai_usage_input_tokens,
    s.gen_ai_usage_output_tokens,
    s.gen_ai_usage_cache_read_input_tokens,
    s.cost_usd,
    s.unpriced_calls,
    public.chronicle_latency_percentile((0.5)::double precision, h.bands) AS latency_p50_ms,
    public.chronicle_latency_percentile((0.95)::double precision, h.bands) AS latency_p95_ms,
    s.cache_creation_input_tokens AS "gen_ai.usage.cache_creation.input_tokens",
    s.reasoning_output_tokens AS "gen_ai.usage.reasoning.output_tokens",
    s.unknown_usage_calls
   FROM (sums s
     LEFT JOIN histograms h ON (((h.day = s.day) AND (NOT (h.gen_ai_request_model IS DISTINCT FROM s.gen_ai_request_model)) AND (NOT (h.gen_ai_provider_name IS DISTINCT FROM s.gen_ai_provider_name)))));

ALTER VIEW public.daily_usage OWNER TO chronicle_owner;

CREATE VIEW public.errors AS
 SELECT e.session_id,
    e.seq,
    e.event_id,
    e.created_at,
    e.kind,
        CASE e.kind
            WHEN 'error'::text THEN NULLIF((e.payload ->> 'error_type'::text), ''::text)
            WHEN 'llm.call'::text THEN (e.payload ->> 'error_kind'::text)
            ELSE NULL::text
        END AS error_type,
        CASE e.kind
            WHEN 'error'::text THEN (e.payload ->> 'message'::text)
            WHEN 'llm.call'::text THEN (e.payload ->> 'error'::text)
            WHEN 'agent.state'::text THEN (e.payload ->> 'reason'::text)
            WHEN 'runtime.failed'::text THEN (e.payload ->> 'message'::text)
            ELSE NULL::text
        END AS message,
    e.cause,
    c.kind AS cause_kind,
    (e.payload ? 'replayed_from'::text) AS replayed
   FROM (public.events e
     LEFT JOIN public.events c ON (((c.session_id = e.session_id) AND (c.seq = e.cause))))
  WHERE ((e.kind = 'error'::text) OR (e.kind = 'runtime.failed'::text) OR ((e.kind = 'llm.call'::text) AND ((e.payload ->> 'error'::text) IS NOT NULL)) OR ((e.kind = 'agent.state'::text) AND ((e.payload ->> 'state'::text) = 'error'::text)));

ALTER VIEW public.errors OWNER TO chronicle_owner;

CREATE TABLE public.session_state (
    session_id uuid NOT NULL,
    title text,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    status text,
    agent_state text,
    state_reason text,
    agent text,
    model text,
    runtime text,
    workspace text,
    steps integer DEFAULT 0 NOT NULL,
    model_calls integer DEFAULT 0 NOT NULL,
    failed_calls integer DEFAULT 0 NOT NULL,
    priced_calls integer DEFAULT 0 NOT NULL,
    unpriced_calls integer DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cached_tokens bigint DEFAULT 0 NOT NULL,
    cost_usd numeric,
    errors integer DEFAULT 0 NOT NULL,
    last_seq integer NOT NULL,
    replay_of uuid,
    forked_from uuid,
    evaluation_run text,
    served_calls integer DEFAULT 0 NOT NULL,
    served_cost_usd numeric,
    erased_at timestamp with time zone,
    CONSTRAINT session_state_status_check CHECK ((status = ANY (ARRAY['working'::text, 'finished'::text, 'awaiting_user_input'::text, 'paused'::text, 'stopped'::text, 'limit'::text, 'error'::text, 'erased'::text])))
);

ALTER TABLE public.session_state OWNER TO chronicle_owner;

COMMENT ON TABLE public.session_state IS 'One row per session, derived from the log by the session_state projection (chronicle projections rebuild session_state recomputes it).';

COMMENT ON COLUMN public.session_state.created_at IS 'when the session''s first event was recorded';

COMMENT ON COLUMN public.session_state.updated_at IS 'when its last event was recorded';

COMMENT ON COLUMN public.session_state.ended_at IS 'when the agent last stopped working (null while it works, or never did)';

COMMENT ON COLUMN public.session_state.status IS 'working (shown as running while a process holds the session''s claim, else interrupted), finished, awaiting_user_input, paused, stopped, limit, error';

COMMENT ON COLUMN public.session_state.agent_state IS 'the controller''s last agent.state';

COMMENT ON COLUMN public.session_state.state_reason IS 'the reason it gave, as recorded';

COMMENT ON COLUMN public.session_state.model IS 'the model of the last model call (before any: the configured one)';

COMMENT ON COLUMN public.session_state.steps IS 'actions the agent took (think and finish included)';

COMMENT ON COLUMN public.session_state.failed_calls IS 'model calls that failed for good (error set)';

COMMENT ON COLUMN public.session_state.priced_calls IS 'model calls with a known cost';

COMMENT ON COLUMN public.session_state.unpriced_calls IS 'answered model calls whose cost is unknown (a model without a price)';

COMMENT ON COLUMN public.session_state.cost_usd IS 'sum of the known costs; null when no call has a price and some have none';

COMMENT ON COLUMN public.session_state.errors IS 'error events (actions that could not be carried out)';

COMMENT ON COLUMN public.session_state.last_seq IS 'seq of its last event: the number of events';

COMMENT ON COLUMN public.session_state.served_calls IS 'model calls a replay served from its recording (no model was called; not in model_calls)';

COMMENT ON COLUMN public.session_state.served_cost_usd IS 'what the served calls cost when recorded (not spent again; not in cost_usd)';

COMMENT ON COLUMN public.session_state.erased_at IS 'when the session was erased (status erased): its content is gone, its counts stay';

CREATE VIEW public.evaluation_sessions AS
 WITH members AS (
         SELECT s_1.session_id,
            s_1.evaluation_run
           FROM public.session_state s_1
          WHERE ((s_1.evaluation_run IS NOT NULL) AND (s_1.replay_of IS NULL) AND (s_1.forked_from IS NULL))
        UNION ALL
         SELECT s_1.session_id,
            tag.evaluation_run
           FROM (public.session_state s_1
             CROSS JOIN LATERAL ( SELECT (e.payload ->> 'evaluation_run'::text) AS evaluation_run
                   FROM public.events e
                  WHERE ((e.session_id = s_1.session_id) AND (e.kind = 'eval.score'::text) AND ((e.payload ->> 'name'::text) = 'replay'::text) AND ((e.payload ->> 'evaluation_run'::text) IS NOT NULL))
                  ORDER BY e.seq DESC
                 LIMIT 1) tag)
          WHERE (s_1.replay_of IS NOT NULL)
        ), trials AS (
         SELECT m.evaluation_run,
            COALESCE((((c.payload -> 'config'::text) -> 'evaluation_task'::text) ->> 'id'::text), (m.session_id)::text) AS task_id,
            COALESCE((((c.payload -> 'config'::text) ->> 'evaluation_epoch'::text))::integer, 1) AS epoch,
            COALESCE((((c.payload -> 'config'::text) ->> 'evaluation_attempt'::text))::integer, 1) AS attempt,
            COALESCE((((c.payload -> 'config'::text) ->> 'evaluation_resume'::text))::integer, 0) AS resume,
            m.session_id
           FROM (members m
             JOIN public.events c ON (((c.session_id = m.session_id) AND (c.seq = 1))))
        ), ranked AS (
         SELECT t.evaluation_run,
            t.task_id,
            t.epoch,
            t.attempt,
            t.resume,
            t.session_id,
            row_number() OVER (PARTITION BY t.evaluation_run, t.task_id, t.epoch ORDER BY t.attempt DESC, t.session_id) AS newest,
            count(*) OVER (PARTITION BY t.evaluation_run, t.task_id, t.epoch) AS attempts
           FROM trials t
        )
 SELECT r.evaluation_run,
    r.task_id,
    r.epoch,
    r.attempt,
    (r.attempts - 1) AS superseded,
    r.resume,
    r.session_id,
    s.replay_of,
    s.created_at,
    s.ended_at,
    s.status,
        CASE
            WHEN ((s.status = 'error'::text) AND COALESCE(((last_state.payload ->> 'stuck'::text))::boolean, (s.state_reason ~~ 'the agent looks stuck%'::text))) THEN 'stuck'::text
            WHEN (s.status = 'awaiting_user_input'::text) THEN 'awaiting_input'::text
            WHEN (s.status = 'working'::text) THEN 'interrupted'::text
            ELSE s.status
        END AS ending,
    s.state_reason,
    COALESCE(v.verdicts, '{}'::jsonb) AS verdicts,
    COALESCE(((v.counted > 0) AND v.all_pass), false) AS passed,
    s.steps,
    s.model_calls,
    s.input_tokens,
    s.output_tokens,
    s.cost_usd,
    s.unpriced_calls,
    EXTRACT(epoch FROM (COALESCE(s.ended_at, s.updated_at) - s.created_at)) AS wall_seconds
   FROM (((ranked r
     JOIN public.session_state s ON ((s.session_id = r.session_id)))
     LEFT JOIN LATERAL ( SELECT e.payload
           FROM public.events e
          WHERE ((e.session_id = r.session_id) AND (e.kind = 'agent.state'::text) AND (e.source = 'agent'::text))
          ORDER BY e.seq DESC
         LIMIT 1) last_state ON (true))
     LEFT JOIN LATERAL ( SELECT jsonb_object_agg(latest.name, latest.label) AS verdicts,
            count(*) FILTER (WHERE (latest.label = ANY (ARRAY['pass'::text, 'fail'::text, 'error'::text]))) AS counted,
            COALESCE(bool_and((latest.label = 'pass'::text)) FILTER (WHERE (latest.label = ANY (ARRAY['pass'::text, 'fail'::text, 'error'::text]))), false) AS all_pass
           FROM ( SELECT DISTINCT ON ((e.payload ->> 'name'::text)) (e.payload ->> 'name'::text) AS name,
                    (e.payload ->> 'score_label'::text) AS label
                   FROM public.events e
                  WHERE ((e.session_id = r.session_id) AND (e.kind = 'eval.score'::text))
                  ORDER BY (e.payload ->> 'name'::text), COALESCE(((e.payload ->> 'scorer_version'::text))::integer, 1) DESC, e.seq DESC) latest) v ON (true))
  WHERE (r.newest = 1);

ALTER VIEW public.evaluation_sessions OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_endings AS
 SELECT evaluation_run,
    ending,
    count(*) AS sessions
   FROM public.evaluation_sessions
  GROUP BY evaluation_run, ending;

ALTER VIEW public.evaluation_endings OWNER TO chronicle_owner;

CREATE VIEW public.llm_calls AS
 SELECT session_id,
    seq,
    event_id,
    created_at,
    cause,
    gen_ai_operation_name,
    gen_ai_request_model,
    gen_ai_provider_name,
    gen_ai_request_temperature,
    gen_ai_request_max_tokens,
    tool_calling,
    latency_ms,
    attempts,
    gen_ai_usage_input_tokens,
    gen_ai_usage_output_tokens,
    gen_ai_usage_cache_read_input_tokens,
    cost_usd,
    gen_ai_response_finish_reasons,
    response_tool_calls,
    error_type,
    error_message,
    replayed,
    replayed_from,
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.response.id",
    "gen_ai.response.model",
    "error.type",
    usage_unknown,
    has_reasoning
   FROM public.usage_calls u;

ALTER VIEW public.llm_calls OWNER TO chronicle_owner;

COMMENT ON VIEW public.llm_calls IS 'One row per model call; counts are bigint, NULL where the model sent none that can be read';

CREATE VIEW public.evaluation_latency AS
 SELECT s.evaluation_run,
    count(l.seq) AS model_calls,
    round((percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY l.latency_ms))::numeric, 1) AS p50_ms,
    round((percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY l.latency_ms))::numeric, 1) AS p95_ms
   FROM (public.evaluation_sessions s
     JOIN public.llm_calls l ON ((l.session_id = s.session_id)))
  WHERE ((NOT l.replayed) AND (l.error_message IS NULL))
  GROUP BY s.evaluation_run;

ALTER VIEW public.evaluation_latency OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_replays AS
 SELECT s.evaluation_run,
    s.task_id,
    s.epoch,
    s.session_id,
    s.replay_of,
    ((r.payload ->> 'matched'::text))::boolean AS matched,
    (((r.payload -> 'divergence'::text) ->> 'step'::text))::integer AS divergence_step,
    ((r.payload -> 'divergence'::text) ->> 'kind'::text) AS divergence_kind,
    ((r.payload -> 'divergence'::text) ->> 'summary'::text) AS divergence,
    ((r.payload ->> 'steps_matched'::text))::integer AS steps_matched,
    ((r.payload ->> 'steps_recorded'::text))::integer AS steps_recorded,
    ((r.payload ->> 'model_calls'::text))::integer AS model_calls
   FROM (public.evaluation_sessions s
     JOIN public.events r ON (((r.session_id = s.session_id) AND (r.kind = 'replay.result'::text))))
  WHERE (s.replay_of IS NOT NULL);

ALTER VIEW public.evaluation_replays OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_tasks AS
 SELECT evaluation_run,
    task_id,
    count(*) AS epochs,
    count(*) FILTER (WHERE passed) AS passed,
    bool_or(passed) AS passed_any,
    bool_and(passed) AS passed_all,
    sum(cost_usd) AS cost_usd,
    sum(steps) AS steps,
    array_agg(session_id ORDER BY epoch) AS session_ids
   FROM public.evaluation_sessions
  GROUP BY evaluation_run, task_id;

ALTER VIEW public.evaluation_tasks OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_summary AS
 WITH trials AS (
         SELECT evaluation_sessions.evaluation_run,
            count(*) AS trials,
            count(*) FILTER (WHERE evaluation_sessions.passed) AS passed,
            max(evaluation_sessions.resume) AS resumes,
            sum(evaluation_sessions.superseded) AS rerun_sessions,
            min(evaluation_sessions.created_at) AS started_at
           FROM public.evaluation_sessions
          GROUP BY evaluation_sessions.evaluation_run
        ), tasks AS (
         SELECT evaluation_tasks.evaluation_run,
            count(*) AS tasks,
            max(evaluation_tasks.epochs) AS epochs,
            count(*) FILTER (WHERE evaluation_tasks.passed_any) AS passed_any,
            count(*) FILTER (WHERE evaluation_tasks.passed_all) AS passed_all
           FROM public.evaluation_tasks
          GROUP BY evaluation_tasks.evaluation_run
        )
 SELECT t.evaluation_run,
    t.started_at,
    t.trials,
    t.passed,
    round(((t.passed)::numeric / (t.trials)::numeric), 4) AS pass_rate,
    k.tasks,
    k.epochs,
    round(((k.passed_any)::numeric / (k.tasks)::numeric), 4) AS pass_at_k,
    round(((k.passed_all)::numeric / (k.tasks)::numeric), 4) AS pass_hat_k,
    t.resumes,
    t.rerun_sessions
   FROM (trials t
     JOIN tasks k USING (evaluation_run));

ALTER VIEW public.evaluation_summary OWNER TO chronicle_owner;

CREATE VIEW public.tool_calls AS
 SELECT a.session_id,
    a.seq,
    a.event_id,
    a.created_at,
    a.cause,
    a.kind AS tool,
    (a.payload ->> 'tool_call_id'::text) AS gen_ai_tool_call_id,
        CASE a.kind
            WHEN 'run'::text THEN (a.payload ->> 'command'::text)
            WHEN 'mcp.call'::text THEN (((a.payload ->> 'server'::text) || '.'::text) || (a.payload ->> 'tool'::text))
            ELSE (a.payload ->> 'path'::text)
        END AS target,
        CASE
            WHEN (a.kind = 'run'::text) THEN (a.payload ->> 'command'::text)
            ELSE NULL::text
        END AS command,
        CASE
            WHEN (a.kind ~~ 'file.%'::text) THEN (a.payload ->> 'path'::text)
            ELSE NULL::text
        END AS path,
    (a.payload ->> 'server'::text) AS mcp_server,
    (a.payload ->> 'tool'::text) AS mcp_tool,
    o.seq AS observation_seq,
    o.kind AS observation_kind,
    o.created_at AS observed_at,
    ((EXTRACT(epoch FROM (o.created_at - a.created_at)) * (1000)::numeric))::double precision AS duration_ms,
    ((o.payload ->> 'exit_code'::text))::integer AS exit_code,
        CASE
            WHEN (o.seq IS NOT NULL) THEN COALESCE(((o.payload ->> 'timed_out'::text))::boolean, false)
            ELSE NULL::boolean
        END AS timed_out,
        CASE
            WHEN (o.seq IS NOT NULL) THEN ((o.kind = 'error'::text) OR COALESCE(((o.payload ->> 'timed_out'::text))::boolean, false) OR (COALESCE(((o.payload ->> 'exit_code'::text))::integer, 0) <> 0) OR COALESCE(((o.payload ->> 'is_error'::text))::boolean, false))
            ELSE NULL::boolean
        END AS failed,
        CASE
            WHEN (o.kind = 'error'::text) THEN NULLIF((o.payload ->> 'error_type'::text), ''::text)
            ELSE NULL::text
        END AS error_type,
        CASE
            WHEN (o.kind = 'error'::text) THEN (o.payload ->> 'message'::text)
            ELSE NULL::text
        END AS error_message,
    COALESCE((o.payload ? 'replayed_from'::text), false) AS replayed
   FROM (public.events a
     LEFT JOIN public.events o ON (((o.session_id = a.session_id) AND (o.cause = a.seq) AND (o.kind = ANY (public.chronicle_observation_kinds())))))
  WHERE (a.kind = ANY (public.chronicle_tool_kinds()));

ALTER VIEW public.tool_calls OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_tool_errors AS
 SELECT s.evaluation_run,
    count(t.seq) AS tool_calls,
    count(t.seq) FILTER (WHERE t.failed) AS failed,
    round(((count(t.seq) FILTER (WHERE t.failed))::numeric / (NULLIF(count(t.seq), 0))::numeric), 4) AS error_rate
   FROM (public.evaluation_sessions s
     JOIN public.tool_calls t ON ((t.session_id = s.session_id)))
  WHERE (t.observation_seq IS NOT NULL)
  GROUP BY s.evaluation_run;

ALTER VIEW public.evaluation_tool_errors OWNER TO chronicle_owner;

CREATE VIEW public.evaluation_usage AS
 SELECT evaluation_run,
    sum(model_calls) AS model_calls,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(cost_usd) AS cost_usd,
    count(*) FILTER (WHERE ((cost_usd IS NULL) AND (unpriced_calls > 0))) AS unpriced_sessions,
    (sum(cost_usd) / (NULLIF(count(*) FILTER (WHERE passed), 0))::numeric) AS cost_per_passed,
    sum(steps) AS steps,
    round(avg(steps), 2) AS mean_steps,
    sum(wall_seconds) AS wall_seconds,
    round(avg(wall_seconds), 3) AS mean_wall_seconds
   FROM public.evaluation_sessions
  GROUP BY evaluation_run;

ALTER VIEW public.evaluation_usage OWNER TO chronicle_owner;

CREATE TABLE public.event_ids (
    event_id uuid NOT NULL,
    session_id uuid NOT NULL,
    seq integer NOT NULL,
    answers integer
);

ALTER TABLE public.event_ids OWNER TO chronicle_owner;

COMMENT ON TABLE public.event_ids IS 'The keys of events across its monthly partitions: one row per event, written by the append before the event.';

COMMENT ON COLUMN public.event_ids.answers IS 'an observation''s cause (the seq of the action it answers), else null: one observation per action';

ALTER TABLE public.events ALTER COLUMN global_position ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.events_global_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.gateway_usage (
    scope text NOT NULL,
    subject uuid NOT NULL,
    calls bigint DEFAULT 0 NOT NULL,
    cost_usd double precision DEFAULT 0 NOT NULL,
    refused bigint DEFAULT 0 NOT NULL,
    tokens double precision,
    refilled_at double precision DEFAULT 0 NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT gateway_usage_calls_check CHECK ((calls >= 0)),
    CONSTRAINT gateway_usage_scope_check CHECK ((scope = ANY (ARRAY['session'::text, 'user'::text])))
);

ALTER TABLE public.gateway_usage OWNER TO chronicle_owner;

COMMENT ON TABLE public.gateway_usage IS 'What a user or a session used of its gateway limits: calls, cost, its rate bucket';

COMMENT ON COLUMN public.gateway_usage.tokens IS 'calls the rate bucket holds at refilled_at (epoch seconds); NULL: full';

CREATE TABLE public.gateway_user_limits (
    user_id uuid NOT NULL,
    max_cost_usd double precision,
    max_calls bigint,
    models text[],
    rate_per_minute double precision,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT gateway_user_limits_max_calls_check CHECK ((max_calls >= 0)),
    CONSTRAINT gateway_user_limits_max_cost_usd_check CHECK (((max_cost_usd >= (0)::double precision) AND (max_cost_usd < 'Infinity'::double precision))),
    CONSTRAINT gateway_user_limits_rate_per_minute_check CHECK (((rate_per_minute > (0)::double precision) AND (rate_per_minute < 'Infinity'::double precision)))
);

ALTER TABLE public.gateway_user_limits OWNER TO chronicle_owner;

COMMENT ON TABLE public.gateway_user_limits IS 'Limits an admin set on a user''s gateway calls (NULL: the deployment''s default)';

CREATE TABLE public.llm_messages (
    hash bytea NOT NULL,
    message jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT llm_messages_hash_check CHECK ((length(hash) = 32))
);

ALTER TABLE public.llm_messages OWNER TO chronicle_owner;

COMMENT ON TABLE public.llm_messages IS 'Content-addressed prompt messages: an llm.call event lists the hashes of its prompt.';

CREATE TABLE public.login_codes (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    token_id uuid,
    hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    login_id uuid,
    CONSTRAINT login_codes_hash_check CHECK ((octet_length(hash) = 32))
);

ALTER TABLE public.login_codes OWNER TO chronicle_owner;

COMMENT ON TABLE public.login_codes IS 'One-time codes of sign-in links (sha256 only): minutes to live, used once.';

CREATE TABLE public.masked_secrets (
    digest bytea NOT NULL,
    tokens integer NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    added_by text NOT NULL,
    reason text NOT NULL,
    CONSTRAINT masked_secrets_digest_check CHECK ((octet_length(digest) = 32)),
    CONSTRAINT masked_secrets_tokens_check CHECK ((tokens >= 1))
);

ALTER TABLE public.masked_secrets OWNER TO chronicle_owner;

COMMENT ON TABLE public.masked_secrets IS 'Secrets found after the fact, as HMAC-SHA256 under masker_key of their tokens: the masker replaces them from now on; their text is kept nowhere';

CREATE TABLE public.masker_key (
    only_one boolean DEFAULT true NOT NULL,
    key bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT masker_key_key_check CHECK ((octet_length(key) = 32)),
    CONSTRAINT masker_key_only_one_check CHECK (only_one)
);

ALTER TABLE public.masker_key OWNER TO chronicle_owner;

COMMENT ON TABLE public.masker_key IS 'The one random key the masker''s hashes of found secrets are made with (masked_secrets)';

CREATE TABLE public.otel_spans (
    user_id uuid NOT NULL,
    trace_id text NOT NULL,
    span_id text NOT NULL,
    is_root boolean NOT NULL,
    start_ns bigint NOT NULL,
    end_ns bigint NOT NULL,
    conversation text,
    span bytea NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    session_id uuid,
    settled_seq integer,
    CONSTRAINT otel_spans_span_id_check CHECK ((span_id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT otel_spans_trace_id_check CHECK ((trace_id ~ '^[0-9a-f]{32}$'::text))
);

ALTER TABLE public.otel_spans OWNER TO chronicle_owner;

COMMENT ON TABLE public.otel_spans IS 'Spans received over OTLP, each once per user, until their trace is settled into the log';

COMMENT ON COLUMN public.otel_spans.settled_seq IS 'seq of the first event the span became in session_id; NULL while its trace waits';

CREATE VIEW public.platform_audit AS
 SELECT seq,
    event_id,
    created_at,
    kind,
    (payload ->> 'actor'::text) AS actor,
    (payload ->> 'via'::text) AS via,
    (payload ->> 'address'::text) AS address,
    COALESCE((payload ->> 'owner'::text), (payload ->> 'name'::text)) AS subject,
    (payload ->> 'change'::text) AS change,
    (payload ->> 'token_id'::text) AS token_id,
    (payload ->> 'login_id'::text) AS login_id,
    (payload ->> 'session_id'::text) AS session_id,
    (payload ->> 'source_session'::text) AS source_session,
    payload AS details
   FROM public.events e
  WHERE ((session_id = '00000000-0000-4000-8000-00000000a0d1'::uuid) AND (kind ~~ 'audit.%'::text));

ALTER VIEW public.platform_audit OWNER TO chronicle_owner;

COMMENT ON VIEW public.platform_audit IS 'The platform''s audit trail: tokens, logins, user changes, admins'' reads of others'' sessions';

CREATE TABLE public.projections (
    name text NOT NULL,
    version integer NOT NULL,
    tx xid8 DEFAULT '0'::xid8 NOT NULL,
    global_position bigint DEFAULT 0 NOT NULL,
    last_event_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    rebuilt_at timestamp with time zone,
    runner text,
    CONSTRAINT projections_version_check CHECK ((version >= 1))
);

ALTER TABLE public.projections OWNER TO chronicle_owner;

COMMENT ON TABLE public.projections IS 'One row per projection: the version that built its tables and the position (tx, global_position) of the last event applied, written in the transaction that applied it.';

COMMENT ON COLUMN public.projections.last_event_at IS 'created_at of the last event applied';

COMMENT ON COLUMN public.projections.runner IS 'host and pid of the process that last took the projection''s lock (informative)';

CREATE TABLE public.sessions (
    id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seq integer NOT NULL,
    last_hash bytea NOT NULL,
    first_event_at timestamp with time zone NOT NULL,
    last_event_at timestamp with time zone NOT NULL,
    archived_at timestamp with time zone,
    archived_by text,
    archived_to text,
    archive_manifest bytea,
    erased_at timestamp with time zone,
    erased_by text,
    erased_policy text,
    tombstone_key text,
    tombstone_signature text,
    CONSTRAINT sessions_archive_record CHECK ((((archived_at IS NULL) AND (archived_by IS NULL) AND (archived_to IS NULL) AND (archive_manifest IS NULL)) OR ((archived_at IS NOT NULL) AND (archived_by IS NOT NULL) AND (archived_to IS NOT NULL) AND (octet_length(archive_manifest) = 32)))),
    CONSTRAINT sessions_last_seq_check CHECK ((last_seq >= 0)),
    CONSTRAINT sessions_tombstone CHECK ((((erased_at IS NULL) AND (erased_by IS NULL) AND (erased_policy IS NULL) AND (tombstone_key IS NULL) AND (tombstone_signature IS NULL)) OR ((erased_at IS NOT NULL) AND (erased_by IS NOT NULL) AND (erased_policy IS NOT NULL) AND (tombstone_key ~ '^[0-9a-f]{32}$'::text) AND (tombstone_signature ~ '^[0-9a-f]{128}$'::text))))
);

ALTER TABLE public.sessions OWNER TO chronicle_owner;

COMMENT ON COLUMN public.sessions.first_event_at IS 'the least created_at of its events: a read bounds created_at by it, so PostgreSQL reads only the months the session spans';

COMMENT ON COLUMN public.sessions.last_event_at IS 'the greatest created_at of its events';

COMMENT ON COLUMN public.sessions.erased_at IS 'set: the session was erased (its events deleted); the row is its signed tombstone';

CREATE TABLE public.usage_rollup_sessions (
    session_id uuid NOT NULL,
    counted_seq bigint NOT NULL,
    llm_calls bigint NOT NULL,
    failed_llm_calls bigint NOT NULL,
    input_tokens numeric,
    output_tokens numeric,
    cache_read_input_tokens numeric,
    cost_usd double precision,
    unpriced_calls bigint NOT NULL,
    models text[],
    replayed_llm_calls bigint NOT NULL,
    replayed_cost_usd double precision,
    cache_creation_input_tokens numeric,
    reasoning_output_tokens numeric,
    unknown_usage_calls bigint NOT NULL
);

ALTER TABLE public.usage_rollup_sessions OWNER TO chronicle_owner;

CREATE VIEW public.session_costs AS
 WITH tail AS MATERIALIZED (
         SELECT u.session_id,
            u.seq,
            u.event_id,
            u.created_at,
            u.cause,
            u.gen_ai_operation_name,
            u.gen_ai_request_model,
            u.gen_ai_provider_name,
            u.gen_ai_request_temperature,
            u.gen_ai_request_max_tokens,
            u.tool_calling,
            u.latency_ms,
            u.attempts,
            u.gen_ai_usage_input_tokens,
            u.gen_ai_usage_output_tokens,
            u.gen_ai_usage_cache_read_input_tokens,
            u.cost_usd,
            u.gen_ai_response_finish_reasons,
            u.response_tool_calls,
            u.error_type,
            u.error_message,
            u.replayed,
            u.replayed_from,
            u."gen_ai.usage.input_tokens",
            u."gen_ai.usage.output_tokens",
            u."gen_ai.usage.cache_read.input_tokens",
            u."gen_ai.usage.cache_creation.input_tokens",
            u."gen_ai.usage.reasoning.output_tokens",
            u."gen_ai.response.id",
            u."gen_ai.response.model",
            u."error.type",
            u.usage_unknown,
            u.has_reasoning,
            u.tx,
            u.global_position
           FROM public.chronicle_usage_tail() u(session_id, seq, event_id, created_at, cause, gen_ai_operation_name, gen_ai_request_model, gen_ai_provider_name, gen_ai_request_temperature, gen_ai_request_max_tokens, tool_calling, latency_ms, attempts, gen_ai_usage_input_tokens, gen_ai_usage_output_tokens, gen_ai_usage_cache_read_input_tokens, cost_usd, gen_ai_response_finish_reasons, response_tool_calls, error_type, error_message, replayed, replayed_from, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens", "gen_ai.response.id", "gen_ai.response.model", "error.type", usage_unknown, has_reasoning, tx, global_position)
        ), parts AS (
         SELECT r.session_id,
            r.llm_calls,
            r.failed_llm_calls,
            r.input_tokens,
            r.output_tokens,
            r.cache_read_input_tokens,
            r.cost_usd,
            r.unpriced_calls,
            r.models,
            r.replayed_llm_calls,
            r.replayed_cost_usd,
            r.cache_creation_input_tokens,
            r.reasoning_output_tokens,
            r.unknown_usage_calls
           FROM public.usage_rollup_sessions r
        UNION ALL
         SELECT l.session_id,
            count(*) FILTER (WHERE (NOT l.replayed)) AS count,
            count(*) FILTER (WHERE ((NOT l.replayed) AND (l.error_message IS NOT NULL))) AS count,
            sum(l.gen_ai_usage_input_tokens) FILTER (WHERE (NOT l.replayed)) AS sum,
            sum(l.gen_ai_usage_output_tokens) FILTER (WHERE (NOT l.replayed)) AS sum,
            sum(l.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE (NOT l.replayed)) AS sum,
            sum(l.cost_usd) FILTER (WHERE (NOT l.replayed)) AS sum,
            count(*) FILTER (WHERE ((NOT l.replayed) AND (l.cost_usd IS NULL) AND (l.error_message IS NULL))) AS count,
            array_agg(DISTINCT l.gen_ai_request_model ORDER BY l.gen_ai_request_model) FILTER (WHERE (NOT l.replayed)) AS array_agg,
            count(*) FILTER (WHERE l.replayed) AS count,
            sum(l.cost_usd) FILTER (WHERE l.replayed) AS sum,
            sum(l."gen_ai.usage.cache_creation.input_tokens") FILTER (WHERE (NOT l.replayed)) AS sum,
            sum(l."gen_ai.usage.reasoning.output_tokens") FILTER (WHERE (NOT l.replayed)) AS sum,
            count(*) FILTER (WHERE ((NOT l.replayed) AND l.usage_unknown)) AS count
           FROM tail l
          GROUP BY l.session_id
        ), c AS (
         SELECT p.session_id,
            (sum(p.llm_calls))::bigint AS llm_calls,
            (sum(p.failed_llm_calls))::bigint AS failed_llm_calls,
            sum(p.input_tokens) AS gen_ai_usage_input_tokens,
            sum(p.output_tokens) AS gen_ai_usage_output_tokens,
            sum(p.cache_read_input_tokens) AS gen_ai_usage_cache_read_input_tokens,
            sum(p.cost_usd) AS cost_usd,
            (sum(p.unpriced_calls))::bigint AS unpriced_calls,
                CASE
                    WHEN (count(*) = 1) THEN min(p.models)
                    ELSE NULL::text[]
                END AS models,
            (sum(p.replayed_llm_calls))::bigint AS replayed_llm_calls,
            sum(p.replayed_cost_usd) AS replayed_cost_usd,
            sum(p.cache_creation_input_tokens) AS cache_creation_input_tokens,
            sum(p.reasoning_output_tokens) AS reasoning_output_tokens,
            (sum(p.unknown_usage_calls))::bigint AS unknown_usage_calls
           FROM parts p
          GROUP BY p.session_id
        ), merged_models AS (
         SELECT p.session_id,
            array_agg(DISTINCT m.m ORDER BY m.m) AS models
           FROM (parts p
             JOIN ( SELECT DISTINCT l.session_id
                   FROM tail l) counted_on USING (session_id)),
            LATERAL unnest(p.models) m(m)
          GROUP BY p.session_id
        )
 SELECT s.id AS session_id,
    (created.payload ->> 'title'::text) AS title,
    s.created_at,
    last.created_at AS updated_at,
    s.last_seq AS events,
    COALESCE(c.llm_calls, (0)::bigint) AS llm_calls,
    COALESCE(c.failed_llm_calls, (0)::bigint) AS failed_llm_calls,
    COALESCE(c.gen_ai_usage_input_tokens, (0)::numeric) AS gen_ai_usage_input_tokens,
    COALESCE(c.gen_ai_usage_output_tokens, (0)::numeric) AS gen_ai_usage_output_tokens,
    COALESCE(c.gen_ai_usage_cache_read_input_tokens, (0)::numeric) AS gen_ai_usage_cache_read_input_tokens,
    c.cost_usd,
    COALESCE(c.unpriced_calls, (0)::bigint) AS unpriced_calls,
    COALESCE(merged.models, c.models, '{}'::text[]) AS models,
        CASE
            WHEN ((jsonb_typeof((created.payload -> 'replay_of'::text)) = 'string'::text) AND ((created.payload ->> 'replay_of'::text) ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'::text)) THEN ((created.payload ->> 'replay_of'::text))::uuid
            ELSE NULL::uuid
        END AS replay_of,
    COALESCE(c.replayed_llm_calls, (0)::bigint) AS replayed_llm_calls,
    c.replayed_cost_usd,
    COALESCE(c.cache_creation_input_tokens, (0)::numeric) AS "gen_ai.usage.cache_creation.input_tokens",
    COALESCE(c.reasoning_output_tokens, (0)::numeric) AS "gen_ai.usage.reasoning.output_tokens",
    COALESCE(c.unknown_usage_calls, (0)::bigint) AS unknown_usage_calls
   FROM ((((public.sessions s
     LEFT JOIN LATERAL ( SELECT e.payload
           FROM public.events e
          WHERE ((e.session_id = s.id) AND (e.kind = 'session.created'::text) AND (e.created_at >= COALESCE(s.first_event_at, '-infinity'::timestamp with time zone)))
         LIMIT 1) created ON (true))
     LEFT JOIN LATERAL ( SELECT e.created_at
           FROM public.events e
          WHERE ((e.session_id = s.id) AND (e.seq = s.last_seq) AND (e.created_at >= COALESCE(s.first_event_at, '-infinity'::timestamp with time zone)))
         LIMIT 1) last ON (true))
     LEFT JOIN c ON ((c.session_id = s.id)))
     LEFT JOIN merged_models merged ON ((merged.session_id = s.id)))
  WHERE (s.id <> '00000000-0000-4000-8000-00000000a0d1'::uuid);

ALTER VIEW public.session_costs OWNER TO chronicle_owner;

CREATE TABLE public.session_leases (
    session_id uuid NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    reason text NOT NULL,
    owner text,
    lease_id uuid,
    claimed_at timestamp with time zone,
    heartbeat_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    CONSTRAINT session_leases_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT session_leases_check CHECK (((owner IS NULL) = (lease_id IS NULL)))
);

ALTER TABLE public.session_leases OWNER TO chronicle_owner;

COMMENT ON TABLE public.session_leases IS 'One row per session that must run; a worker holds it by a lease (app/store/session_leases.py).';

COMMENT ON COLUMN public.session_leases.owner IS 'the worker id holding the lease (NULL: waiting)';

COMMENT ON COLUMN public.session_leases.lease_id IS 'fencing token, new at every claim: heartbeats and releases must name it';

COMMENT ON COLUMN public.session_leases.lease_expires_at IS 'claimable again from then (a held lease: unless renewed; a waiting row: retry after)';

COMMENT ON COLUMN public.session_leases.attempts IS 'claims since the last clean release';

CREATE TABLE public.session_owners (
    session_id uuid NOT NULL,
    user_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE public.session_owners OWNER TO chronicle_owner;

COMMENT ON TABLE public.session_owners IS 'The user who created each session through the API.';

CREATE VIEW public.session_tombstones AS
 SELECT id AS session_id,
    last_seq,
    last_hash,
    created_at,
    erased_at,
    erased_by,
    erased_policy AS policy,
    tombstone_key AS key_id,
    tombstone_signature AS signature
   FROM public.sessions
  WHERE (erased_at IS NOT NULL);

ALTER VIEW public.session_tombstones OWNER TO chronicle_owner;

COMMENT ON VIEW public.session_tombstones IS 'Erased sessions: how many events they had, their last hash, who erased them, when, by which policy, signed (chronicle verify checks the signature)';

CREATE TABLE public.usage_rollup_position (
    name text NOT NULL,
    tx xid8 DEFAULT '0'::xid8 NOT NULL,
    global_position bigint DEFAULT 0 NOT NULL,
    refreshed_at timestamp with time zone,
    CONSTRAINT usage_rollup_position_name_check CHECK ((name = 'usage'::text))
);

ALTER TABLE public.usage_rollup_position OWNER TO chronicle_owner;

CREATE TABLE public.users (
    id uuid NOT NULL,
    name text NOT NULL,
    is_admin boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    disabled_at timestamp with time zone,
    removed_at timestamp with time zone,
    CONSTRAINT users_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'::text)),
    CONSTRAINT users_removed_are_disabled CHECK (((removed_at IS NULL) OR (disabled_at IS NOT NULL)))
);

ALTER TABLE public.users OWNER TO chronicle_owner;

COMMENT ON TABLE public.users IS 'People and programs the access service serves (chronicle users add).';

COMMENT ON COLUMN public.users.disabled_at IS 'set: none of the user''s tokens or browser logins works (chronicle users disable)';

COMMENT ON COLUMN public.users.removed_at IS 'set: removed for good; tokens revoked, logins ended (chronicle users remove)';

CREATE TABLE public.workers (
    worker_id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    role text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    running integer DEFAULT 0 NOT NULL,
    capacity integer DEFAULT 0 NOT NULL
);

ALTER TABLE public.workers OWNER TO chronicle_owner;

COMMENT ON TABLE public.workers IS 'Worker processes present: refreshed by their heartbeat, removed when they stop.';

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_hash_key UNIQUE (hash);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.blobs
    ADD CONSTRAINT blobs_pkey PRIMARY KEY (sha256);

ALTER TABLE ONLY public.browser_logins
    ADD CONSTRAINT browser_logins_hash_key UNIQUE (hash);

ALTER TABLE ONLY public.browser_logins
    ADD CONSTRAINT browser_logins_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.chronicle_schema_version
    ADD CONSTRAINT chronicle_schema_version_pkc PRIMARY KEY (version_num);

ALTER TABLE ONLY public.event_ids
    ADD CONSTRAINT event_ids_pkey PRIMARY KEY (event_id);

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (global_position, created_at);

ALTER TABLE ONLY public.gateway_usage
    ADD CONSTRAINT gateway_usage_pkey PRIMARY KEY (scope, subject);

ALTER TABLE ONLY public.gateway_user_limits
    ADD CONSTRAINT gateway_user_limits_pkey PRIMARY KEY (user_id);

ALTER TABLE ONLY public.llm_messages
    ADD CONSTRAINT llm_messages_pkey PRIMARY KEY (hash);

ALTER TABLE ONLY public.login_codes
    ADD CONSTRAINT login_codes_hash_key UNIQUE (hash);

ALTER TABLE ONLY public.login_codes
    ADD CONSTRAINT login_codes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.masked_secrets
    ADD CONSTRAINT masked_secrets_pkey PRIMARY KEY (digest);

ALTER TABLE ONLY public.masker_key
    ADD CONSTRAINT masker_key_pkey PRIMARY KEY (only_one);

ALTER TABLE ONLY public.otel_spans
    ADD CONSTRAINT otel_spans_pkey PRIMARY KEY (user_id, trace_id, span_id);

ALTER TABLE ONLY public.projections
    ADD CONSTRAINT projections_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.session_leases
    ADD CONSTRAINT session_leases_pkey PRIMARY KEY (session_id);

ALTER TABLE ONLY public.session_owners
    ADD CONSTRAINT session_owners_pkey PRIMARY KEY (session_id);

ALTER TABLE ONLY public.session_state
    ADD CONSTRAINT session_state_pkey PRIMARY KEY (session_id);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.usage_rollup_day_sessions
    ADD CONSTRAINT usage_rollup_day_sessions_key UNIQUE NULLS NOT DISTINCT (session_id, day, gen_ai_request_model, gen_ai_provider_name);

ALTER TABLE ONLY public.usage_rollup_days
    ADD CONSTRAINT usage_rollup_days_key UNIQUE NULLS NOT DISTINCT (day, gen_ai_request_model, gen_ai_provider_name);

ALTER TABLE ONLY public.usage_rollup_latencies
    ADD CONSTRAINT usage_rollup_latencies_key UNIQUE NULLS NOT DISTINCT (day, gen_ai_request_model, gen_ai_provider_name, bucket);

ALTER TABLE ONLY public.usage_rollup_position
    ADD CONSTRAINT usage_rollup_position_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.usage_rollup_sessions
    ADD CONSTRAINT usage_rollup_sessions_pkey PRIMARY KEY (session_id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_name_key UNIQUE (name);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (worker_id);

CREATE INDEX api_tokens_by_user ON public.api_tokens USING btree (user_id, created_at);

CREATE INDEX browser_logins_by_token ON public.browser_logins USING btree (token_id) WHERE (token_id IS NOT NULL);

CREATE INDEX browser_logins_by_user ON public.browser_logins USING btree (user_id, created_at);

CREATE UNIQUE INDEX event_ids_one_observation_per_action ON public.event_ids USING btree (session_id, answers) WHERE (answers IS NOT NULL);

CREATE INDEX events_annotations ON ONLY public.events USING btree (session_id, seq) WHERE (kind = 'annotation'::text);

CREATE INDEX events_global_cursor ON ONLY public.events USING btree (tx, global_position);

CREATE INDEX events_llm_calls_by_time ON ONLY public.events USING btree (created_at) WHERE (kind = 'llm.call'::text);

CREATE INDEX events_playground_runs ON ONLY public.events USING btree (((((payload -> 'config'::text) -> 'from_call'::text) ->> 'session'::text)), created_at) WHERE ((kind = 'session.created'::text) AND ((payload -> 'config'::text) ? 'from_call'::text));

CREATE INDEX events_tool_calls_by_time ON ONLY public.events USING btree (created_at) WHERE (kind = ANY (ARRAY['file.edit'::text, 'file.read'::text, 'file.write'::text, 'mcp.call'::text, 'run'::text]));

CREATE INDEX otel_spans_waiting ON public.otel_spans USING btree (received_at) WHERE (settled_seq IS NULL);

CREATE INDEX session_leases_due ON public.session_leases USING btree (lease_expires_at NULLS FIRST, requested_at);

CREATE INDEX session_owners_by_user ON public.session_owners USING btree (user_id, created_at DESC);

CREATE INDEX session_state_by_model ON public.session_state USING btree (model, created_at DESC, session_id DESC);

CREATE INDEX session_state_by_status ON public.session_state USING btree (status, created_at DESC, session_id DESC);

CREATE INDEX session_state_newest ON public.session_state USING btree (created_at DESC, session_id DESC);

CREATE INDEX session_state_title_words ON public.session_state USING gin (to_tsvector('simple'::regconfig, COALESCE(title, ''::text)));

ALTER INDEX public.events_annotations ATTACH PARTITION public.events_2026_12_annotations;

ALTER INDEX public.events_global_cursor ATTACH PARTITION public.events_2026_12_global_cursor;

ALTER INDEX public.events_llm_calls_by_time ATTACH PARTITION public.events_2026_12_llm_calls_by_time;

ALTER INDEX public.events_pkey ATTACH PARTITION public.events_2026_12_pkey;

ALTER INDEX public.events_playground_runs ATTACH PARTITION public.events_2026_12_playground_runs;

ALTER INDEX public.events_tool_calls_by_time ATTACH PARTITION public.events_2026_12_tool_calls_by_time;

ALTER INDEX public.events_annotations ATTACH PARTITION public.events_2027_01_annotations;

ALTER INDEX public.events_global_cursor ATTACH PARTITION public.events_2027_01_global_cursor;

ALTER INDEX public.events_llm_calls_by_time ATTACH PARTITION public.events_2027_01_llm_calls_by_time;

ALTER INDEX public.events_pkey ATTACH PARTITION public.events_2027_01_pkey;

ALTER INDEX public.events_playground_runs ATTACH PARTITION public.events_2027_01_playground_runs;

ALTER INDEX public.events_tool_calls_by_time ATTACH PARTITION public.events_2027_01_tool_calls_by_time;

ALTER INDEX public.events_annotations ATTACH PARTITION public.events_2027_02_annotations;

ALTER INDEX public.events_global_cursor ATTACH PARTITION public.events_2027_02_global_cursor;

ALTER INDEX public.events_llm_calls_by_time ATTACH PARTITION public.events_2027_02_llm_calls_by_time;

ALTER INDEX public.events_pkey ATTACH PARTITION public.events_2027_02_pkey;

ALTER INDEX public.events_playground_runs ATTACH PARTITION public.events_2027_02_playground_runs;

ALTER INDEX public.events_tool_calls_by_time ATTACH PARTITION public.events_2027_02_tool_calls_by_time;

CREATE TRIGGER api_tokens_by_owner BEFORE INSERT OR UPDATE ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION public.chronicle_tokens_by_owner();

CREATE TRIGGER api_tokens_revoked AFTER UPDATE OF revoked_at, expires_at ON public.api_tokens FOR EACH STATEMENT EXECUTE FUNCTION public.chronicle_credentials_changed();

CREATE TRIGGER blobs_append_only BEFORE DELETE OR UPDATE ON public.blobs FOR EACH ROW EXECUTE FUNCTION public.chronicle_refuse_content_change();

CREATE TRIGGER blobs_no_truncate BEFORE TRUNCATE ON public.blobs FOR EACH STATEMENT EXECUTE FUNCTION public.chronicle_refuse_change();

CREATE TRIGGER browser_logins_ended AFTER UPDATE OF ended_at ON public.browser_logins FOR EACH STATEMENT EXECUTE FUNCTION public.chronicle_credentials_changed();

CREATE TRIGGER events_append_only BEFORE DELETE OR UPDATE ON public.events FOR EACH ROW EXECUTE FUNCTION public.chronicle_refuse_event_change();

CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON public.events FOR EACH STATEMENT EXECUTE FUNCTION public.chronicle_refuse_change();

CREATE CONSTRAINT TRIGGER events_one_session_created AFTER INSERT ON public.events NOT DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW WHEN ((new.kind = 'session.created'::text)) EXECUTE FUNCTION public.chronicle_one_session_created();

CREATE TRIGGER events_platform_log_kinds BEFORE INSERT ON public.events FOR EACH ROW WHEN ((new.session_id = '00000000-0000-4000-8000-00000000a0d1'::uuid)) EXECUTE FUNCTION public.chronicle_platform_log_kinds();

CREATE TRIGGER llm_messages_append_only BEFORE DELETE OR UPDATE ON public.llm_messages FOR EACH ROW EXECUTE FUNCTION public.chronicle_refuse_content_change();

CREATE TRIGGER sessions_archived_head BEFORE DELETE OR UPDATE ON public.sessions FOR EACH ROW WHEN ((old.archived_at IS NOT NULL)) EXECUTE FUNCTION public.chronicle_archived_head();

CREATE TRIGGER sessions_erased_head BEFORE DELETE OR UPDATE ON public.sessions FOR EACH ROW WHEN ((old.erased_at IS NOT NULL)) EXECUTE FUNCTION public.chronicle_erased_head();

CREATE TRIGGER users_admins_by_owner BEFORE INSERT OR UPDATE OF is_admin ON public.users FOR EACH ROW EXECUTE FUNCTION public.chronicle_admins_by_owner();

CREATE TRIGGER users_changed AFTER UPDATE OF is_admin, disabled_at, removed_at ON public.users FOR EACH STATEMENT EXECUTE FUNCTION public.chronicle_credentials_changed();

CREATE TRIGGER users_promotion_ends_logins AFTER UPDATE OF is_admin ON public.users FOR EACH ROW WHEN ((new.is_admin AND (NOT old.is_admin))) EXECUTE FUNCTION public.chronicle_promotion_ends_logins();

CREATE TRIGGER users_promotion_revokes_tokens AFTER UPDATE OF is_admin ON public.users FOR EACH ROW WHEN ((new.is_admin AND (NOT old.is_admin))) EXECUTE FUNCTION public.chronicle_promotion_revokes_tokens();

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.browser_logins
    ADD CONSTRAINT browser_logins_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.api_tokens(id);

ALTER TABLE ONLY public.browser_logins
    ADD CONSTRAINT browser_logins_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.gateway_user_limits
    ADD CONSTRAINT gateway_user_limits_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.login_codes
    ADD CONSTRAINT login_codes_login_id_fkey FOREIGN KEY (login_id) REFERENCES public.browser_logins(id);

ALTER TABLE ONLY public.login_codes
    ADD CONSTRAINT login_codes_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.api_tokens(id);

ALTER TABLE ONLY public.login_codes
    ADD CONSTRAINT login_codes_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.otel_spans
    ADD CONSTRAINT otel_spans_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.session_leases
    ADD CONSTRAINT session_leases_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.sessions(id);

ALTER TABLE ONLY public.session_owners
    ADD CONSTRAINT session_owners_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

GRANT ALL ON SCHEMA public TO chronicle_owner;
GRANT USAGE ON SCHEMA public TO chronicle_analyst;

REVOKE ALL ON FUNCTION public.chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_admins_by_owner() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_append(p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_notify boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_append(p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_notify boolean) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_append_many(p_sessions uuid[], p_expected integer[], p_sizes integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_append_many(p_sessions uuid[], p_expected integer[], p_sizes integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[]) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_append_one(p_session uuid, p_expected integer, p_event_id uuid, p_kind text, p_source text, p_cause integer, p_payload text, p_version smallint, p_notify boolean, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_append_one(p_session uuid, p_expected integer, p_event_id uuid, p_kind text, p_source text, p_cause integer, p_payload text, p_version smallint, p_notify boolean, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_archived_head() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_begin_login(p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_begin_login(p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_canonical_json(p_value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_canonical_number(p_number text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_claim_run(p_worker text, p_lease_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_claim_run(p_worker text, p_lease_seconds double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_create_login_code(p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_create_login_code(p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_create_token(p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_create_token(p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamp with time zone) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_credentials_changed() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_drop_event_partition(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_end_logins(p_user uuid, p_login uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_end_logins(p_user uuid, p_login uuid) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_ensure_event_partitions(p_from date, p_months integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_ensure_event_partitions(p_from date, p_months integer) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_erase_session(p_session uuid, p_last_seq integer, p_last_hash bytea, p_erased_at timestamp with time zone, p_by text, p_policy text, p_key text, p_signature text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_erase_session(p_session uuid, p_last_seq integer, p_last_hash bytea, p_erased_at timestamp with time zone, p_by text, p_policy text, p_key text, p_signature text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_erase_user(p_user uuid, p_new_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_erase_user(p_user uuid, p_new_name text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_erased_head() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_event_kinds() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_event_partition_keys(p_partition regclass) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_event_partitions() FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_event_partitions() TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_exchange_login_code(p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_exchange_login_code(p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision, p_address text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_forget(p_kind text, p_key bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_forget(p_kind text, p_key bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_heartbeat_run(p_session uuid, p_lease uuid, p_lease_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_heartbeat_run(p_session uuid, p_lease uuid, p_lease_seconds double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_import(p_session uuid, p_seqs integer[], p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[], p_payloads text[], p_versions smallint[], p_created_at timestamp with time zone[], p_hashes bytea[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_one_session_created() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_peek_login_code(p_code_hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_peek_login_code(p_code_hash bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_platform_log_kinds() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_promotion_ends_logins() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_promotion_revokes_tokens() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_put_blobs(p_hashes bytea[], p_texts text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_put_blobs(p_hashes bytea[], p_texts text[]) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_put_messages(p_hashes bytea[], p_texts text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_put_messages(p_hashes bytea[], p_texts text[]) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_redact(p_session uuid, p_seq integer, p_payload text, p_record_id uuid, p_record text, p_version smallint, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_redact(p_session uuid, p_seq integer, p_payload text, p_record_id uuid, p_record text, p_version smallint, OUT seq integer, OUT global_position bigint, OUT tx xid8, OUT created_at timestamp with time zone, OUT hash bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_refresh_usage_rollups(p_calls integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_refresh_usage_rollups(p_calls integer) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_refuse_change() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_release_run(p_session uuid, p_lease uuid, p_outcome text, p_retry_after double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_release_run(p_session uuid, p_lease uuid, p_outcome text, p_retry_after double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_request_run(p_session uuid, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_request_run(p_session uuid, p_reason text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_require_content_hashes(p_what text, p_hashes bytea[], p_texts text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_restore_archived(p_session uuid, p_last_seq integer, p_head bytea) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_revoke_token(p_token uuid, p_user uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_revoke_token(p_token uuid, p_user uuid) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_rewrite_archive_manifest(p_archived_to text, p_old bytea, p_new bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_rewrite_archive_manifest(p_archived_to text, p_old bytea, p_new bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_set_user_state(p_user uuid, p_state text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_set_user_state(p_user uuid, p_state text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_token_by_hash(p_hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_token_by_hash(p_hash bytea) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_tokens_by_owner() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_touch_login(p_login uuid, p_resolution double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_touch_login(p_login uuid, p_resolution double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_touch_token(p_token uuid, p_resolution double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_touch_token(p_token uuid, p_resolution double precision) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_tree_digest(p_value jsonb, p_salt bytea) FROM PUBLIC;

GRANT SELECT ON TABLE public.events TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_usage_tail() FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_usage_tail() TO chronicle_app;
GRANT ALL ON FUNCTION public.chronicle_usage_tail() TO chronicle_analyst;

REVOKE ALL ON FUNCTION public.chronicle_verifiable_payload(p_kind text, p_payload text, p_index integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.chronicle_worker_gone(p_worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_worker_gone(p_worker text) TO chronicle_app;

REVOKE ALL ON FUNCTION public.chronicle_worker_seen(p_worker text, p_host text, p_pid integer, p_role text, p_running integer, p_capacity integer, p_forget_after double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.chronicle_worker_seen(p_worker text, p_host text, p_pid integer, p_role text, p_running integer, p_capacity integer, p_forget_after double precision) TO chronicle_app;

GRANT SELECT ON TABLE public.agent_states TO chronicle_analyst;

GRANT SELECT ON TABLE public.annotations TO chronicle_analyst;

GRANT SELECT(id) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(user_id) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(kind) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(label) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(created_at) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(expires_at) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(revoked_at) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT(last_used_at) ON TABLE public.api_tokens TO chronicle_app;

GRANT SELECT ON TABLE public.blobs TO chronicle_app;

GRANT SELECT ON TABLE public.browser_logins TO chronicle_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.checkpoints TO chronicle_app;

GRANT SELECT ON TABLE public.chronicle_schema_version TO chronicle_app;

GRANT SELECT ON TABLE public.daily_usage TO chronicle_analyst;

GRANT SELECT ON TABLE public.errors TO chronicle_analyst;
GRANT SELECT ON TABLE public.errors TO chronicle_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.session_state TO chronicle_app;
GRANT SELECT ON TABLE public.session_state TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_sessions TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_sessions TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_endings TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_endings TO chronicle_analyst;

GRANT SELECT ON TABLE public.llm_calls TO chronicle_analyst;
GRANT SELECT ON TABLE public.llm_calls TO chronicle_app;

GRANT SELECT ON TABLE public.evaluation_latency TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_latency TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_replays TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_replays TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_tasks TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_tasks TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_summary TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_summary TO chronicle_analyst;

GRANT SELECT ON TABLE public.tool_calls TO chronicle_analyst;
GRANT SELECT ON TABLE public.tool_calls TO chronicle_app;

GRANT SELECT ON TABLE public.evaluation_tool_errors TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_tool_errors TO chronicle_analyst;

GRANT SELECT ON TABLE public.evaluation_usage TO chronicle_app;
GRANT SELECT ON TABLE public.evaluation_usage TO chronicle_analyst;

GRANT SELECT ON TABLE public.event_ids TO chronicle_app;

GRANT SELECT,INSERT ON TABLE public.gateway_usage TO chronicle_app;

GRANT UPDATE(calls) ON TABLE public.gateway_usage TO chronicle_app;

GRANT UPDATE(cost_usd) ON TABLE public.gateway_usage TO chronicle_app;

GRANT UPDATE(refused) ON TABLE public.gateway_usage TO chronicle_app;

GRANT UPDATE(tokens) ON TABLE public.gateway_usage TO chronicle_app;

GRANT UPDATE(refilled_at) ON TABLE public.gateway_usage TO chronicle_app;

GRANT SELECT ON TABLE public.gateway_user_limits TO chronicle_app;

GRANT SELECT ON TABLE public.llm_messages TO chronicle_app;

GRANT SELECT,INSERT ON TABLE public.masked_secrets TO chronicle_app;

GRANT SELECT,INSERT ON TABLE public.masker_key TO chronicle_app;

GRANT SELECT,INSERT ON TABLE public.otel_spans TO chronicle_app;

GRANT UPDATE(session_id) ON TABLE public.otel_spans TO chronicle_app;

GRANT UPDATE(settled_seq) ON TABLE public.otel_spans TO chronicle_app;

GRANT SELECT ON TABLE public.platform_audit TO chronicle_analyst;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.projections TO chronicle_app;

GRANT SELECT ON TABLE public.sessions TO chronicle_app;

GRANT SELECT ON TABLE public.session_costs TO chronicle_analyst;

GRANT SELECT ON TABLE public.session_leases TO chronicle_app;

GRANT SELECT,INSERT ON TABLE public.session_owners TO chronicle_app;

GRANT SELECT ON TABLE public.session_tombstones TO chronicle_app;
GRANT SELECT ON TABLE public.session_tombstones TO chronicle_analyst;

GRANT SELECT ON TABLE public.users TO chronicle_app;

GRANT SELECT ON TABLE public.workers TO chronicle_app;
