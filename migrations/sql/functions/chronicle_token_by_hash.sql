CREATE FUNCTION chronicle_token_by_hash(p_hash bytea)
RETURNS TABLE (id uuid, user_id uuid, kind text, expires_at timestamptz, revoked_at timestamptz,
               last_used_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {search_path} AS $$
    SELECT t.id, t.user_id, t.kind, t.expires_at, t.revoked_at, t.last_used_at
    FROM api_tokens t WHERE t.hash = p_hash;
$$;
