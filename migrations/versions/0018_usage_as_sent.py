"""Usage numbers as the model sent them: bigint counts, unknown ones NULL, the GenAI names.

Issue 23, items 6, 8 and 9. Before, ``llm_calls`` cast each count to ``integer``: one reply
of 10^15 tokens (or a count of ``"abc"``) made the view fail, and with it ``session_costs``,
``daily_usage``, the evaluation views over them and ``chronicle export --view``, for every
session. Now:

- a count is read by ``chronicle_count(jsonb)``: a whole JSON number from 0 to 2^53 - 1 (what
  every JSON reader, a browser's too, holds exactly) as a ``bigint``, anything else (a
  string, a fraction, a negative or absurd number, an unknown count recorded as ``null``)
  NULL: unknown, never an error. A missing key is 0 in the columns that had it (as before),
  NULL in the new ones (not reported);
- a number of the payload read as a float (cost, latency, temperature) goes through
  ``chronicle_float(jsonb)``: NULL when it is not a number a ``float8`` holds;
- sums of counts in ``session_costs`` and ``daily_usage`` are ``numeric`` (no ``::bigint``
  that a few thousand absurd calls would overflow);
- ``llm_calls`` keeps every column it had, in order, and adds the OpenTelemetry GenAI names
  as quoted identifiers: ``"gen_ai.usage.input_tokens"``, ``"gen_ai.usage.output_tokens"``,
  ``"gen_ai.usage.cache_read.input_tokens"``, ``"gen_ai.usage.cache_creation.input_tokens"``,
  ``"gen_ai.usage.reasoning.output_tokens"``, ``"gen_ai.response.id"``,
  ``"gen_ai.response.model"``, ``"error.type"``, then ``usage_unknown`` (a count the model
  sent could not be read, its usage as sent kept in ``usage.as_sent``: the sums are lower
  bounds) and ``has_reasoning``;
- ``session_costs`` and ``daily_usage`` gain the sums of cache writes and reasoning tokens and
  ``unknown_usage_calls``.

A view cannot change a column's type in place: ``llm_calls`` and the views built on it
(``session_costs``, ``daily_usage``, ``evaluation_latency``) are dropped and made again in
one transaction, owned by ``chronicle_owner`` and granted as 0003, 0006 and 0009 ask. A view
of a user's own over one of them stops the upgrade (PostgreSQL names it): drop it, migrate,
and make it again.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

from __future__ import annotations

from app.migrations.helpers import earlier_revision, run, sql_file

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

#: app.events.platform_audit.PLATFORM_LOG_ID (0016 leaves it out of session_costs).
PLATFORM_LOG_ID = "00000000-0000-4000-8000-00000000a0d1"

FUNCTIONS = sql_file("functions/chronicle_count.sql") + sql_file("functions/chronicle_float.sql")


#: The views as this revision made them (0028 makes them again from migrations/sql/views).
LLM_CALLS_VIEW = r"""
CREATE VIEW llm_calls AS
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
       coalesce(e.payload->'response'->>'reasoning_content', '') <> '' AS has_reasoning
FROM events e
WHERE e.kind = 'llm.call';
COMMENT ON VIEW llm_calls IS
    'One row per model call; counts are bigint, NULL where the model sent none that can be read';
"""

SESSION_COSTS_VIEW = r"""
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
"""

DAILY_USAGE_VIEW = r"""
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
"""

VIEWS = ("llm_calls", "session_costs", "daily_usage")
DEPENDENT = "evaluation_latency"  # 0009's, over llm_calls

FUNCTION_OWNERSHIP = r"""
ALTER FUNCTION chronicle_count(jsonb) OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_float(jsonb) OWNER TO chronicle_owner;
"""

PRIVILEGES = r"""
ALTER VIEW llm_calls OWNER TO chronicle_owner;
ALTER VIEW session_costs OWNER TO chronicle_owner;
ALTER VIEW daily_usage OWNER TO chronicle_owner;
ALTER VIEW evaluation_latency OWNER TO chronicle_owner;
REVOKE ALL ON llm_calls, session_costs, daily_usage, evaluation_latency FROM PUBLIC;
GRANT SELECT ON evaluation_latency TO chronicle_app;
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON llm_calls, session_costs, daily_usage, evaluation_latency
            TO chronicle_analyst;
    END IF;
END
$$;
"""

DROP_VIEWS = r"""
DROP VIEW evaluation_latency;
DROP VIEW daily_usage;
DROP VIEW session_costs;
DROP VIEW llm_calls;
"""


def _evaluation_latency() -> str:
    view: str = earlier_revision("0009_evaluation_reports.py").EVALUATION_LATENCY_VIEW
    return view


def upgrade() -> None:
    run(DROP_VIEWS)
    run(FUNCTIONS)
    run(LLM_CALLS_VIEW)
    run(SESSION_COSTS_VIEW)
    run(DAILY_USAGE_VIEW)
    run(sql_file("views/evaluation_latency.sql"))
    run(FUNCTION_OWNERSHIP)
    run(PRIVILEGES)


def downgrade() -> None:
    old = earlier_revision("0008_replays_are_not_spend.py")
    narrowed = old.SESSION_COSTS_VIEW.rstrip().removesuffix(";")
    run(DROP_VIEWS)
    run("DROP FUNCTION chronicle_float(jsonb);\nDROP FUNCTION chronicle_count(jsonb);")
    run(old.LLM_CALLS_VIEW)
    run(f"{narrowed}\nWHERE s.id <> '{PLATFORM_LOG_ID}'::uuid;")
    run(old.DAILY_USAGE_VIEW)
    run(_evaluation_latency())
    run(PRIVILEGES)
