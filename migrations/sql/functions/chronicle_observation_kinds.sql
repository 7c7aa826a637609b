CREATE OR REPLACE FUNCTION chronicle_observation_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{observation_kinds}]::text[] $$;
