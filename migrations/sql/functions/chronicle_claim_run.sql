CREATE FUNCTION chronicle_claim_run(p_worker text, p_lease_seconds double precision)
RETURNS TABLE (session_id uuid, lease_id uuid, attempts integer, reason text,
               requested_at timestamptz, taken_over_from text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
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
