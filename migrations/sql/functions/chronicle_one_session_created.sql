-- One session.created per session, across months (see chronicle_one_observation_per_action).
CREATE FUNCTION chronicle_one_session_created() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(NEW.session_id::text));
    IF EXISTS (SELECT FROM events e
               WHERE e.session_id = NEW.session_id AND e.kind = 'session.created'
                 AND e.created_at >= least((SELECT s.first_event_at FROM sessions s
                                            WHERE s.id = NEW.session_id), NEW.created_at)
                 AND e.seq <> NEW.seq) THEN
        RAISE EXCEPTION 'session % already has its session.created event', NEW.session_id
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'events_one_session_created',
                  DETAIL = format('Key (session_id)=(%s) already exists.', NEW.session_id);
    END IF;
    RETURN NULL;
END
$$;
