-- Counts the model calls committed since the usage rollups' position into them, at most
-- p_calls of them, and moves the position in the same transaction (docs/analytics.md,
-- "How the usage views stay fast"). The position only ever covers calls every reader can
-- see (a transaction id below the oldest one running), so a call committed later is after
-- it. A call whose session the rollups already counted up to its seq (a session archived
-- and imported again comes back with new positions) is not counted twice. Returns how many
-- calls it counted and whether it reached the head of the log. Runs one at a time (the
-- position's row is locked); the projection runner calls it every few seconds.
CREATE FUNCTION chronicle_refresh_usage_rollups(p_calls integer)
RETURNS TABLE (counted bigint, caught_up boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_from_tx xid8;
    v_from_position bigint;
    v_to_tx xid8;
    v_to_position bigint;
    v_caught_up boolean := false;
    v_counted bigint;
BEGIN
    SELECT r.tx, r.global_position INTO v_from_tx, v_from_position
    FROM usage_rollup_position r WHERE r.name = 'usage' FOR UPDATE;
    -- The p_calls-th call after the position that every reader can see, else the last event
    -- every reader can see.
    SELECT e.tx, e.global_position INTO v_to_tx, v_to_position
    FROM events e
    WHERE e.kind = 'llm.call'
      AND (e.tx, e.global_position) > (v_from_tx, v_from_position)
      AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx, e.global_position
    OFFSET greatest(p_calls, 1) - 1 LIMIT 1;
    IF NOT FOUND THEN
        v_caught_up := true;
        SELECT e.tx, e.global_position INTO v_to_tx, v_to_position
        FROM events e
        WHERE e.tx < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx DESC, e.global_position DESC LIMIT 1;
        IF NOT FOUND OR (v_to_tx, v_to_position) <= (v_from_tx, v_from_position) THEN
            RETURN QUERY SELECT 0::bigint, true;
            RETURN;
        END IF;
    END IF;

    WITH batch AS MATERIALIZED (
        SELECT u.*, (u.created_at AT TIME ZONE 'UTC')::date AS day
        FROM usage_calls u
        LEFT JOIN usage_rollup_sessions r ON r.session_id = u.session_id
        WHERE (u.tx, u.global_position) > (v_from_tx, v_from_position)
          AND (u.tx, u.global_position) <= (v_to_tx, v_to_position)
          AND u.seq > coalesce(r.counted_seq, 0)
    ),
    answered AS MATERIALIZED (
        SELECT * FROM batch WHERE NOT replayed
    ),
    markers AS (
        INSERT INTO usage_rollup_day_sessions
            (session_id, day, gen_ai_request_model, gen_ai_provider_name)
        SELECT DISTINCT a.session_id, a.day, a.gen_ai_request_model, a.gen_ai_provider_name
        FROM answered a
        ON CONFLICT DO NOTHING
        RETURNING day, gen_ai_request_model, gen_ai_provider_name
    ),
    new_sessions AS (
        SELECT m.day, m.gen_ai_request_model, m.gen_ai_provider_name, count(*) AS sessions
        FROM markers m GROUP BY 1, 2, 3
    ),
    day_sums AS (
        SELECT a.day, a.gen_ai_request_model, a.gen_ai_provider_name,
               count(*) AS llm_calls,
               count(*) FILTER (WHERE a.error_message IS NOT NULL) AS failed_llm_calls,
               sum(a.gen_ai_usage_input_tokens) AS input_tokens,
               sum(a.gen_ai_usage_output_tokens) AS output_tokens,
               sum(a.gen_ai_usage_cache_read_input_tokens) AS cache_read_input_tokens,
               sum(a.cost_usd) AS cost_usd,
               count(*) FILTER (WHERE a.cost_usd IS NULL AND a.error_message IS NULL)
                   AS unpriced_calls,
               sum(a."gen_ai.usage.cache_creation.input_tokens") AS cache_creation_input_tokens,
               sum(a."gen_ai.usage.reasoning.output_tokens") AS reasoning_output_tokens,
               count(*) FILTER (WHERE a.usage_unknown) AS unknown_usage_calls
        FROM answered a GROUP BY 1, 2, 3
    ),
    days AS (
        INSERT INTO usage_rollup_days AS d
        SELECT s.day, s.gen_ai_request_model, s.gen_ai_provider_name,
               coalesce(n.sessions, 0), s.llm_calls, s.failed_llm_calls, s.input_tokens,
               s.output_tokens, s.cache_read_input_tokens, s.cost_usd, s.unpriced_calls,
               s.cache_creation_input_tokens, s.reasoning_output_tokens, s.unknown_usage_calls
        FROM day_sums s
        LEFT JOIN new_sessions n
            ON n.day = s.day
           AND n.gen_ai_request_model IS NOT DISTINCT FROM s.gen_ai_request_model
           AND n.gen_ai_provider_name IS NOT DISTINCT FROM s.gen_ai_provider_name
        ON CONFLICT (day, gen_ai_request_model, gen_ai_provider_name) DO UPDATE SET
            sessions = d.sessions + excluded.sessions,
            llm_calls = d.llm_calls + excluded.llm_calls,
            failed_llm_calls = d.failed_llm_calls + excluded.failed_llm_calls,
            input_tokens = coalesce(d.input_tokens + excluded.input_tokens, d.input_tokens, excluded.input_tokens),
            output_tokens = coalesce(d.output_tokens + excluded.output_tokens, d.output_tokens, excluded.output_tokens),
            cache_read_input_tokens = coalesce(d.cache_read_input_tokens + excluded.cache_read_input_tokens, d.cache_read_input_tokens, excluded.cache_read_input_tokens),
            cost_usd = coalesce(d.cost_usd + excluded.cost_usd, d.cost_usd, excluded.cost_usd),
            unpriced_calls = d.unpriced_calls + excluded.unpriced_calls,
            cache_creation_input_tokens = coalesce(d.cache_creation_input_tokens + excluded.cache_creation_input_tokens, d.cache_creation_input_tokens, excluded.cache_creation_input_tokens),
            reasoning_output_tokens = coalesce(d.reasoning_output_tokens + excluded.reasoning_output_tokens, d.reasoning_output_tokens, excluded.reasoning_output_tokens),
            unknown_usage_calls = d.unknown_usage_calls + excluded.unknown_usage_calls
        RETURNING 1
    ),
    bands AS (
        INSERT INTO usage_rollup_latencies AS l
        SELECT a.day, a.gen_ai_request_model, a.gen_ai_provider_name,
               chronicle_latency_bucket(a.latency_ms), count(*), min(a.latency_ms),
               max(a.latency_ms)
        FROM answered a
        WHERE a.error_message IS NULL AND a.latency_ms IS NOT NULL
        GROUP BY 1, 2, 3, 4
        ON CONFLICT (day, gen_ai_request_model, gen_ai_provider_name, bucket) DO UPDATE SET
            calls = l.calls + excluded.calls,
            min_ms = least(l.min_ms, excluded.min_ms),
            max_ms = greatest(l.max_ms, excluded.max_ms)
        RETURNING 1
    ),
    per_session AS (
        INSERT INTO usage_rollup_sessions AS r
        SELECT b.session_id, max(b.seq),
               count(*) FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.error_message IS NOT NULL),
               sum(b.gen_ai_usage_input_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.gen_ai_usage_output_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE NOT b.replayed),
               sum(b.cost_usd) FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.cost_usd IS NULL
                                      AND b.error_message IS NULL),
               array_agg(DISTINCT b.gen_ai_request_model ORDER BY b.gen_ai_request_model)
                   FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE b.replayed),
               sum(b.cost_usd) FILTER (WHERE b.replayed),
               sum(b."gen_ai.usage.cache_creation.input_tokens") FILTER (WHERE NOT b.replayed),
               sum(b."gen_ai.usage.reasoning.output_tokens") FILTER (WHERE NOT b.replayed),
               count(*) FILTER (WHERE NOT b.replayed AND b.usage_unknown)
        FROM batch b
        GROUP BY b.session_id
        ON CONFLICT (session_id) DO UPDATE SET
            counted_seq = greatest(r.counted_seq, excluded.counted_seq),
            llm_calls = r.llm_calls + excluded.llm_calls,
            failed_llm_calls = r.failed_llm_calls + excluded.failed_llm_calls,
            input_tokens = coalesce(r.input_tokens + excluded.input_tokens, r.input_tokens, excluded.input_tokens),
            output_tokens = coalesce(r.output_tokens + excluded.output_tokens, r.output_tokens, excluded.output_tokens),
            cache_read_input_tokens = coalesce(r.cache_read_input_tokens + excluded.cache_read_input_tokens, r.cache_read_input_tokens, excluded.cache_read_input_tokens),
            cost_usd = coalesce(r.cost_usd + excluded.cost_usd, r.cost_usd, excluded.cost_usd),
            unpriced_calls = r.unpriced_calls + excluded.unpriced_calls,
            models = (SELECT array_agg(DISTINCT m ORDER BY m)
                      FROM unnest(r.models || excluded.models) AS m),
            replayed_llm_calls = r.replayed_llm_calls + excluded.replayed_llm_calls,
            replayed_cost_usd = coalesce(r.replayed_cost_usd + excluded.replayed_cost_usd, r.replayed_cost_usd, excluded.replayed_cost_usd),
            cache_creation_input_tokens = coalesce(r.cache_creation_input_tokens + excluded.cache_creation_input_tokens, r.cache_creation_input_tokens, excluded.cache_creation_input_tokens),
            reasoning_output_tokens = coalesce(r.reasoning_output_tokens + excluded.reasoning_output_tokens, r.reasoning_output_tokens, excluded.reasoning_output_tokens),
            unknown_usage_calls = r.unknown_usage_calls + excluded.unknown_usage_calls
        RETURNING 1
    )
    -- (every data-modifying part runs to its end whether read or not)
    SELECT count(*) INTO v_counted FROM batch;

    UPDATE usage_rollup_position
    SET tx = v_to_tx, global_position = v_to_position, refreshed_at = now()
    WHERE name = 'usage';
    RETURN QUERY SELECT v_counted, v_caught_up;
END
$$;
