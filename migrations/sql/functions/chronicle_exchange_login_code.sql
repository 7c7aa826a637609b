CREATE FUNCTION chronicle_exchange_login_code(
    p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision,
    p_address text
) RETURNS TABLE (login_id uuid, user_id uuid, name text, is_admin boolean,
                 token_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    v_code uuid;
    v_user uuid;
    v_token uuid;
    v_expires timestamptz := now() + make_interval(secs => p_hours * 3600);
BEGIN
    UPDATE login_codes c SET used_at = now()
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now()
    RETURNING c.id, c.user_id, c.token_id INTO v_code, v_user, v_token;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM users u WHERE u.id = v_user AND {live_user};
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_token IS NOT NULL THEN
        SELECT least(v_expires, t.expires_at) INTO v_expires FROM api_tokens t
        WHERE t.id = v_token AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    UPDATE login_codes c SET login_id = p_login WHERE c.id = v_code;
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;
