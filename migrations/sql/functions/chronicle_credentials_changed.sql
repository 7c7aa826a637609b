CREATE FUNCTION chronicle_credentials_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    PERFORM pg_notify('chronicle_credentials', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
CREATE TRIGGER api_tokens_revoked AFTER UPDATE OF revoked_at, expires_at ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
CREATE TRIGGER users_changed AFTER UPDATE OF is_admin, disabled_at, removed_at ON users
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
CREATE TRIGGER browser_logins_ended AFTER UPDATE OF ended_at ON browser_logins
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
