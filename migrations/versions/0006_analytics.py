"""Analytics: documented views over the log, a read-only analyst role, and verbatim import.

Views (docs/analytics.md documents every column; each view is owned by ``chronicle_owner``
and reads the tables with its owner's rights, so ``chronicle_analyst`` needs ``SELECT`` on
the views alone):

``llm_calls``       one row per model call, columns named after the OpenTelemetry GenAI
                    semantic conventions where one exists (``gen_ai_request_model``, ...)
``tool_calls``      an action some service runs, joined to the observation that answers it
                    (``cause``): exit code, time out, duration, error
``errors``          error observations, failed model calls, runs that ended in ``error``,
                    sandboxes that failed to start
``agent_states``    the controller's state changes, with the limit a stop reached
``session_costs``   one row per session: calls, tokens, cost
``daily_usage``     per UTC day and model: calls, tokens, cost, latency percentiles

``chronicle_analyst`` (NOLOGIN, created here when the migrating role may create roles; the
embedded server makes it a login with a generated password) gets ``SELECT`` on the views and
nothing else: no table, no function that writes. ``session_state`` is granted by the
migration that creates it.

``chronicle_import`` inserts whole sessions exported from another database verbatim (same
event ids, seqs, times and hashes) after checking, in the database, that each event extends
the session's hash chain and answers what it claims to answer. It is not granted to
``chronicle_app``: inserting events with times of one's choosing is exactly the backdating
that 0003 took away from the application, so only the owner (migrations' login, or the
embedded superuser) imports, as it migrates.

The partial indexes serve the views' time filters (``--since``, days); the action ↔
observation join is served by 0001's ``events_one_observation_per_action``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-14
"""

from app.migrations.helpers import quoted, run, search_path, sql_file

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Actions some service answers with one observation (app.events.AWAITED_KINDS; a test
# compares them): what the tool_calls view lists.
TOOL_KINDS = ("file.edit", "file.read", "file.write", "mcp.call", "run")

ANALYST_ROLE = r"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NULL THEN
        BEGIN
            CREATE ROLE chronicle_analyst NOLOGIN;
        EXCEPTION WHEN insufficient_privilege OR duplicate_object THEN
            RAISE NOTICE 'chronicle_analyst not created (%): create it and grant it the views '
                         '(docs/configuration.md: Database roles)', SQLERRM;
        END;
    END IF;
END
$$;
"""

TOOL_KINDS_FUNCTION = sql_file("functions/chronicle_tool_kinds.sql")

# litellm names a model "<provider>/<model>"; OpenTelemetry's well-known provider names
# differ for a few of them. A name without a prefix gives NULL (litellm infers the provider).
PROVIDER_FUNCTION = sql_file("functions/chronicle_gen_ai_provider.sql")

LLM_CALLS_BY_TIME = r"""
CREATE INDEX events_llm_calls_by_time ON events (created_at) WHERE kind = 'llm.call';
"""

TOOL_CALLS_BY_TIME = r"""
CREATE INDEX events_tool_calls_by_time ON events (created_at) WHERE kind IN ({tool_kinds});
"""

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
       e.payload->>'error' AS error_message
FROM events e
WHERE e.kind = 'llm.call';
"""

TOOL_CALLS_VIEW = r"""
CREATE VIEW tool_calls AS
SELECT a.session_id,
       a.seq,
       a.event_id,
       a.created_at,
       a.cause,
       a.kind AS tool,
       a.payload->>'tool_call_id' AS gen_ai_tool_call_id,
       CASE a.kind WHEN 'run' THEN a.payload->>'command'
                   WHEN 'mcp.call' THEN (a.payload->>'server') || '.' || (a.payload->>'tool')
                   ELSE a.payload->>'path' END AS target,
       CASE WHEN a.kind = 'run' THEN a.payload->>'command' END AS command,
       CASE WHEN a.kind LIKE 'file.%' THEN a.payload->>'path' END AS path,
       a.payload->>'server' AS mcp_server,
       a.payload->>'tool' AS mcp_tool,
       o.seq AS observation_seq,
       o.kind AS observation_kind,
       o.created_at AS observed_at,
       (extract(epoch FROM o.created_at - a.created_at) * 1000)::float8 AS duration_ms,
       (o.payload->>'exit_code')::integer AS exit_code,
       CASE WHEN o.seq IS NOT NULL
            THEN coalesce((o.payload->>'timed_out')::boolean, false) END AS timed_out,
       CASE WHEN o.seq IS NOT NULL
            THEN o.kind = 'error'
              OR coalesce((o.payload->>'timed_out')::boolean, false)
              OR coalesce((o.payload->>'exit_code')::integer, 0) <> 0
              OR coalesce((o.payload->>'is_error')::boolean, false) END AS failed,
       CASE WHEN o.kind = 'error' THEN nullif(o.payload->>'error_type', '') END AS error_type,
       CASE WHEN o.kind = 'error' THEN o.payload->>'message' END AS error_message
FROM events a
LEFT JOIN events o
       ON o.session_id = a.session_id
      AND o.cause = a.seq
      AND o.kind = ANY (chronicle_observation_kinds())
WHERE a.kind = ANY (chronicle_tool_kinds());
"""

ERRORS_VIEW = r"""
CREATE VIEW errors AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.kind,
       CASE e.kind WHEN 'error' THEN nullif(e.payload->>'error_type', '')
                   WHEN 'llm.call' THEN e.payload->>'error_kind' END AS error_type,
       CASE e.kind WHEN 'error' THEN e.payload->>'message'
                   WHEN 'llm.call' THEN e.payload->>'error'
                   WHEN 'agent.state' THEN e.payload->>'reason'
                   WHEN 'runtime.failed' THEN e.payload->>'message' END AS message,
       e.cause,
       c.kind AS cause_kind
FROM events e
LEFT JOIN events c ON c.session_id = e.session_id AND c.seq = e.cause
WHERE e.kind = 'error'
   OR e.kind = 'runtime.failed'
   OR (e.kind = 'llm.call' AND e.payload->>'error' IS NOT NULL)
   OR (e.kind = 'agent.state' AND e.payload->>'state' = 'error');
"""

# The controller's words for a limit (app/agent/controller.py; a session test runs into one).
AGENT_STATES_VIEW = r"""
CREATE VIEW agent_states AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.source,
       e.payload->>'state' AS state,
       e.payload->>'reason' AS reason,
       CASE WHEN e.payload->>'reason' LIKE 'reached the iteration limit%' THEN 'iterations'
            WHEN e.payload->>'reason' LIKE 'reached the cost limit%' THEN 'cost' END
           AS limit_reached
FROM events e
WHERE e.kind = 'agent.state';
"""

# A failed call costs nothing; an answered call without a price is "unpriced", so a known
# total is a lower bound, never a silent zero (as `chronicle sessions` shows it).
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
       coalesce(c.gen_ai_usage_cache_read_input_tokens, 0) AS gen_ai_usage_cache_read_input_tokens,
       c.cost_usd,
       coalesce(c.unpriced_calls, 0) AS unpriced_calls,
       coalesce(c.models, '{}'::text[]) AS models
FROM sessions s
LEFT JOIN events created ON created.session_id = s.id AND created.kind = 'session.created'
LEFT JOIN events last ON last.session_id = s.id AND last.seq = s.last_seq
LEFT JOIN (
    SELECT l.session_id,
           count(*) AS llm_calls,
           count(*) FILTER (WHERE l.error_message IS NOT NULL) AS failed_llm_calls,
           sum(l.gen_ai_usage_input_tokens)::bigint AS gen_ai_usage_input_tokens,
           sum(l.gen_ai_usage_output_tokens)::bigint AS gen_ai_usage_output_tokens,
           sum(l.gen_ai_usage_cache_read_input_tokens)::bigint AS gen_ai_usage_cache_read_input_tokens,
           sum(l.cost_usd) AS cost_usd,
           count(*) FILTER (WHERE l.cost_usd IS NULL AND l.error_message IS NULL) AS unpriced_calls,
           array_agg(DISTINCT l.gen_ai_request_model ORDER BY l.gen_ai_request_model) AS models
    FROM llm_calls l
    GROUP BY l.session_id
) c ON c.session_id = s.id;
"""

DAILY_USAGE_VIEW = r"""
CREATE VIEW daily_usage AS
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
GROUP BY 1, 2, 3;
"""

VIEWS = ("llm_calls", "tool_calls", "errors", "agent_states", "session_costs", "daily_usage")

# Same hashed text as chronicle_append (0003), over the given times; what the database holds
# already must be the very same events, and the rest must extend its chain.
IMPORT_FUNCTION = r"""CREATE FUNCTION chronicle_import(
    p_session    uuid,
    p_seqs       integer[],
    p_event_ids  uuid[],
    p_kinds      text[],
    p_sources    text[],
    p_causes     integer[],
    p_payloads   text[],
    p_versions   smallint[],
    p_created_at timestamptz[],
    p_hashes     bytea[]
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    n              integer := coalesce(cardinality(p_seqs), 0);
    v_actions      text[] := chronicle_action_kinds();
    v_observations text[] := chronicle_observation_kinds();
    v_first        integer;
    v_last         integer;
    v_hash         bytea;
    v_known        integer;
    v_bad          integer;
    v_answered     text;
    i              integer;
BEGIN
    IF n = 0 THEN
        RETURN 0;
    END IF;
    IF cardinality(p_event_ids) IS DISTINCT FROM n OR cardinality(p_kinds) IS DISTINCT FROM n
       OR cardinality(p_sources) IS DISTINCT FROM n OR cardinality(p_causes) IS DISTINCT FROM n
       OR cardinality(p_payloads) IS DISTINCT FROM n OR cardinality(p_versions) IS DISTINCT FROM n
       OR cardinality(p_created_at) IS DISTINCT FROM n OR cardinality(p_hashes) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'every column array of an import must have % elements', n
            USING ERRCODE = 'CR005';
    END IF;
    v_first := p_seqs[1];
    FOR i IN 1 .. n LOOP
        IF p_seqs[i] IS DISTINCT FROM v_first + i - 1 OR v_first < 1 THEN
            RAISE EXCEPTION 'an import must give consecutive seqs from 1 or more, not % at position %',
                coalesce(p_seqs[i]::text, 'NULL'), i USING ERRCODE = 'CR005';
        END IF;
    END LOOP;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF v_first > v_last + 1 THEN
        RAISE EXCEPTION 'session % is at seq %: an import cannot start at seq %', p_session,
            v_last, v_first USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    -- Already recorded: must be the very same events.
    v_known := greatest(least(n, v_last - v_first + 1), 0);
    IF v_known > 0 THEN
        SELECT t.seq INTO v_bad
        FROM unnest(p_seqs[1:v_known], p_event_ids[1:v_known], p_hashes[1:v_known])
             AS t(seq, event_id, hash)
        LEFT JOIN events e ON e.session_id = p_session AND e.seq = t.seq
        WHERE e.event_id IS DISTINCT FROM t.event_id OR e.hash IS DISTINCT FROM t.hash
        ORDER BY t.seq
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'session % holds another event at seq % than the import',
                p_session, v_bad USING ERRCODE = 'CR006', DETAIL = v_bad::text,
                HINT = 'the two databases have different histories of this session';
        END IF;
    END IF;
    IF v_known = n THEN
        RETURN 0;
    END IF;

    FOR i IN v_known + 1 .. n LOOP
        IF p_causes[i] IS NOT NULL AND p_kinds[i] = ANY (v_observations) THEN
            IF p_causes[i] > v_last THEN
                v_answered := CASE WHEN p_causes[i] < p_seqs[i]
                                   THEN p_kinds[p_causes[i] - v_first + 1] END;
            ELSE
                SELECT e.kind INTO v_answered
                FROM events e WHERE e.session_id = p_session AND e.seq = p_causes[i];
                IF NOT FOUND THEN
                    v_answered := NULL;
                END IF;
            END IF;
            IF v_answered IS NOT NULL AND NOT (
                v_answered = ANY (v_actions) OR (p_kinds[i] = 'error' AND v_answered = 'llm.call')
            ) THEN
                RAISE EXCEPTION 'a % event must answer an action of its session, but its cause (seq %) is a % event',
                    p_kinds[i], p_causes[i], v_answered
                    USING ERRCODE = 'CR003', DETAIL = p_causes[i]::text;
            END IF;
        END IF;
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"'
            || to_char(p_created_at[i] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || p_seqs[i]::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        IF v_hash IS DISTINCT FROM p_hashes[i] THEN
            RAISE EXCEPTION 'event % of session % does not match its hash', p_seqs[i], p_session
                USING ERRCODE = 'CR007', DETAIL = p_seqs[i]::text,
                      HINT = 'the file was changed, or it does not continue this database''s copy of the session';
        END IF;
    END LOOP;

    INSERT INTO events
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at,
         hash)
    SELECT p_session, t.seq, t.event_id, t.kind, t.source, t.cause, t.payload::jsonb,
           t.version, t.created_at, t.hash
    FROM unnest(p_seqs[v_known + 1:n], p_event_ids[v_known + 1:n], p_kinds[v_known + 1:n],
                p_sources[v_known + 1:n], p_causes[v_known + 1:n], p_payloads[v_known + 1:n],
                p_versions[v_known + 1:n], p_created_at[v_known + 1:n], p_hashes[v_known + 1:n])
         AS t(seq, event_id, kind, source, cause, payload, version, created_at, hash);

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, p_created_at[1], p_seqs[n], v_hash);
    ELSE
        UPDATE sessions SET last_seq = p_seqs[n], last_hash = v_hash WHERE id = p_session;
    END IF;
    PERFORM pg_notify('chronicle_events', p_session::text || ':' || p_seqs[n]::text);
    RETURN n - v_known;
END
$$;
"""

IMPORT_SIGNATURE = (
    "chronicle_import(uuid, integer[], uuid[], text[], text[], integer[], text[], smallint[], "
    "timestamptz[], bytea[])"
)

OWNERSHIP = rf"""
ALTER FUNCTION chronicle_tool_kinds() OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_gen_ai_provider(text) OWNER TO chronicle_owner;
ALTER FUNCTION {IMPORT_SIGNATURE} OWNER TO chronicle_owner;
ALTER VIEW llm_calls OWNER TO chronicle_owner;
ALTER VIEW tool_calls OWNER TO chronicle_owner;
ALTER VIEW errors OWNER TO chronicle_owner;
ALTER VIEW agent_states OWNER TO chronicle_owner;
ALTER VIEW session_costs OWNER TO chronicle_owner;
ALTER VIEW daily_usage OWNER TO chronicle_owner;
"""

# Functions are executable by PUBLIC unless revoked: the importer is the owner's alone.
IMPORT_PRIVILEGES = rf"""
REVOKE ALL ON FUNCTION {IMPORT_SIGNATURE} FROM PUBLIC;
REVOKE ALL ON llm_calls, tool_calls, errors, agent_states, session_costs, daily_usage FROM PUBLIC;
"""

ANALYST_PRIVILEGES = r"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NULL THEN
        RETURN;
    END IF;
    GRANT SELECT ON llm_calls, tool_calls, errors, agent_states, session_costs, daily_usage
        TO chronicle_analyst;
    IF to_regclass('session_state') IS NOT NULL THEN
        GRANT SELECT ON session_state TO chronicle_analyst;
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO chronicle_analyst', current_database());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO chronicle_analyst', current_schema());
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM chronicle_analyst', current_schema());
    IF has_schema_privilege('chronicle_analyst', current_schema(), 'CREATE') THEN
        RAISE EXCEPTION 'chronicle_analyst can create objects in schema %', current_schema()
            USING HINT = format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC (the default since '
                                'PostgreSQL 15), then migrate again', current_schema());
    END IF;
END
$$;
"""

# -- downgrade ----------------------------------------------------------------------------

REVOKE_ANALYST = r"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NULL THEN
        RETURN;
    END IF;
    REVOKE ALL ON llm_calls, tool_calls, errors, agent_states, session_costs, daily_usage
        FROM chronicle_analyst;
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM chronicle_analyst', current_schema());
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM chronicle_analyst', current_database());
END
$$;
"""

DROP_VIEWS = r"""
DROP VIEW daily_usage;
DROP VIEW session_costs;
DROP VIEW agent_states;
DROP VIEW errors;
DROP VIEW tool_calls;
DROP VIEW llm_calls;
"""

DROP_FUNCTIONS = rf"""
DROP FUNCTION {IMPORT_SIGNATURE};
DROP FUNCTION chronicle_gen_ai_provider(text);
DROP FUNCTION chronicle_tool_kinds();
"""

DROP_INDEXES = r"""
DROP INDEX events_tool_calls_by_time;
DROP INDEX events_llm_calls_by_time;
"""

# The role is cluster-wide: other databases of the cluster may still use it.
DROP_ANALYST_ROLE = r"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        BEGIN
            DROP ROLE chronicle_analyst;
        EXCEPTION WHEN dependent_objects_still_exist OR insufficient_privilege THEN
            RAISE NOTICE 'chronicle_analyst kept: it still has privileges elsewhere (%)', SQLERRM;
        END;
    END IF;
END
$$;
"""


def upgrade() -> None:
    run(ANALYST_ROLE)
    run(TOOL_KINDS_FUNCTION.replace("{tool_kinds}", quoted(TOOL_KINDS)))
    run(PROVIDER_FUNCTION)
    run(LLM_CALLS_BY_TIME)
    run(TOOL_CALLS_BY_TIME.replace("{tool_kinds}", quoted(TOOL_KINDS)))
    run(LLM_CALLS_VIEW)
    run(TOOL_CALLS_VIEW)
    run(ERRORS_VIEW)
    run(AGENT_STATES_VIEW)
    run(SESSION_COSTS_VIEW)
    run(DAILY_USAGE_VIEW)
    run(IMPORT_FUNCTION.replace("{search_path}", search_path()))
    run(OWNERSHIP)
    run(IMPORT_PRIVILEGES)
    run(ANALYST_PRIVILEGES)


def downgrade() -> None:
    run(REVOKE_ANALYST)
    run(DROP_VIEWS)
    run(DROP_FUNCTIONS)
    run(DROP_INDEXES)
    run(DROP_ANALYST_ROLE)
