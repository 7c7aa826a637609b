-- At most one observation answers an action, across months: an action and its observation
-- can fall in two partitions, which a partition's own unique index cannot see. Looks only
-- at the months of the session (from its head's first event), under the session's lock
-- (re-entrant: the append functions hold it already; a direct insert takes it).
CREATE FUNCTION chronicle_one_observation_per_action() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
DECLARE
    v_other integer;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(NEW.session_id::text));
    SELECT e.seq INTO v_other FROM events e
    WHERE e.session_id = NEW.session_id AND e.cause = NEW.cause
      AND e.kind = ANY (chronicle_observation_kinds())
      AND e.created_at >= least((SELECT s.first_event_at FROM sessions s
                                 WHERE s.id = NEW.session_id), NEW.created_at)
      AND e.seq <> NEW.seq
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'an action in session % already has its observation: seq % and seq % both answer seq %',
            NEW.session_id, v_other, NEW.seq, NEW.cause
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'events_one_observation_per_action',
                  DETAIL = format('Key (session_id, cause)=(%s, %s) already exists.',
                                  NEW.session_id, NEW.cause);
    END IF;
    RETURN NULL;
END
$$;
