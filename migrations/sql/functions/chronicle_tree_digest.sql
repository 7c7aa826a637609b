CREATE FUNCTION chronicle_tree_digest(p_value jsonb, p_salt bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
-- A node's digest in a payload's tree commitment (app/events/commitment.py, which this
-- mirrors exactly): a redaction marker is its digest; an object hashes each key's sha256 with
-- its value's digest, in the order of those key hashes; an array its items' digests in order;
-- a scalar its canonical JSON text. ``p_salt`` is the event's id.
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        IF p_value ? '$redacted' AND jsonb_typeof(p_value -> '$redacted') = 'string'
           AND (p_value ->> '$redacted') ~ '^[0-9a-f]{64}$'
           AND NOT EXISTS (SELECT 1 FROM jsonb_object_keys(p_value) AS k
                           WHERE k NOT IN ('$redacted', 'was'))
           AND coalesce(jsonb_typeof(p_value -> 'was'), 'string') = 'string'
           AND coalesce(p_value ->> 'was', 'null')
               IN ('string', 'number', 'boolean', 'null', 'array', 'object') THEN
            RETURN decode(p_value ->> '$redacted', 'hex');
        END IF;
        RETURN sha256(p_salt || '\x6f'::bytea || coalesce((
            SELECT string_agg(k.h || chronicle_tree_digest(e.value, p_salt), ''::bytea ORDER BY k.h)
            FROM jsonb_each(p_value) AS e,
                 LATERAL (SELECT sha256(convert_to(e.key, 'UTF8')) AS h) AS k), ''::bytea));
    WHEN 'array' THEN
        RETURN sha256(p_salt || '\x61'::bytea || coalesce((
            SELECT string_agg(chronicle_tree_digest(a.value, p_salt), ''::bytea ORDER BY a.ord)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, ord)), ''::bytea));
    ELSE
        RETURN sha256(p_salt || '\x73'::bytea
                      || convert_to(chronicle_canonical_json(p_value), 'UTF8'));
    END CASE;
END
$$;
