CREATE FUNCTION chronicle_event_partitions()
RETURNS TABLE (name text, starts timestamptz, ends timestamptz, attached boolean)
LANGUAGE sql STABLE SET search_path = {search_path} AS $$
    -- The attached partitions, with the bounds PostgreSQL holds for them ...
    SELECT c.relname::text, b[1]::timestamptz, b[2]::timestamptz, true
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid,
         regexp_match(pg_get_expr(c.relpartbound, c.oid),
                      'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
    WHERE i.inhparent = 'events'::regclass
    UNION ALL
    -- ... and a month's table left behind, not attached (its month read from its name).
    SELECT c.relname::text, m::timestamp AT TIME ZONE 'UTC',
           (m + interval '1 month')::timestamp AT TIME ZONE 'UTC', false
    FROM pg_class c,
         make_date(substr(c.relname, 8, 4)::integer, substr(c.relname, 13, 2)::integer, 1) AS m
    WHERE c.relname ~ '^events_[0-9]{4}_(0[1-9]|1[0-2])$' AND c.relkind = 'r'
      AND NOT c.relispartition
      AND c.relnamespace = (SELECT e.relnamespace FROM pg_class e WHERE e.oid = 'events'::regclass)
    ORDER BY 2, 1
$$;
