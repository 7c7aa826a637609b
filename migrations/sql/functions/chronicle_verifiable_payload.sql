CREATE FUNCTION chronicle_verifiable_payload(p_kind text, p_payload text, p_index integer DEFAULT 1)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET extra_float_digits = 1 AS $$
DECLARE
    v_payload jsonb := p_payload::jsonb;
BEGIN
    IF p_kind IS NOT NULL AND NOT (p_kind = ANY (chronicle_event_kinds())) THEN
        RAISE EXCEPTION 'event % has the kind %, which the protocol does not know', p_index, p_kind
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'append only the kinds of app/events (verify could not read the event)';
    END IF;
    IF jsonb_typeof(v_payload) IS DISTINCT FROM 'object' AND v_payload IS NOT NULL THEN
        RAISE EXCEPTION 'event % has a payload that is a JSON %, not an object', p_index,
            jsonb_typeof(v_payload) USING ERRCODE = 'CR014', DETAIL = p_index::text;
    END IF;
    IF chronicle_canonical_json(v_payload) IS DISTINCT FROM p_payload THEN
        RAISE EXCEPTION 'event % has a payload text that is not canonical JSON', p_index
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'send the payload as app.events.canonical writes it (sorted keys, no '
                         'whitespace): the chain covers that text, and verify re-hashes the stored value';
    END IF;
    RETURN v_payload;
END
$$;
