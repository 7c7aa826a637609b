CREATE FUNCTION chronicle_refuse_content_change() RETURNS trigger LANGUAGE plpgsql AS $$
-- blobs and llm_messages are append-only, with one exception: chronicle_forget deleting a row
-- that no event refers to any more (its content was redacted everywhere), named for its own
-- transaction in chronicle.forgetting.
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'blobs' THEN
        IF current_setting('chronicle.forgetting', true) = 'blob:' || encode(OLD.sha256, 'hex') THEN
            RETURN OLD;
        END IF;
    ELSIF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'llm_messages' THEN
        IF current_setting('chronicle.forgetting', true) = 'message:' || encode(OLD.hash, 'hex') THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'content goes only when every event that names it was redacted (chronicle redact)';
END
$$;
