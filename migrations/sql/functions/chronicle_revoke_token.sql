CREATE FUNCTION chronicle_revoke_token(p_token uuid, p_user uuid) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    WITH revoked AS (
        UPDATE api_tokens SET revoked_at = now()
        WHERE id = p_token AND revoked_at IS NULL AND (p_user IS NULL OR user_id = p_user)
        RETURNING id
    )
    SELECT EXISTS (SELECT FROM revoked);
$$;
