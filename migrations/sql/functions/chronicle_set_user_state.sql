CREATE FUNCTION chronicle_set_user_state(p_user uuid, p_state text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    IF NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may change a user''s state (%)', p_state
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle users` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    PERFORM 1 FROM users u WHERE u.id = p_user AND u.removed_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user was removed' USING ERRCODE = 'CR010';
    END IF;
    IF p_state = 'disabled' THEN
        UPDATE users SET disabled_at = now() WHERE id = p_user AND disabled_at IS NULL;
        IF NOT FOUND THEN RETURN false; END IF;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
    ELSIF p_state = 'enabled' THEN
        UPDATE users SET disabled_at = NULL WHERE id = p_user AND disabled_at IS NOT NULL;
        IF NOT FOUND THEN RETURN false; END IF;
    ELSIF p_state = 'removed' THEN
        UPDATE users SET removed_at = now(), disabled_at = coalesce(disabled_at, now())
        WHERE id = p_user;
        UPDATE api_tokens SET revoked_at = now() WHERE user_id = p_user AND revoked_at IS NULL;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
        UPDATE login_codes SET used_at = now() WHERE user_id = p_user AND used_at IS NULL;
    ELSIF p_state IN ('admin', 'member') THEN
        UPDATE users SET is_admin = (p_state = 'admin')
        WHERE id = p_user AND is_admin <> (p_state = 'admin');
        IF NOT FOUND THEN RETURN false; END IF;
    ELSE
        RAISE EXCEPTION 'a user state is disabled, enabled, removed, admin or member, not %',
            p_state USING ERRCODE = 'CR010';
    END IF;
    RETURN true;
END
$$;
