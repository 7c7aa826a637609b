CREATE FUNCTION chronicle_count(p_value jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'number'
                 AND p_value::numeric BETWEEN 0 AND 9007199254740991
                 AND p_value::numeric = trunc(p_value::numeric)
                THEN p_value::numeric::bigint END
$$;
COMMENT ON FUNCTION chronicle_count(jsonb) IS
    'A count of a payload: a whole JSON number from 0 to 2^53 - 1, else NULL (unknown)';
