-- llm_calls with each call's place in the log (tx, global_position): what the usage
-- rollups (chronicle_refresh_usage_rollups) count up to, and the views count on from.
-- Not granted to anyone: analysts read llm_calls, which is this view without the two.
CREATE VIEW usage_calls AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.cause,
       'chat'::text AS gen_ai_operation_name,
       e.payload->>'model' AS gen_ai_request_model,
       chronicle_gen_ai_provider(e.payload->>'model') AS gen_ai_provider_name,
       chronicle_float(e.payload->'params'->'temperature') AS gen_ai_request_temperature,
       chronicle_count(e.payload->'params'->'max_tokens') AS gen_ai_request_max_tokens,
       e.payload->>'tool_calling' AS tool_calling,
       chronicle_float(e.payload->'latency_ms') AS latency_ms,
       chronicle_count(e.payload->'attempts') AS attempts,
       coalesce(chronicle_count(e.payload->'usage'->'prompt_tokens'),
                CASE WHEN NOT coalesce(e.payload->'usage' ? 'prompt_tokens', false) THEN 0 END)
           AS gen_ai_usage_input_tokens,
       coalesce(chronicle_count(e.payload->'usage'->'completion_tokens'),
                CASE WHEN NOT coalesce(e.payload->'usage' ? 'completion_tokens', false) THEN 0 END)
           AS gen_ai_usage_output_tokens,
       coalesce(chronicle_count(e.payload->'usage'->'cached_tokens'),
                CASE WHEN NOT coalesce(e.payload->'usage' ? 'cached_tokens', false) THEN 0 END)
           AS gen_ai_usage_cache_read_input_tokens,
       chronicle_float(e.payload->'cost_usd') AS cost_usd,
       CASE WHEN e.payload->'response'->>'finish_reason' IS NOT NULL
            THEN ARRAY[e.payload->'response'->>'finish_reason'] END AS gen_ai_response_finish_reasons,
       CASE WHEN jsonb_typeof(e.payload->'response'->'tool_calls') = 'array'
            THEN jsonb_array_length(e.payload->'response'->'tool_calls') ELSE 0 END
           AS response_tool_calls,
       e.payload->>'error_kind' AS error_type,
       e.payload->>'error' AS error_message,
       e.payload ? 'replayed_from' AS replayed,
       chronicle_count(e.payload->'replayed_from') AS replayed_from,
       chronicle_count(e.payload->'usage'->'prompt_tokens') AS "gen_ai.usage.input_tokens",
       chronicle_count(e.payload->'usage'->'completion_tokens') AS "gen_ai.usage.output_tokens",
       chronicle_count(e.payload->'usage'->'cached_tokens')
           AS "gen_ai.usage.cache_read.input_tokens",
       chronicle_count(e.payload->'usage'->'cache_creation_tokens')
           AS "gen_ai.usage.cache_creation.input_tokens",
       chronicle_count(e.payload->'usage'->'reasoning_tokens')
           AS "gen_ai.usage.reasoning.output_tokens",
       e.payload->'response'->>'id' AS "gen_ai.response.id",
       e.payload->'response'->>'model' AS "gen_ai.response.model",
       e.payload->>'error_kind' AS "error.type",
       jsonb_typeof(e.payload->'usage'->'as_sent') IS NOT DISTINCT FROM 'object' OR EXISTS (
           SELECT 1
           FROM jsonb_each(CASE WHEN jsonb_typeof(e.payload->'usage') = 'object'
                                THEN e.payload->'usage' END) AS c(key, value)
           WHERE c.key IN ('prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens')
             AND chronicle_count(c.value) IS NULL
       ) AS usage_unknown,
       coalesce(e.payload->'response'->>'reasoning_content', '') <> '' AS has_reasoning,
       e.tx,
       e.global_position
FROM events e
WHERE e.kind = 'llm.call';
