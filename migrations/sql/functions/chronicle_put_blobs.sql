CREATE FUNCTION chronicle_put_blobs(p_hashes bytea[], p_texts text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_inserted integer;
BEGIN
    PERFORM chronicle_require_content_hashes('blob', p_hashes, p_texts);
    INSERT INTO blobs (sha256, content)
    SELECT t.hash, t.text FROM unnest(p_hashes, p_texts) AS t(hash, text)
    ON CONFLICT (sha256) DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted;
END
$$;
