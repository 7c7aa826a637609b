CREATE FUNCTION chronicle_release_run(
    p_session uuid, p_lease uuid, p_outcome text, p_retry_after double precision DEFAULT 0
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
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
