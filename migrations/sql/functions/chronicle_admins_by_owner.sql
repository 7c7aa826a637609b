CREATE FUNCTION chronicle_admins_by_owner() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    IF NEW.is_admin AND (TG_OP = 'INSERT' OR NOT OLD.is_admin) AND NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may make % an admin', NEW.name
            USING ERRCODE = 'CR015',
                  HINT = 'run the command with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER users_admins_by_owner BEFORE INSERT OR UPDATE OF is_admin ON users
    FOR EACH ROW EXECUTE FUNCTION chronicle_admins_by_owner();
