CREATE FUNCTION chronicle_heartbeat_run(p_session uuid, p_lease uuid, p_lease_seconds double precision)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    UPDATE session_leases l
    SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_seconds)
    WHERE l.session_id = p_session AND l.lease_id = p_lease;
    RETURN FOUND;
END
$$;
