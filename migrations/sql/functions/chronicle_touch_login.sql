CREATE FUNCTION chronicle_touch_login(p_login uuid, p_resolution double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    UPDATE browser_logins SET last_used_at = now()
    WHERE id = p_login AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;
