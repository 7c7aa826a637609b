CREATE FUNCTION chronicle_request_run(p_session uuid, p_reason text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
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
