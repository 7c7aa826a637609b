"""Replays are not spend: the analytics views and ``session_state`` tell served calls apart.

A replay (app/replay) is a session of its own whose ``llm.call`` events are served from the
recording: they copy the recorded usage and cost (the replay's cost limit counts them as the
recording did) and carry ``replayed_from``; its observations are the recorded ones, served
again, marked the same way. Counted as calls, they made every replay look like model spend
("cost per model per day" grew with each replay) and like tool runs that took no time.

- ``llm_calls`` gains ``replayed`` (served from a recording: no model was called) and
  ``replayed_from`` (the recorded call's seq);
- ``session_costs`` and ``daily_usage`` sum only calls made to a model; ``session_costs``
  gains ``replay_of`` and what a replay served (``replayed_llm_calls``,
  ``replayed_cost_usd``: the recording's figure, not spent again);
- ``tool_calls`` and ``errors`` gain ``replayed``: the observation (the error) was served
  from a recording, nothing ran (docs/analytics.md's queries leave those rows out);
- ``session_state`` gains ``served_calls`` and ``served_cost_usd``; its model calls, tokens and
  cost count calls made to a model (the projection's version 2 rebuilds it).

Views are replaced in place (``CREATE OR REPLACE`` keeps their owner and grants; the new
columns come last, as PostgreSQL requires), then handed to ``chronicle_owner`` and granted
to ``chronicle_analyst`` again as 0003 and 0006 ask of every migration.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-15
"""

from app.migrations.helpers import earlier_revision, run, sql_file

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

LLM_CALLS_VIEW = r"""
CREATE OR REPLACE VIEW llm_calls AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.cause,
       'chat'::text AS gen_ai_operation_name,
       e.payload->>'model' AS gen_ai_request_model,
       chronicle_gen_ai_provider(e.payload->>'model') AS gen_ai_provider_name,
       (e.payload->'params'->>'temperature')::float8 AS gen_ai_request_temperature,
       (e.payload->'params'->>'max_tokens')::integer AS gen_ai_request_max_tokens,
       e.payload->>'tool_calling' AS tool_calling,
       (e.payload->>'latency_ms')::float8 AS latency_ms,
       (e.payload->>'attempts')::integer AS attempts,
       coalesce((e.payload->'usage'->>'prompt_tokens')::integer, 0) AS gen_ai_usage_input_tokens,
       coalesce((e.payload->'usage'->>'completion_tokens')::integer, 0) AS gen_ai_usage_output_tokens,
       coalesce((e.payload->'usage'->>'cached_tokens')::integer, 0) AS gen_ai_usage_cache_read_input_tokens,
       (e.payload->>'cost_usd')::float8 AS cost_usd,
       CASE WHEN e.payload->'response'->>'finish_reason' IS NOT NULL
            THEN ARRAY[e.payload->'response'->>'finish_reason'] END AS gen_ai_response_finish_reasons,
       coalesce(jsonb_array_length(e.payload->'response'->'tool_calls'), 0) AS response_tool_calls,
       e.payload->>'error_kind' AS error_type,
       e.payload->>'error' AS error_message,
       e.payload ? 'replayed_from' AS replayed,
       (e.payload->>'replayed_from')::integer AS replayed_from
FROM events e
WHERE e.kind = 'llm.call';
"""


# Spend is what was asked of a model: a served call is counted apart, never summed with it.
SESSION_COSTS_VIEW = r"""
CREATE OR REPLACE VIEW session_costs AS
SELECT s.id AS session_id,
       created.payload->>'title' AS title,
       s.created_at,
       last.created_at AS updated_at,
       s.last_seq AS events,
       coalesce(c.llm_calls, 0) AS llm_calls,
       coalesce(c.failed_llm_calls, 0) AS failed_llm_calls,
       coalesce(c.gen_ai_usage_input_tokens, 0) AS gen_ai_usage_input_tokens,
       coalesce(c.gen_ai_usage_output_tokens, 0) AS gen_ai_usage_output_tokens,
       coalesce(c.gen_ai_usage_cache_read_input_tokens, 0) AS gen_ai_usage_cache_read_input_tokens,
       c.cost_usd,
       coalesce(c.unpriced_calls, 0) AS unpriced_calls,
       coalesce(c.models, '{}'::text[]) AS models,
       (created.payload->>'replay_of')::uuid AS replay_of,
       coalesce(c.replayed_llm_calls, 0) AS replayed_llm_calls,
       c.replayed_cost_usd
FROM sessions s
LEFT JOIN events created ON created.session_id = s.id AND created.kind = 'session.created'
LEFT JOIN events last ON last.session_id = s.id AND last.seq = s.last_seq
LEFT JOIN (
    SELECT l.session_id,
           count(*) FILTER (WHERE NOT l.replayed) AS llm_calls,
           count(*) FILTER (WHERE NOT l.replayed AND l.error_message IS NOT NULL)
               AS failed_llm_calls,
           (sum(l.gen_ai_usage_input_tokens) FILTER (WHERE NOT l.replayed))::bigint
               AS gen_ai_usage_input_tokens,
           (sum(l.gen_ai_usage_output_tokens) FILTER (WHERE NOT l.replayed))::bigint
               AS gen_ai_usage_output_tokens,
           (sum(l.gen_ai_usage_cache_read_input_tokens) FILTER (WHERE NOT l.replayed))::bigint
               AS gen_ai_usage_cache_read_input_tokens,
           sum(l.cost_usd) FILTER (WHERE NOT l.replayed) AS cost_usd,
           count(*) FILTER (WHERE NOT l.replayed AND l.cost_usd IS NULL
                                  AND l.error_message IS NULL) AS unpriced_calls,
           array_agg(DISTINCT l.gen_ai_request_model ORDER BY l.gen_ai_request_model)
               FILTER (WHERE NOT l.replayed) AS models,
           count(*) FILTER (WHERE l.replayed) AS replayed_llm_calls,
           sum(l.cost_usd) FILTER (WHERE l.replayed) AS replayed_cost_usd
    FROM llm_calls l
    GROUP BY l.session_id
) c ON c.session_id = s.id;
"""

DAILY_USAGE_VIEW = r"""
CREATE OR REPLACE VIEW daily_usage AS
SELECT (l.created_at AT TIME ZONE 'UTC')::date AS day,
       l.gen_ai_request_model,
       l.gen_ai_provider_name,
       count(DISTINCT l.session_id) AS sessions,
       count(*) AS llm_calls,
       count(*) FILTER (WHERE l.error_message IS NOT NULL) AS failed_llm_calls,
       sum(l.gen_ai_usage_input_tokens)::bigint AS gen_ai_usage_input_tokens,
       sum(l.gen_ai_usage_output_tokens)::bigint AS gen_ai_usage_output_tokens,
       sum(l.gen_ai_usage_cache_read_input_tokens)::bigint AS gen_ai_usage_cache_read_input_tokens,
       sum(l.cost_usd) AS cost_usd,
       count(*) FILTER (WHERE l.cost_usd IS NULL AND l.error_message IS NULL) AS unpriced_calls,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.latency_ms)
           FILTER (WHERE l.error_message IS NULL) AS latency_p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY l.latency_ms)
           FILTER (WHERE l.error_message IS NULL) AS latency_p95_ms
FROM llm_calls l
WHERE NOT l.replayed
GROUP BY 1, 2, 3;
"""

SESSION_STATE_COLUMNS = r"""
ALTER TABLE session_state
    ADD COLUMN served_calls    integer NOT NULL DEFAULT 0,
    ADD COLUMN served_cost_usd numeric;
COMMENT ON COLUMN session_state.served_calls IS
    'model calls a replay served from its recording (no model was called; not in model_calls)';
COMMENT ON COLUMN session_state.served_cost_usd IS
    'what the served calls cost when recorded (not spent again; not in cost_usd)';
"""

OWNERSHIP = r"""
ALTER VIEW llm_calls OWNER TO chronicle_owner;
ALTER VIEW tool_calls OWNER TO chronicle_owner;
ALTER VIEW errors OWNER TO chronicle_owner;
ALTER VIEW session_costs OWNER TO chronicle_owner;
ALTER VIEW daily_usage OWNER TO chronicle_owner;
REVOKE ALL ON llm_calls, tool_calls, errors, session_costs, daily_usage FROM PUBLIC;
"""

ANALYST_PRIVILEGES = r"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON llm_calls, tool_calls, errors, agent_states, session_costs, daily_usage,
            session_state TO chronicle_analyst;
    END IF;
END
$$;
"""

# -- downgrade: views cannot lose columns in place, so 0006's are created again -----------

DROP_VIEWS = r"""
DROP VIEW daily_usage;
DROP VIEW session_costs;
DROP VIEW errors;
DROP VIEW tool_calls;
DROP VIEW llm_calls;
"""

DROP_SESSION_STATE_COLUMNS = r"""
ALTER TABLE session_state DROP COLUMN served_cost_usd, DROP COLUMN served_calls;
"""


def upgrade() -> None:
    run(LLM_CALLS_VIEW)
    run(sql_file("views/tool_calls.sql"))
    run(sql_file("views/errors.sql"))
    run(SESSION_COSTS_VIEW)
    run(DAILY_USAGE_VIEW)
    run(SESSION_STATE_COLUMNS)
    run(OWNERSHIP)
    run(ANALYST_PRIVILEGES)


def downgrade() -> None:
    old = earlier_revision("0006_analytics.py")
    run(DROP_VIEWS)
    for view in (
        old.LLM_CALLS_VIEW,
        old.TOOL_CALLS_VIEW,
        old.ERRORS_VIEW,
        old.SESSION_COSTS_VIEW,
        old.DAILY_USAGE_VIEW,
    ):
        run(view)
    run(DROP_SESSION_STATE_COLUMNS)
    run(OWNERSHIP)
    run(ANALYST_PRIVILEGES)
