CREATE FUNCTION chronicle_put_messages(p_hashes bytea[], p_texts text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_inserted integer;
BEGIN
    PERFORM chronicle_require_content_hashes('message', p_hashes, p_texts);
    INSERT INTO llm_messages (hash, message)
    SELECT t.hash, t.text::jsonb FROM unnest(p_hashes, p_texts) AS t(hash, text)
    ON CONFLICT (hash) DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted;
END
$$;
