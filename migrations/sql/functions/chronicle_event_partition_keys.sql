-- What a partition of events holds of its own, made with it: the keys a partitioned table
-- cannot hold for all months (a unique index of the parent must include created_at), as
-- guards within the month, and the TRUNCATE trigger (statement triggers do not propagate).
-- It also makes the month's part of each index of events under the parent's name
-- (events_YYYY_MM_global_cursor for events_global_cursor, ...), which ATTACH then takes as
-- that index's part, so a plan names what it reads. Idempotent. Across months, the head in
-- sessions keeps seq gapless, event_ids holds the idempotency key and one observation per
-- action, a constraint trigger one session.created.
CREATE FUNCTION chronicle_event_partition_keys(p_partition regclass) RETURNS void
LANGUAGE plpgsql SET search_path = {search_path} AS $$
DECLARE
    v_name  text := (SELECT c.relname FROM pg_class c WHERE c.oid = p_partition);
    v_index record;
BEGIN
    FOR v_index IN
        SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition
        FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
        WHERE x.indrelid = 'events'::regclass AND NOT x.indisprimary
    LOOP
        EXECUTE regexp_replace(
            v_index.definition, '^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ ',
            'CREATE \1INDEX IF NOT EXISTS '
            || quote_ident(v_name || substr(v_index.name, length('events') + 1))
            || ' ON ' || p_partition::text || ' ');
    END LOOP;
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id, seq)',
                   v_name || '_session_seq', p_partition);
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id, cause) '
                   'WHERE cause IS NOT NULL AND kind = ANY (%L::text[])',
                   v_name || '_one_observation_per_action', p_partition,
                   chronicle_observation_kinds());
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (session_id) '
                   'WHERE kind = ''session.created''',
                   v_name || '_one_session_created', p_partition);
    IF NOT EXISTS (SELECT FROM pg_trigger t
                   WHERE t.tgrelid = p_partition AND t.tgname = 'events_no_truncate') THEN
        EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %s '
                       'FOR EACH STATEMENT EXECUTE FUNCTION chronicle_refuse_change()',
                       p_partition);
    END IF;
END
$$;
