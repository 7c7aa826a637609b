"""Usage rollups: ``daily_usage`` and ``session_costs`` cost the calls since the last refresh,
not the whole log.

Issue 28 (measure at ten million events: both views read whole were 9.3x and 11.5x slower
at 10M than at 1M, each a scan of every model call's payload). Now, as TimescaleDB's
continuous aggregates with real-time aggregation do, the sums live in tables that a refresh
extends (``chronicle_refresh_usage_rollups``, called by the projection runner), and the views
add the calls committed after the refresh's position as they are, so they stay whole and
current whether a runner is live or not (docs/analytics.md, "How the usage views stay fast"):

- ``usage_calls``: ``llm_calls`` with each call's place in the log (``tx``,
  ``global_position``); ``llm_calls`` is now that view without the two, its columns as they
  were; ``chronicle_usage_tail()``: the calls of it the rollups do not hold yet;
- ``usage_rollup_position``: the one row of how far the rollups count;
- ``usage_rollup_days``: ``daily_usage``'s sums by day, model and provider;
  ``usage_rollup_day_sessions``: which sessions each of those counts (its ``sessions``);
  ``usage_rollup_latencies``: a histogram of latencies in bands 1% wide, each band's calls,
  lowest and highest (its percentiles: exact where a band holds at most two calls, within
  the band otherwise);
- ``usage_rollup_sessions``: ``session_costs``' sums by session, and the seq each session was
  counted up to, so a session archived and imported again (new positions, same seqs) is not
  counted twice, and a session's counts outlive its detached months.

The tables are the owner's and nobody else's: the refresh function is ``SECURITY DEFINER``,
executed by the application; the views read them as their owner.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-03
"""

from __future__ import annotations

from app.migrations.helpers import earlier_revision, run, search_path, sql_file

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

TABLES = r"""
CREATE TABLE usage_rollup_position (
    name text PRIMARY KEY CHECK (name = 'usage'),
    tx xid8 NOT NULL DEFAULT '0',
    global_position bigint NOT NULL DEFAULT 0,
    refreshed_at timestamptz
);
INSERT INTO usage_rollup_position (name) VALUES ('usage');

CREATE TABLE usage_rollup_days (
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text,
    sessions bigint NOT NULL,
    llm_calls bigint NOT NULL,
    failed_llm_calls bigint NOT NULL,
    input_tokens numeric,
    output_tokens numeric,
    cache_read_input_tokens numeric,
    cost_usd float8,
    unpriced_calls bigint NOT NULL,
    cache_creation_input_tokens numeric,
    reasoning_output_tokens numeric,
    unknown_usage_calls bigint NOT NULL,
    CONSTRAINT usage_rollup_days_key
        UNIQUE NULLS NOT DISTINCT (day, gen_ai_request_model, gen_ai_provider_name)
);

CREATE TABLE usage_rollup_day_sessions (
    session_id uuid NOT NULL,
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text,
    CONSTRAINT usage_rollup_day_sessions_key
        UNIQUE NULLS NOT DISTINCT (session_id, day, gen_ai_request_model, gen_ai_provider_name)
);

CREATE TABLE usage_rollup_latencies (
    day date NOT NULL,
    gen_ai_request_model text,
    gen_ai_provider_name text,
    bucket integer NOT NULL,
    calls bigint NOT NULL,
    min_ms float8 NOT NULL,
    max_ms float8 NOT NULL,
    CONSTRAINT usage_rollup_latencies_key
        UNIQUE NULLS NOT DISTINCT (day, gen_ai_request_model, gen_ai_provider_name, bucket)
);

CREATE TABLE usage_rollup_sessions (
    session_id uuid PRIMARY KEY,
    counted_seq bigint NOT NULL,
    llm_calls bigint NOT NULL,
    failed_llm_calls bigint NOT NULL,
    input_tokens numeric,
    output_tokens numeric,
    cache_read_input_tokens numeric,
    cost_usd float8,
    unpriced_calls bigint NOT NULL,
    models text[],
    replayed_llm_calls bigint NOT NULL,
    replayed_cost_usd float8,
    cache_creation_input_tokens numeric,
    reasoning_output_tokens numeric,
    unknown_usage_calls bigint NOT NULL
);
"""

ROLLUP_TABLES = (
    "usage_rollup_position",
    "usage_rollup_days",
    "usage_rollup_day_sessions",
    "usage_rollup_latencies",
    "usage_rollup_sessions",
)

#: What the application may do: refresh, and nothing else of the rollups.
GRANTS = r"""
REVOKE ALL ON usage_rollup_position, usage_rollup_days, usage_rollup_day_sessions,
    usage_rollup_latencies, usage_rollup_sessions FROM PUBLIC;
ALTER VIEW usage_calls OWNER TO chronicle_owner;
REVOKE ALL ON usage_calls FROM PUBLIC;
ALTER FUNCTION chronicle_latency_bucket(float8) OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_latency_percentile(float8, float8[]) OWNER TO chronicle_owner;
ALTER FUNCTION chronicle_refresh_usage_rollups(integer) OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_refresh_usage_rollups(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle_refresh_usage_rollups(integer) TO chronicle_app;
ALTER FUNCTION chronicle_usage_tail() OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_usage_tail() FROM PUBLIC;
-- a function in a view is called with the reader's privileges: whoever reads the views
GRANT EXECUTE ON FUNCTION chronicle_usage_tail() TO chronicle_app;
ALTER VIEW session_costs OWNER TO chronicle_owner;
ALTER VIEW daily_usage OWNER TO chronicle_owner;
REVOKE ALL ON session_costs, daily_usage FROM PUBLIC;
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON session_costs, daily_usage TO chronicle_analyst;
        GRANT EXECUTE ON FUNCTION chronicle_usage_tail() TO chronicle_analyst;
    END IF;
END
$$;
"""

DROP_VIEWS = "DROP VIEW daily_usage;\nDROP VIEW session_costs;\n"


def upgrade() -> None:
    run(TABLES)
    for table in ROLLUP_TABLES:
        run(f"ALTER TABLE {table} OWNER TO chronicle_owner;")
    run(sql_file("views/usage_calls.sql"))
    run(sql_file("views/llm_calls.sql"))
    run(DROP_VIEWS)
    run(sql_file("functions/chronicle_latency_bucket.sql"))
    run(sql_file("functions/chronicle_latency_percentile.sql"))
    path = search_path()
    run(sql_file("functions/chronicle_refresh_usage_rollups.sql", search_path=path))
    run(sql_file("functions/chronicle_usage_tail.sql", search_path=path))
    run(sql_file("views/session_costs.sql"))
    run(sql_file("views/daily_usage.sql"))
    run(GRANTS)


def downgrade() -> None:
    before = earlier_revision("0018_usage_as_sent.py")
    run(DROP_VIEWS)
    run(
        before.LLM_CALLS_VIEW.replace(
            "CREATE VIEW llm_calls", "CREATE OR REPLACE VIEW llm_calls", 1
        )
    )
    run(before.SESSION_COSTS_VIEW)
    run(before.DAILY_USAGE_VIEW)
    run(
        "DROP FUNCTION chronicle_refresh_usage_rollups(integer);\n"
        "DROP FUNCTION chronicle_usage_tail();\n"
        "DROP FUNCTION chronicle_latency_percentile(float8, float8[]);\n"
        "DROP FUNCTION chronicle_latency_bucket(float8);\n"
        "DROP VIEW usage_calls;\n" + "".join(f"DROP TABLE {table};\n" for table in ROLLUP_TABLES)
    )
    run(earlier_revision("0018_usage_as_sent.py").PRIVILEGES)
