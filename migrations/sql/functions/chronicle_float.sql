CREATE FUNCTION chronicle_float(p_value jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'number'
                 AND abs(p_value::numeric) <= 1e300
                THEN p_value::numeric::double precision END
$$;
COMMENT ON FUNCTION chronicle_float(jsonb) IS
    'A number of a payload as float8, else NULL (a string, or beyond what float8 holds)';
