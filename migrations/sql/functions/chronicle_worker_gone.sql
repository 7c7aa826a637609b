CREATE FUNCTION chronicle_worker_gone(p_worker text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    DELETE FROM workers WHERE worker_id = p_worker;
$$;
