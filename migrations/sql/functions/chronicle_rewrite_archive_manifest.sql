CREATE FUNCTION chronicle_rewrite_archive_manifest(p_archived_to text, p_old bytea, p_new bytea)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
-- An archive directory rewritten without a secret (``chronicle redact --value-file``) has a new
-- manifest: the rows of the sessions archived there record its sha256 from now on. Only that
-- column of those rows changes (the archived head's trigger lets exactly this through, named in
-- chronicle.rewriting_archive); the number of rows changed.
DECLARE
    v_rows integer;
BEGIN
    IF octet_length(p_new) <> 32 THEN
        RAISE EXCEPTION 'a manifest''s sha256 is 32 bytes' USING ERRCODE = 'CR017';
    END IF;
    PERFORM set_config('chronicle.rewriting_archive', p_archived_to, true);
    UPDATE sessions s SET archive_manifest = p_new
     WHERE s.archived_to = p_archived_to AND s.archive_manifest = p_old AND s.erased_at IS NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM set_config('chronicle.rewriting_archive', '', true);
    IF v_rows = 0 THEN
        RAISE EXCEPTION 'no session is archived to % with that manifest', p_archived_to
            USING ERRCODE = 'CR017';
    END IF;
    RETURN v_rows;
END
$$;
