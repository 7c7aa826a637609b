-- Several appends (to one or many sessions) in one transaction: group commit for a client
-- whose writers arrive together. Each group is appended by chronicle_append() inside its own
-- subtransaction, so a group that fails (a stale expected seq, a duplicate observation) is
-- reported in its rows and the others are still recorded. All sessions are locked up front in
-- one global order, so two such calls can never deadlock.
-- Revision 0003 runs it as its owner: ALTER FUNCTION ... SECURITY DEFINER SET search_path
-- (migrations/sql/schema.sql shows it so).
CREATE FUNCTION chronicle_append_many(
    p_sessions  uuid[],
    p_expected  integer[],
    p_sizes     integer[],
    p_event_ids uuid[],
    p_kinds     text[],
    p_sources   text[],
    p_causes    integer[],
    p_payloads  text[],
    p_versions  smallint[]
) RETURNS TABLE (grp integer, seq integer, global_position bigint, tx xid8,
                 created_at timestamptz, hash bytea, error_state text, error_message text,
                 error_detail text, error_constraint text)
LANGUAGE plpgsql AS $$
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
