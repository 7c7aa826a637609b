CREATE FUNCTION chronicle_worker_seen(
    p_worker text, p_host text, p_pid integer, p_role text, p_running integer,
    p_capacity integer, p_forget_after double precision
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
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
