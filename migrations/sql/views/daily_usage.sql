-- Model calls by UTC day, model and provider. The rollups (usage_rollup_days, _latencies,
-- _day_sessions) hold every call up to their position; the calls after it (usage_calls past
-- the position, whose sessions were not counted up to that seq: chronicle_usage_tail) are
-- added here as they are,
-- so the view is always whole and current, and costs what the calls since the last refresh
-- cost rather than the whole log (docs/analytics.md, "How the usage views stay fast").
CREATE VIEW daily_usage AS
WITH tail AS MATERIALIZED (
    SELECT c.*,
           -- its session, unless the rollups count it on this day for this model already
           CASE WHEN NOT EXISTS (
               SELECT 1 FROM usage_rollup_day_sessions m
               WHERE m.session_id = c.session_id AND m.day = c.day
                 AND m.gen_ai_request_model IS NOT DISTINCT FROM c.gen_ai_request_model
                 AND m.gen_ai_provider_name IS NOT DISTINCT FROM c.gen_ai_provider_name
           ) THEN c.session_id END AS uncounted_session
    FROM (
        SELECT u.*, (u.created_at AT TIME ZONE 'UTC')::date AS day
        FROM chronicle_usage_tail() u
        WHERE NOT u.replayed
    ) c
),
tail_sums AS (
    SELECT t.day, t.gen_ai_request_model, t.gen_ai_provider_name,
           count(DISTINCT t.uncounted_session) AS sessions,
           count(*) AS llm_calls,
           count(*) FILTER (WHERE t.error_message IS NOT NULL) AS failed_llm_calls,
           sum(t.gen_ai_usage_input_tokens) AS input_tokens,
           sum(t.gen_ai_usage_output_tokens) AS output_tokens,
           sum(t.gen_ai_usage_cache_read_input_tokens) AS cache_read_input_tokens,
           sum(t.cost_usd) AS cost_usd,
           count(*) FILTER (WHERE t.cost_usd IS NULL AND t.error_message IS NULL)
               AS unpriced_calls,
           sum(t."gen_ai.usage.cache_creation.input_tokens") AS cache_creation_input_tokens,
           sum(t."gen_ai.usage.reasoning.output_tokens") AS reasoning_output_tokens,
           count(*) FILTER (WHERE t.usage_unknown) AS unknown_usage_calls
    FROM tail t
    GROUP BY 1, 2, 3
),
sums AS (
    SELECT p.day, p.gen_ai_request_model, p.gen_ai_provider_name,
           sum(p.sessions)::bigint AS sessions,
           sum(p.llm_calls)::bigint AS llm_calls,
           sum(p.failed_llm_calls)::bigint AS failed_llm_calls,
           coalesce(sum(p.input_tokens), 0) AS gen_ai_usage_input_tokens,
           coalesce(sum(p.output_tokens), 0) AS gen_ai_usage_output_tokens,
           coalesce(sum(p.cache_read_input_tokens), 0) AS gen_ai_usage_cache_read_input_tokens,
           sum(p.cost_usd) AS cost_usd,
           sum(p.unpriced_calls)::bigint AS unpriced_calls,
           coalesce(sum(p.cache_creation_input_tokens), 0) AS cache_creation_input_tokens,
           coalesce(sum(p.reasoning_output_tokens), 0) AS reasoning_output_tokens,
           sum(p.unknown_usage_calls)::bigint AS unknown_usage_calls
    FROM (
        SELECT d.day, d.gen_ai_request_model, d.gen_ai_provider_name, d.sessions, d.llm_calls,
               d.failed_llm_calls, d.input_tokens, d.output_tokens, d.cache_read_input_tokens,
               d.cost_usd, d.unpriced_calls, d.cache_creation_input_tokens,
               d.reasoning_output_tokens, d.unknown_usage_calls
        FROM usage_rollup_days d
        UNION ALL
        SELECT * FROM tail_sums
    ) p
    GROUP BY 1, 2, 3
),
bands AS (
    SELECT b.day, b.gen_ai_request_model, b.gen_ai_provider_name, b.bucket,
           sum(b.calls) AS calls, min(b.min_ms) AS min_ms, max(b.max_ms) AS max_ms
    FROM (
        SELECT l.day, l.gen_ai_request_model, l.gen_ai_provider_name, l.bucket, l.calls,
               l.min_ms, l.max_ms
        FROM usage_rollup_latencies l
        UNION ALL
        SELECT t.day, t.gen_ai_request_model, t.gen_ai_provider_name,
               chronicle_latency_bucket(t.latency_ms), count(*), min(t.latency_ms),
               max(t.latency_ms)
        FROM tail t
        WHERE t.error_message IS NULL AND t.latency_ms IS NOT NULL
        GROUP BY 1, 2, 3, 4
    ) b
    GROUP BY 1, 2, 3, 4
),
histograms AS (
    SELECT b.day, b.gen_ai_request_model, b.gen_ai_provider_name,
           array_agg(ARRAY[b.calls::float8, b.min_ms, b.max_ms] ORDER BY b.bucket) AS bands
    FROM bands b
    GROUP BY 1, 2, 3
)
SELECT s.day,
       s.gen_ai_request_model,
       s.gen_ai_provider_name,
       s.sessions,
       s.llm_calls,
       s.failed_llm_calls,
       s.gen_ai_usage_input_tokens,
       s.gen_ai_usage_output_tokens,
       s.gen_ai_usage_cache_read_input_tokens,
       s.cost_usd,
       s.unpriced_calls,
       chronicle_latency_percentile(0.5, h.bands) AS latency_p50_ms,
       chronicle_latency_percentile(0.95, h.bands) AS latency_p95_ms,
       s.cache_creation_input_tokens AS "gen_ai.usage.cache_creation.input_tokens",
       s.reasoning_output_tokens AS "gen_ai.usage.reasoning.output_tokens",
       s.unknown_usage_calls
FROM sums s
LEFT JOIN histograms h
    ON h.day = s.day
   AND h.gen_ai_request_model IS NOT DISTINCT FROM s.gen_ai_request_model
   AND h.gen_ai_provider_name IS NOT DISTINCT FROM s.gen_ai_provider_name;
