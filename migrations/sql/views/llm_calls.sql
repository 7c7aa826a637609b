-- One row per model call: usage_calls (the expressions over events) without its place in
-- the log, so the columns analysts have read since 0018 stay as they were.
CREATE OR REPLACE VIEW llm_calls AS
SELECT u.session_id,
       u.seq,
       u.event_id,
       u.created_at,
       u.cause,
       u.gen_ai_operation_name,
       u.gen_ai_request_model,
       u.gen_ai_provider_name,
       u.gen_ai_request_temperature,
       u.gen_ai_request_max_tokens,
       u.tool_calling,
       u.latency_ms,
       u.attempts,
       u.gen_ai_usage_input_tokens,
       u.gen_ai_usage_output_tokens,
       u.gen_ai_usage_cache_read_input_tokens,
       u.cost_usd,
       u.gen_ai_response_finish_reasons,
       u.response_tool_calls,
       u.error_type,
       u.error_message,
       u.replayed,
       u.replayed_from,
       u."gen_ai.usage.input_tokens",
       u."gen_ai.usage.output_tokens",
       u."gen_ai.usage.cache_read.input_tokens",
       u."gen_ai.usage.cache_creation.input_tokens",
       u."gen_ai.usage.reasoning.output_tokens",
       u."gen_ai.response.id",
       u."gen_ai.response.model",
       u."error.type",
       u.usage_unknown,
       u.has_reasoning
FROM usage_calls u;
COMMENT ON VIEW llm_calls IS
    'One row per model call; counts are bigint, NULL where the model sent none that can be read';
