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
    run(sql_file("views/llm_calls.sql"))
    run(sql_file("views/session_costs.sql"))
    run(sql_file("views/daily_usage.sql"))
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
