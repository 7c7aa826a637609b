CREATE FUNCTION chronicle_peek_login_code(p_code_hash bytea)
RETURNS TABLE (name text, is_admin boolean, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {search_path} AS $$
    SELECT u.name, u.is_admin, c.expires_at
    FROM login_codes c JOIN users u ON u.id = c.user_id
    LEFT JOIN api_tokens t ON t.id = c.token_id
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now() AND {live_user}
      AND (c.token_id IS NULL OR (t.revoked_at IS NULL
                                  AND (t.expires_at IS NULL OR t.expires_at > now())));
$$;
