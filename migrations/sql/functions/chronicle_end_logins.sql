CREATE FUNCTION chronicle_end_logins(p_user uuid, p_login uuid) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_count integer;
BEGIN
    UPDATE browser_logins l SET ended_at = now()
    WHERE l.user_id = p_user AND (p_login IS NULL OR l.id = p_login) AND l.ended_at IS NULL
      AND l.expires_at > now();
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
