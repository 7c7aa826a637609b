CREATE FUNCTION chronicle_refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
-- events is append-only, with two exceptions, each named for its own transaction by the one
-- function allowed to make it:
-- * chronicle_redact replacing parts of one event's payload with their markers (it says which
--   event in chronicle.redacting, and has already checked that the payload's commitment is
--   unchanged): nothing but the payload may change, and only that row;
-- * chronicle_erase_session deleting every event of one session (named in chronicle.erasing)
--   after it recorded the session's signed tombstone in its sessions row.
BEGIN
    IF TG_OP = 'UPDATE'
       AND current_setting('chronicle.redacting', true) = OLD.session_id::text || ':' || OLD.seq::text
       AND (NEW.global_position, NEW.session_id, NEW.seq, NEW.event_id, NEW.tx, NEW.kind,
            NEW.source, NEW.cause, NEW.schema_version, NEW.created_at, NEW.hash)
           IS NOT DISTINCT FROM
           (OLD.global_position, OLD.session_id, OLD.seq, OLD.event_id, OLD.tx, OLD.kind,
            OLD.source, OLD.cause, OLD.schema_version, OLD.created_at, OLD.hash) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE'
       AND current_setting('chronicle.erasing', true) = OLD.session_id::text THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one, or redact '
                     'content with chronicle redact';
END
$$;
