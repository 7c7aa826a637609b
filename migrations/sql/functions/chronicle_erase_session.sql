CREATE FUNCTION chronicle_erase_session(
    p_session   uuid,
    p_last_seq  integer,
    p_last_hash bytea,
    p_erased_at timestamptz,
    p_by        text,
    p_policy    text,
    p_key       text,
    p_signature text
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
-- Erase a whole session: record its signed tombstone in its sessions row (how many events,
-- the last hash, who, when, which policy, the signing key and signature; signed by the
-- application over exactly these values), then delete its events, their keys, its run
-- requests and the spans received for it. The row stays, so verify tells an erasure from a
-- deletion. Refused unless the head is the one signed (nothing was appended meanwhile) and the
-- usage rollups already count the session's model calls (the aggregates a policy keeps).
-- The number of events deleted (fewer than p_last_seq when months were detached already).
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
