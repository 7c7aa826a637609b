CREATE FUNCTION chronicle_refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
-- events is append-only, with one exception: chronicle_redact replacing parts of one event's
-- payload with their markers (it says which event, for its own transaction, in
-- chronicle.redacting, and has already checked that the payload's commitment is unchanged).
-- Nothing but the payload may change, and only that row.
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
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one, or redact '
                     'content with chronicle redact';
END
$$;
