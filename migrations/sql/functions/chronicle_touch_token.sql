CREATE FUNCTION chronicle_touch_token(p_token uuid, p_resolution double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    UPDATE api_tokens SET last_used_at = now()
    WHERE id = p_token AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;
