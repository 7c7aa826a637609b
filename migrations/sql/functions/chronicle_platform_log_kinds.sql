CREATE FUNCTION chronicle_platform_log_kinds() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    -- Its session.created again, later: a re-sent append, which the event id's uniqueness
    -- refuses as such (so seq 1 is the only one there is).
    IF ((NEW.kind LIKE 'audit.%' OR NEW.kind = 'redaction') AND NEW.seq > 1)
       OR (NEW.kind = 'session.created'
           AND NEW.event_id = '00000000-0000-4000-8000-00000000a0d2'::uuid
           AND NEW.payload->'config'->'platform_log' = 'true'::jsonb) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the platform''s audit log takes only audit records, not %', NEW.kind
        USING ERRCODE = 'CR014',
              HINT = 'the platform log''s session.created is the platform''s own (its fixed '
                     'event id, marked platform_log)';
END
$$;
