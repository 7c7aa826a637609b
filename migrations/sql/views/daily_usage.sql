CREATE VIEW daily_usage AS
SELECT (l.created_at AT TIME ZONE 'UTC')::date AS day,
       l.gen_ai_request_model,
       l.gen_ai_provider_name,
       count(DISTINCT l.session_id) AS sessions,
       count(*) AS llm_calls,
       count(*) FILTER (WHERE l.error_message IS NOT NULL) AS failed_llm_calls,
       coalesce(sum(l.gen_ai_usage_input_tokens), 0) AS gen_ai_usage_input_tokens,
       coalesce(sum(l.gen_ai_usage_output_tokens), 0) AS gen_ai_usage_output_tokens,
       coalesce(sum(l.gen_ai_usage_cache_read_input_tokens), 0)
           AS gen_ai_usage_cache_read_input_tokens,
       sum(l.cost_usd) AS cost_usd,
       count(*) FILTER (WHERE l.cost_usd IS NULL AND l.error_message IS NULL) AS unpriced_calls,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.latency_ms)
           FILTER (WHERE l.error_message IS NULL) AS latency_p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY l.latency_ms)
           FILTER (WHERE l.error_message IS NULL) AS latency_p95_ms,
       coalesce(sum(l."gen_ai.usage.cache_creation.input_tokens"), 0)
           AS "gen_ai.usage.cache_creation.input_tokens",
       coalesce(sum(l."gen_ai.usage.reasoning.output_tokens"), 0)
           AS "gen_ai.usage.reasoning.output_tokens",
       count(*) FILTER (WHERE l.usage_unknown) AS unknown_usage_calls
FROM llm_calls l
WHERE NOT l.replayed
GROUP BY 1, 2, 3;
