-- Make each missing month of events from p_from's month, p_months of them; the names made.
-- A month is a UTC month. The table is made bare with its own keys, then attached: ATTACH
-- takes SHARE UPDATE EXCLUSIVE on events, which appends and reads do not wait for (CREATE
-- TABLE ... PARTITION OF would take ACCESS EXCLUSIVE). Two callers at once are serialised by
-- an advisory lock, and the second finds the month made. The application's roles may call
-- it (the projection runner keeps the next months in place); a month is never dropped here.
CREATE FUNCTION chronicle_ensure_event_partitions(p_from date, p_months integer)
RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_month date := date_trunc('month', p_from)::date;
    v_start timestamptz;
    v_end   timestamptz;
    v_name  text;
    -- The schema of events: the first of search_path is pg_catalog, where nothing is made.
    v_schema text := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE c.oid = 'events'::regclass);
BEGIN
    IF p_from IS NULL OR p_months IS NULL OR p_months < 0 OR p_months > 1200 THEN
        RAISE EXCEPTION 'partitions are made for 0 to 1200 months from a date, not % from %',
            p_months, p_from USING ERRCODE = 'CR005';
    END IF;
    PERFORM pg_advisory_xact_lock(1140, hashtext('events partitions'));
    -- Rather fail than queue every append behind a long DDL lock wait.
    PERFORM set_config('lock_timeout', '10s', true);
    FOR i IN 1 .. p_months LOOP
        v_start := v_month::timestamp AT TIME ZONE 'UTC';
        v_end := (v_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        v_name := 'events_' || to_char(v_month, 'YYYY_MM');
        IF NOT EXISTS (SELECT FROM chronicle_event_partitions() p
                       WHERE p.attached AND p.starts < v_end AND p.ends > v_start) THEN
            IF to_regclass(quote_ident(v_name)) IS NOT NULL THEN
                RAISE EXCEPTION 'a table % exists but is not a partition of events', v_name
                    USING ERRCODE = 'CR016',
                          HINT = 'attach it (ALTER TABLE events ATTACH PARTITION ...) or drop it';
            END IF;
            EXECUTE format('CREATE TABLE %I.%I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           v_schema, v_name);
            PERFORM chronicle_event_partition_keys(format('%I.%I', v_schema, v_name)::regclass);
            EXECUTE format('ALTER TABLE events ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                           v_schema, v_name, v_start, v_end);
            RETURN NEXT v_name;
        END IF;
        v_month := (v_month + interval '1 month')::date;
    END LOOP;
END
$$;
