CREATE OR REPLACE FUNCTION chronicle_action_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{action_kinds}]::text[] $$;
