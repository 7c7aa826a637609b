CREATE FUNCTION chronicle_erase_user(p_user uuid, p_new_name text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
-- A person's data out of the access tables: the user keeps its id (what their sessions'
-- owners, limits and usage name) under a name that says nothing (p_new_name), removed; each
-- token is revoked and loses its label, each browser login ends and loses its address, each
-- sign-in code goes. Only the database owner's login may (as for every change of a user).
-- Returns the name the user had.
DECLARE
    v_name text;
BEGIN
    IF NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may erase a user'
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle users erase` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    SELECT u.name INTO v_name FROM users u WHERE u.id = p_user FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user' USING ERRCODE = 'CR010';
    END IF;
    UPDATE users SET name = p_new_name, is_admin = false,
                     removed_at = coalesce(removed_at, now()),
                     disabled_at = coalesce(disabled_at, now())
     WHERE id = p_user;
    UPDATE api_tokens SET label = '', revoked_at = coalesce(revoked_at, now())
     WHERE user_id = p_user;
    UPDATE browser_logins SET address = '', ended_at = coalesce(ended_at, now())
     WHERE user_id = p_user;
    DELETE FROM login_codes WHERE user_id = p_user;
    RETURN v_name;
END
$$;
