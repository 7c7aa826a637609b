CREATE FUNCTION chronicle_canonical_json(p_value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        RETURN '{' || coalesce((
            SELECT string_agg(to_json(e.key)::text || ':' || CASE jsonb_typeof(e.value)
                       WHEN 'object' THEN chronicle_canonical_json(e.value)
                       WHEN 'array' THEN chronicle_canonical_json(e.value)
                       WHEN 'number' THEN CASE WHEN strpos(e.value::text, '.') = 0 AND length(e.value::text) < 19
                                                THEN e.value::text
                                                ELSE chronicle_canonical_number(e.value::text) END
                       ELSE e.value::text END, ',' ORDER BY e.key COLLATE "C")
            FROM jsonb_each(p_value) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((
            SELECT string_agg(CASE jsonb_typeof(a.value)
                       WHEN 'object' THEN chronicle_canonical_json(a.value)
                       WHEN 'array' THEN chronicle_canonical_json(a.value)
                       WHEN 'number' THEN CASE WHEN strpos(a.value::text, '.') = 0 AND length(a.value::text) < 19
                                                THEN a.value::text
                                                ELSE chronicle_canonical_number(a.value::text) END
                       ELSE a.value::text END, ',' ORDER BY a.ord)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, ord)), '') || ']';
    WHEN 'number' THEN
        RETURN chronicle_canonical_number(p_value::text);
    ELSE
        RETURN p_value::text;
    END CASE;
END
$$;
