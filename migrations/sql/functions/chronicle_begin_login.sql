CREATE FUNCTION chronicle_begin_login(
    p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision,
    p_address text
) RETURNS TABLE (login_id uuid, user_id uuid, name text, is_admin boolean,
                 token_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    v_user uuid;
    v_token uuid;
    v_expires timestamptz;
BEGIN
    SELECT t.user_id, t.id, least(now() + make_interval(secs => p_hours * 3600), t.expires_at)
    INTO v_user, v_token, v_expires
    FROM api_tokens t JOIN users u ON u.id = t.user_id
    WHERE t.hash = p_token_hash AND t.kind = 'api' AND t.revoked_at IS NULL
      AND (t.expires_at IS NULL OR t.expires_at > now()) AND {live_user};
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;
