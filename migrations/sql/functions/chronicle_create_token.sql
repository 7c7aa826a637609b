CREATE FUNCTION chronicle_create_token(
    p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamptz
) RETURNS TABLE (id uuid, user_id uuid, user_name text, kind text, label text,
                 created_at timestamptz, expires_at timestamptz, revoked_at timestamptz,
                 last_used_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
BEGIN
    IF octet_length(p_hash) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'a token is kept as its sha256 (32 bytes), not % bytes',
            coalesce(octet_length(p_hash), 0) USING ERRCODE = 'CR005';
    END IF;
    RETURN QUERY
        WITH t AS (
            INSERT INTO api_tokens AS k (id, user_id, kind, label, hash, expires_at)
            VALUES (p_id, p_user, coalesce(p_kind, 'api'), left(coalesce(p_label, ''), 200),
                    p_hash, p_expires)
            RETURNING k.*
        )
        SELECT t.id, t.user_id, u.name, t.kind, t.label, t.created_at, t.expires_at,
               t.revoked_at, t.last_used_at
        FROM t JOIN users u ON u.id = t.user_id;
END
$$;
