-- What a partition of events holds of its own, made with it: the keys a partitioned table
-- cannot hold for all months (a unique index of the parent must include created_at), as
-- guards within the month, and the TRUNCATE trigger (statement triggers do not propagate).
-- Idempotent. Across months, the head in sessions keeps seq gapless, event_ids holds the
-- idempotency key, and two constraint triggers hold the one-per-session rules.
CREATE FUNCTION chronicle_event_partition_keys(p_partition regclass) RETURNS void
LANGUAGE plpgsql SET search_path = {search_path} AS $$
DECLARE
    v_name text := (SELECT c.relname FROM pg_class c WHERE c.oid = p_partition);
BEGIN
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
