-- Model calls, tokens and cost by session. usage_rollup_sessions holds each session's calls
-- up to the rollups' position (and the seq it counted up to); the calls after it are added
-- here as they are (chronicle_usage_tail), so the view is always whole and current
-- (docs/analytics.md, "How the usage views stay fast").
CREATE VIEW session_costs AS
WITH tail AS MATERIALIZED (
    SELECT u.* FROM chronicle_usage_tail() u
),
parts AS (
    SELECT r.session_id, r.llm_calls, r.failed_llm_calls, r.input_tokens, r.output_tokens,
           r.cache_read_input_tokens, r.cost_usd, r.unpriced_calls, r.models,
           r.replayed_llm_calls, r.replayed_cost_usd, r.cache_creation_input_tokens,
           r.reasoning_output_tokens, r.unknown_usage_calls
    FROM usage_rollup_sessions r
    UNION ALL
    SELECT l.session_id,
           count(*) FILTER (WHERE NOT l.replayed),
           count(*) FILTER (WHERE NOT l.replayed AND l.error_message IS NOT NULL),
           sum(l.gen_ai_usage_input_tokens) FILTER (WHERE NOT l.replayed),
           sum(l.gen_ai_usage_output_tokens) FILTER (WHERE NOT l.replayed),
           sum(l.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE NOT l.replayed),
           sum(l.cost_usd) FILTER (WHERE NOT l.replayed),
           count(*) FILTER (WHERE NOT l.replayed AND l.cost_usd IS NULL
                                  AND l.error_message IS NULL),
           array_agg(DISTINCT l.gen_ai_request_model ORDER BY l.gen_ai_request_model)
               FILTER (WHERE NOT l.replayed),
           count(*) FILTER (WHERE l.replayed),
           sum(l.cost_usd) FILTER (WHERE l.replayed),
           sum(l."gen_ai.usage.cache_creation.input_tokens") FILTER (WHERE NOT l.replayed),
           sum(l."gen_ai.usage.reasoning.output_tokens") FILTER (WHERE NOT l.replayed),
           count(*) FILTER (WHERE NOT l.replayed AND l.usage_unknown)
    FROM tail l
    GROUP BY l.session_id
),
c AS (
    SELECT p.session_id,
           sum(p.llm_calls)::bigint AS llm_calls,
           sum(p.failed_llm_calls)::bigint AS failed_llm_calls,
           sum(p.input_tokens) AS gen_ai_usage_input_tokens,
           sum(p.output_tokens) AS gen_ai_usage_output_tokens,
           sum(p.cache_read_input_tokens) AS gen_ai_usage_cache_read_input_tokens,
           sum(p.cost_usd) AS cost_usd,
           sum(p.unpriced_calls)::bigint AS unpriced_calls,
           -- (a session counted in both parts has its models merged in merged_models)
           CASE WHEN count(*) = 1 THEN min(p.models) END AS models,
           sum(p.replayed_llm_calls)::bigint AS replayed_llm_calls,
           sum(p.replayed_cost_usd) AS replayed_cost_usd,
           sum(p.cache_creation_input_tokens) AS cache_creation_input_tokens,
           sum(p.reasoning_output_tokens) AS reasoning_output_tokens,
           sum(p.unknown_usage_calls)::bigint AS unknown_usage_calls
    FROM parts p
    GROUP BY p.session_id
),
merged_models AS (
    SELECT p.session_id, array_agg(DISTINCT m ORDER BY m) AS models
    FROM parts p
    JOIN (SELECT DISTINCT l.session_id FROM tail l) counted_on USING (session_id),
         unnest(p.models) AS m
    GROUP BY p.session_id
)
SELECT s.id AS session_id,
       created.payload->>'title' AS title,
       s.created_at,
       last.created_at AS updated_at,
       s.last_seq AS events,
       coalesce(c.llm_calls, 0) AS llm_calls,
       coalesce(c.failed_llm_calls, 0) AS failed_llm_calls,
       coalesce(c.gen_ai_usage_input_tokens, 0) AS gen_ai_usage_input_tokens,
       coalesce(c.gen_ai_usage_output_tokens, 0) AS gen_ai_usage_output_tokens,
       coalesce(c.gen_ai_usage_cache_read_input_tokens, 0)
           AS gen_ai_usage_cache_read_input_tokens,
       c.cost_usd,
       coalesce(c.unpriced_calls, 0) AS unpriced_calls,
       coalesce(merged.models, c.models, '{}'::text[]) AS models,
       CASE WHEN jsonb_typeof(created.payload->'replay_of') = 'string'
             AND created.payload->>'replay_of'
                 ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
            THEN (created.payload->>'replay_of')::uuid END AS replay_of,
       coalesce(c.replayed_llm_calls, 0) AS replayed_llm_calls,
       c.replayed_cost_usd,
       coalesce(c.cache_creation_input_tokens, 0) AS "gen_ai.usage.cache_creation.input_tokens",
       coalesce(c.reasoning_output_tokens, 0) AS "gen_ai.usage.reasoning.output_tokens",
       coalesce(c.unknown_usage_calls, 0) AS unknown_usage_calls
FROM sessions s
-- each session's first and last event by its own keys, in its own months: a lookup per row
-- rather than a join that reads every event
LEFT JOIN LATERAL (
    SELECT e.payload FROM events e
    WHERE e.session_id = s.id AND e.kind = 'session.created'
      AND e.created_at >= coalesce(s.first_event_at, '-infinity')
    LIMIT 1
) created ON true
LEFT JOIN LATERAL (
    SELECT e.created_at FROM events e
    WHERE e.session_id = s.id AND e.seq = s.last_seq
      AND e.created_at >= coalesce(s.first_event_at, '-infinity')
    LIMIT 1
) last ON true
LEFT JOIN c ON c.session_id = s.id
LEFT JOIN merged_models merged ON merged.session_id = s.id
WHERE s.id <> '00000000-0000-4000-8000-00000000a0d1'::uuid;
