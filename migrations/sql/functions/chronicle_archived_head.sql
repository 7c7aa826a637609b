CREATE FUNCTION chronicle_archived_head() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    -- An archived session's head row is the record of its archive, and the copy there is
    -- whole: the head and that record stay as they were (an append is refused here), and the
    -- row is kept when a month is dropped with the session's events (a DELETE of it does
    -- nothing), so `chronicle verify` can tell the events left with their month. Only
    -- chronicle_restore_archived, bringing the very same session back, lets it go.
    IF TG_OP = 'DELETE' THEN
        IF current_setting('chronicle.restoring_archived', true) = OLD.id::text THEN
            RETURN OLD;
        END IF;
        RETURN NULL;
    END IF;
    -- A manifest rewritten without a secret (chronicle_rewrite_archive_manifest): that column
    -- alone, of the rows archived where the function says.
    IF current_setting('chronicle.rewriting_archive', true) = OLD.archived_to
       AND (NEW.id, NEW.last_seq, NEW.last_hash, NEW.archived_at, NEW.archived_to, NEW.archived_by)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.last_seq, OLD.last_hash, OLD.archived_at, OLD.archived_to, OLD.archived_by)
    THEN
        RETURN NEW;
    END IF;
    IF NEW.last_seq IS DISTINCT FROM OLD.last_seq
        OR NEW.last_hash IS DISTINCT FROM OLD.last_hash
        OR NEW.archived_at IS DISTINCT FROM OLD.archived_at
        OR NEW.archived_to IS DISTINCT FROM OLD.archived_to
        OR NEW.archived_by IS DISTINCT FROM OLD.archived_by
        OR NEW.archive_manifest IS DISTINCT FROM OLD.archive_manifest THEN
        RAISE EXCEPTION 'session % is archived (to %, at %): it takes no more events',
            OLD.id, OLD.archived_to, OLD.archived_at
            USING ERRCODE = 'CR017', DETAIL = OLD.id::text,
                  HINT = 'an archived session is read from its archive (chronicle sql --archive DIR) '
                         'or brought back with chronicle import DIR';
    END IF;
    RETURN NEW;
END
$$;
