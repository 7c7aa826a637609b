CREATE FUNCTION chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean)
RETURNS TABLE (id uuid, name text, is_admin boolean, created_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    INSERT INTO users AS u (id, name, is_admin) VALUES (p_id, p_name, coalesce(p_is_admin, false))
    RETURNING u.id, u.name, u.is_admin, u.created_at;
$$;
