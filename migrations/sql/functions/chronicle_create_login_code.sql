CREATE FUNCTION chronicle_create_login_code(
    p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision
) RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_expires timestamptz := now() + make_interval(secs => p_minutes * 60);
    v_admin boolean;
BEGIN
    -- FOR SHARE: a promotion (or a disable) not committed yet is waited for, then read.
    SELECT u.is_admin INTO v_admin FROM users u WHERE u.id = p_user AND {live_user} FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user is disabled' USING ERRCODE = 'CR010';
    END IF;
    -- A link signs in as the user: for an admin, only what may make an admin's token may
    -- make one (the owner's login, as 0014 has it for tokens), never the application's.
    IF v_admin AND NOT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'only the database owner''s login may make a sign-in link for an admin'
            USING ERRCODE = 'CR015';
    END IF;
    IF p_token IS NOT NULL THEN
        PERFORM 1 FROM api_tokens t WHERE t.id = p_token AND t.user_id = p_user
            AND t.kind = 'api' AND t.revoked_at IS NULL;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no such live token of this user' USING ERRCODE = 'CR010';
        END IF;
    END IF;
    INSERT INTO login_codes (id, user_id, token_id, hash, expires_at)
    VALUES (p_code, p_user, p_token, p_code_hash, v_expires);
    RETURN v_expires;
END
$$;
