CREATE VIEW session_costs AS
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
       coalesce(c.models, '{}'::text[]) AS models,
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
LEFT JOIN events created ON created.session_id = s.id AND created.kind = 'session.created'
LEFT JOIN events last ON last.session_id = s.id AND last.seq = s.last_seq
LEFT JOIN (
    SELECT l.session_id,
           count(*) FILTER (WHERE NOT l.replayed) AS llm_calls,
           count(*) FILTER (WHERE NOT l.replayed AND l.error_message IS NOT NULL)
               AS failed_llm_calls,
           sum(l.gen_ai_usage_input_tokens) FILTER (WHERE NOT l.replayed)
               AS gen_ai_usage_input_tokens,
           sum(l.gen_ai_usage_output_tokens) FILTER (WHERE NOT l.replayed)
               AS gen_ai_usage_output_tokens,
           sum(l.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE NOT l.replayed)
               AS gen_ai_usage_cache_read_input_tokens,
           sum(l.cost_usd) FILTER (WHERE NOT l.replayed) AS cost_usd,
           count(*) FILTER (WHERE NOT l.replayed AND l.cost_usd IS NULL
                                  AND l.error_message IS NULL) AS unpriced_calls,
           array_agg(DISTINCT l.gen_ai_request_model ORDER BY l.gen_ai_request_model)
               FILTER (WHERE NOT l.replayed) AS models,
           count(*) FILTER (WHERE l.replayed) AS replayed_llm_calls,
           sum(l.cost_usd) FILTER (WHERE l.replayed) AS replayed_cost_usd,
           sum(l."gen_ai.usage.cache_creation.input_tokens") FILTER (WHERE NOT l.replayed)
               AS cache_creation_input_tokens,
           sum(l."gen_ai.usage.reasoning.output_tokens") FILTER (WHERE NOT l.replayed)
               AS reasoning_output_tokens,
           count(*) FILTER (WHERE NOT l.replayed AND l.usage_unknown) AS unknown_usage_calls
    FROM llm_calls l
    GROUP BY l.session_id
) c ON c.session_id = s.id
WHERE s.id <> '00000000-0000-4000-8000-00000000a0d1'::uuid;
