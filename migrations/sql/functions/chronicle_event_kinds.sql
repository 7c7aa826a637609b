CREATE FUNCTION chronicle_event_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{event_kinds}]::text[] $$;
