-- The one removal the log allows: detach one partition of events whose month has ended and
-- drop it, with the idempotency keys of its events and the heads (and leases) of the
-- sessions it leaves without events, so that `chronicle import` can bring them back. Only
-- the owner may call it (no grant): `chronicle archive` calls it after it has written and
-- verified the archive of the month. DETACH takes ACCESS EXCLUSIVE on events for a moment.
CREATE FUNCTION chronicle_drop_event_partition(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_part record;
BEGIN
    SELECT * INTO v_part FROM chronicle_event_partitions() p WHERE p.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'events has no partition %', p_name
            USING ERRCODE = 'CR016', HINT = 'chronicle db partitions list names them';
    END IF;
    IF v_part.ends > now() THEN
        RAISE EXCEPTION 'the partition % holds events until %, which has not come yet', p_name,
            v_part.ends USING ERRCODE = 'CR016',
            HINT = 'only a month that has ended can be archived and dropped';
    END IF;
    PERFORM set_config('lock_timeout', '10s', true);
    IF v_part.attached THEN
        EXECUTE format('DELETE FROM event_ids k USING %I e WHERE k.event_id = e.event_id',
                       p_name);
        EXECUTE format('ALTER TABLE events DETACH PARTITION %I', p_name);
        EXECUTE format('DELETE FROM session_leases l WHERE l.session_id IN '
                       '(SELECT DISTINCT d.session_id FROM %I d) '
                       'AND NOT EXISTS (SELECT FROM events e WHERE e.session_id = l.session_id)',
                       p_name);
        EXECUTE format('DELETE FROM sessions s WHERE s.id IN '
                       '(SELECT DISTINCT d.session_id FROM %I d) '
                       'AND NOT EXISTS (SELECT FROM events e WHERE e.session_id = s.id)',
                       p_name);
    END IF;
    EXECUTE format('DROP TABLE %I', p_name);
END
$$;
