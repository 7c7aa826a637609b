"""Evaluation reports in SQL: a view per section of ``chronicle eval report``.

The report reads these views, so every number it prints is queryable by ``chronicle_analyst``
too (docs/analytics.md, "Evaluation runs", documents each with a query):

``evaluation_sessions``    one row per trial (task x epoch) of a run: its newest attempt (a
                           resumed run re-runs a trial that was interrupted mid-flight; the
                           interrupted session stays in the log, superseded), how it ended,
                           the verdicts that count, usage, wall time
``evaluation_tasks``       one row per task of a run: epochs, passed, pass@k / pass^k
``evaluation_summary``     one row per run: trials, passed, pass rate, pass@k, pass^k,
                           resumes and the sessions they re-ran
``evaluation_endings``     how the run's sessions ended (finished, limit, stuck, error,
                           awaiting_input, ...)
``evaluation_usage``       tokens, cost, cost per passed trial, steps, wall time
``evaluation_latency``     model latency p50 / p95 of the calls the run made
``evaluation_tool_errors`` tool calls and the share that failed
``evaluation_replays``     each replay made by ``chronicle eval replay``: matched, or the
                           step and kind of its first divergence

A run's sessions are those whose ``session.created`` config names it (``session_state``'s
``evaluation_run``), replays and forks excepted (they copy their recording's config); a replay
belongs to the replay run its ``replay`` score names (``chronicle eval replay --name``). The
verdicts that count are the newest ``eval.score`` per scorer, of its highest version, as
``chronicle eval score`` documents; a trial passes when it has a verdict (label pass, fail or
error) and all of them pass.

The views read ``session_state``, a projection: ``chronicle eval report`` brings it up to date
first; an analyst reads it as of the projection runner's last pass.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from app.migrations.helpers import run, sql_file

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


# The text this revision sent (0021 makes the view read stuck detection's structured field,
# from migrations/sql/views/evaluation_sessions.sql); kept here, as a revision never changes.
EVALUATION_SESSIONS_VIEW = r"""
CREATE VIEW evaluation_sessions AS
WITH members AS (
    SELECT s.session_id, s.evaluation_run
    FROM session_state s
    WHERE s.evaluation_run IS NOT NULL AND s.replay_of IS NULL AND s.forked_from IS NULL
    UNION ALL
    SELECT s.session_id, tag.evaluation_run
    FROM session_state s
    CROSS JOIN LATERAL (
        SELECT e.payload->>'evaluation_run' AS evaluation_run
        FROM events e
        WHERE e.session_id = s.session_id AND e.kind = 'eval.score'
          AND e.payload->>'name' = 'replay' AND e.payload->>'evaluation_run' IS NOT NULL
        ORDER BY e.seq DESC
        LIMIT 1
    ) tag
    WHERE s.replay_of IS NOT NULL
),
trials AS (
    SELECT m.evaluation_run,
           coalesce(c.payload->'config'->'evaluation_task'->>'id', m.session_id::text) AS task_id,
           coalesce((c.payload->'config'->>'evaluation_epoch')::integer, 1) AS epoch,
           coalesce((c.payload->'config'->>'evaluation_attempt')::integer, 1) AS attempt,
           coalesce((c.payload->'config'->>'evaluation_resume')::integer, 0) AS resume,
           m.session_id
    FROM members m
    JOIN events c ON c.session_id = m.session_id AND c.seq = 1
),
ranked AS (
    SELECT t.*,
           row_number() OVER (PARTITION BY t.evaluation_run, t.task_id, t.epoch
                              ORDER BY t.attempt DESC, t.session_id) AS newest,
           count(*) OVER (PARTITION BY t.evaluation_run, t.task_id, t.epoch) AS attempts
    FROM trials t
)
SELECT r.evaluation_run,
       r.task_id,
       r.epoch,
       r.attempt,
       r.attempts - 1 AS superseded,
       r.resume,
       r.session_id,
       s.replay_of,
       s.created_at,
       s.ended_at,
       s.status,
       CASE WHEN s.status = 'error' AND s.state_reason LIKE 'the agent looks stuck%' THEN 'stuck'
            WHEN s.status = 'awaiting_user_input' THEN 'awaiting_input'
            WHEN s.status = 'working' THEN 'interrupted'
            ELSE s.status END AS ending,
       s.state_reason,
       coalesce(v.verdicts, '{}'::jsonb) AS verdicts,
       coalesce(v.counted > 0 AND v.all_pass, false) AS passed,
       s.steps,
       s.model_calls,
       s.input_tokens,
       s.output_tokens,
       s.cost_usd,
       s.unpriced_calls,
       extract(epoch FROM coalesce(s.ended_at, s.updated_at) - s.created_at)::numeric
           AS wall_seconds
FROM ranked r
JOIN session_state s ON s.session_id = r.session_id
LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(latest.name, latest.label) AS verdicts,
           count(*) FILTER (WHERE latest.label IN ('pass', 'fail', 'error')) AS counted,
           coalesce(bool_and(latest.label = 'pass')
                    FILTER (WHERE latest.label IN ('pass', 'fail', 'error')), false) AS all_pass
    FROM (
        SELECT DISTINCT ON (e.payload->>'name')
               e.payload->>'name' AS name, e.payload->>'score_label' AS label
        FROM events e
        WHERE e.session_id = r.session_id AND e.kind = 'eval.score'
        ORDER BY e.payload->>'name',
                 coalesce((e.payload->>'scorer_version')::integer, 1) DESC,
                 e.seq DESC
    ) latest
) v ON true
WHERE r.newest = 1;
"""


# Calls made to a model only: a replay's served calls took no model time.
EVALUATION_LATENCY_VIEW = r"""
CREATE VIEW evaluation_latency AS
SELECT s.evaluation_run,
       count(l.seq) AS model_calls,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.latency_ms)::numeric, 1) AS p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY l.latency_ms)::numeric, 1) AS p95_ms
FROM evaluation_sessions s
JOIN llm_calls l ON l.session_id = s.session_id
WHERE NOT l.replayed AND l.error_message IS NULL
GROUP BY s.evaluation_run;
"""


VIEWS = {
    "evaluation_sessions": EVALUATION_SESSIONS_VIEW,
    "evaluation_tasks": sql_file("views/evaluation_tasks.sql"),
    "evaluation_summary": sql_file("views/evaluation_summary.sql"),
    "evaluation_endings": sql_file("views/evaluation_endings.sql"),
    "evaluation_usage": sql_file("views/evaluation_usage.sql"),
    "evaluation_latency": EVALUATION_LATENCY_VIEW,
    "evaluation_tool_errors": sql_file("views/evaluation_tool_errors.sql"),
    "evaluation_replays": sql_file("views/evaluation_replays.sql"),
}

NAMES = ", ".join(VIEWS)

# Owned by chronicle_owner as 0003 and 0006 ask; the application reads them for its reports,
# the analyst for queries.
PRIVILEGES = "\n".join(
    [f"ALTER VIEW {name} OWNER TO chronicle_owner;" for name in VIEWS]
    + [f"REVOKE ALL ON {NAMES} FROM PUBLIC;", f"GRANT SELECT ON {NAMES} TO chronicle_app;"]
)

ANALYST_PRIVILEGES = rf"""
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON {NAMES} TO chronicle_analyst;
    END IF;
END
$$;
"""


def upgrade() -> None:
    for view in VIEWS.values():
        run(view)
    run(PRIVILEGES)
    run(ANALYST_PRIVILEGES)


def downgrade() -> None:
    for name in reversed(VIEWS):
        run(f"DROP VIEW {name};")
