CREATE FUNCTION chronicle_forget(p_kind text, p_key bytea) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
-- Delete a blob (p_kind 'blob') or a prompt message ('message') that no event names any more:
-- what a redaction does once every event that named it has had that part redacted. False,
-- and nothing deleted, while an event still names it. Reads every month of events: a
-- redaction is rare, and a reference anywhere must keep the content.
DECLARE
    v_hex text := encode(p_key, 'hex');
BEGIN
    IF p_kind = 'blob' THEN
        IF EXISTS (SELECT 1 FROM events e WHERE strpos(e.payload::text, '"' || v_hex || '"') > 0) THEN
            RETURN false;
        END IF;
        PERFORM set_config('chronicle.forgetting', 'blob:' || v_hex, true);
        DELETE FROM blobs b WHERE b.sha256 = p_key;
    ELSIF p_kind = 'message' THEN
        IF EXISTS (SELECT 1 FROM events e
                   WHERE e.kind = 'llm.call'
                     AND (e.payload -> 'prompt' ? v_hex OR e.payload ->> 'tools' = v_hex)) THEN
            RETURN false;
        END IF;
        PERFORM set_config('chronicle.forgetting', 'message:' || v_hex, true);
        DELETE FROM llm_messages m WHERE m.hash = p_key;
    ELSE
        RAISE EXCEPTION 'chronicle_forget forgets a blob or a message, not a %', p_kind
            USING ERRCODE = 'CR020';
    END IF;
    PERFORM set_config('chronicle.forgetting', '', true);
    RETURN true;
END
$$;
