CREATE FUNCTION chronicle_require_content_hashes(p_what text, p_hashes bytea[], p_texts text[])
RETURNS void
LANGUAGE plpgsql SET search_path = {search_path} AS $$
DECLARE
    v_bad integer;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) <> coalesce(cardinality(p_texts), 0) THEN
        RAISE EXCEPTION '% hashes but % texts', coalesce(cardinality(p_hashes), 0),
            coalesce(cardinality(p_texts), 0) USING ERRCODE = 'CR005';
    END IF;
    SELECT t.ord INTO v_bad
    FROM unnest(p_hashes, p_texts) WITH ORDINALITY AS t(hash, text, ord)
    WHERE t.hash IS NULL OR t.text IS NULL
       OR sha256(convert_to(t.text, 'UTF8')) IS DISTINCT FROM t.hash
    ORDER BY t.ord
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% % of % does not match its hash %', p_what, v_bad,
            cardinality(p_hashes), coalesce(encode(p_hashes[v_bad], 'hex'), 'NULL')
            USING ERRCODE = 'CR004', DETAIL = v_bad::text,
                  HINT = 'the key of stored content is the sha256 of its canonical JSON text';
    END IF;
END
$$;
