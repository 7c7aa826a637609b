-- The model calls the usage rollups do not hold yet: committed after their position, and of
-- a session not already counted up to that seq. What daily_usage and session_costs add to
-- the rollups. STABLE, so it reads in the snapshot of the query that calls it (the same one
-- the view reads the rollups in); the query is planned with the position's values (EXECUTE),
-- so PostgreSQL walks the (tx, global_position) index over the few calls after it instead of
-- a plan for any position. The owner's: an analyst may read the views, not events.
CREATE FUNCTION chronicle_usage_tail()
RETURNS SETOF usage_calls
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = {search_path} AS $$
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
$$;
