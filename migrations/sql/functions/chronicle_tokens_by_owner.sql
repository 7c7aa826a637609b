CREATE FUNCTION chronicle_tokens_by_owner() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NOT NULL
       AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'token % is revoked, and stays revoked', OLD.id USING ERRCODE = 'CR015';
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.by_owner := chronicle_owner_login();
    END IF;
    IF chronicle_owner_login() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.hash, NEW.user_id, NEW.kind, NEW.created_at, NEW.by_owner)
       IS DISTINCT FROM (OLD.hash, OLD.user_id, OLD.kind, OLD.created_at, OLD.by_owner) THEN
        RAISE EXCEPTION 'only the database owner''s login may change what token % is', OLD.id
            USING ERRCODE = 'CR015';
    END IF;
    -- FOR SHARE: a promotion not committed yet is waited for and then read, never the user
    -- as it was (its revocation cannot see this row, not committed yet either).
    IF TG_OP = 'INSERT' AND (SELECT u.is_admin FROM users u WHERE u.id = NEW.user_id FOR SHARE) THEN
        RAISE EXCEPTION 'only the database owner''s login may make a token for an admin'
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle tokens create` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER api_tokens_by_owner BEFORE INSERT OR UPDATE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION chronicle_tokens_by_owner();
