-- `chronicle import DIR` into the database a session was archived from, after its months
-- were dropped: the archived head (the record of the archive) is let go so the import can
-- write the events again and make the head anew, but only for the very same session (the
-- archive's last seq and head hash are the archived head's) and only when none of its events
-- is here any more. In the import's transaction: a failed import keeps the head as it was.
-- Returns whether the head was let go. The owner's only (no grant), like chronicle_import.
CREATE FUNCTION chronicle_restore_archived(p_session uuid, p_last_seq integer, p_head bytea)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
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
