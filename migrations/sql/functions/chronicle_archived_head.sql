CREATE FUNCTION chronicle_archived_head() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    -- An archived session's copy in its archive is whole: its head, and the record of where
    -- it went, stay as they were when it was archived (an append to it is refused here).
    IF OLD.archived_at IS NOT NULL AND (
           NEW.last_seq IS DISTINCT FROM OLD.last_seq
        OR NEW.last_hash IS DISTINCT FROM OLD.last_hash
        OR NEW.archived_at IS DISTINCT FROM OLD.archived_at
        OR NEW.archived_to IS DISTINCT FROM OLD.archived_to
        OR NEW.archived_by IS DISTINCT FROM OLD.archived_by
        OR NEW.archive_manifest IS DISTINCT FROM OLD.archive_manifest) THEN
        RAISE EXCEPTION 'session % is archived (to %, at %): it takes no more events',
            OLD.id, OLD.archived_to, OLD.archived_at
            USING ERRCODE = 'CR016', DETAIL = OLD.id::text,
                  HINT = 'an archived session is read from its archive (chronicle sql --archive DIR) '
                         'or imported into another database (chronicle import DIR)';
    END IF;
    RETURN NEW;
END
$$;
ALTER FUNCTION chronicle_archived_head() OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_archived_head() FROM PUBLIC;
CREATE TRIGGER sessions_archived_head BEFORE UPDATE ON sessions
    FOR EACH ROW WHEN (OLD.archived_at IS NOT NULL)
    EXECUTE FUNCTION chronicle_archived_head();
