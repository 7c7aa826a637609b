CREATE FUNCTION chronicle_tool_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{tool_kinds}]::text[] $$;
