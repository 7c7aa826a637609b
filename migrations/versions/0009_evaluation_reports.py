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

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

#: A stuck agent stops in ``error`` with this reason (app/agent/controller.py).
STUCK_REASON = "the agent looks stuck"

EVALUATION_SESSIONS_VIEW = rf"""
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
       CASE WHEN s.status = 'error' AND s.state_reason LIKE '{STUCK_REASON}%' THEN 'stuck'
            WHEN s.status = 'awaiting_user_input' THEN 'awaiting_input'
            WHEN s.status = 'working' THEN 'interrupted'
            ELSE s.status END AS ending,
       s.state_reason,
       coalesce(v.verdicts, '{{}}'::jsonb) AS verdicts,
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

EVALUATION_TASKS_VIEW = r"""
CREATE VIEW evaluation_tasks AS
SELECT evaluation_run,
       task_id,
       count(*) AS epochs,
       count(*) FILTER (WHERE passed) AS passed,
       bool_or(passed) AS passed_any,
       bool_and(passed) AS passed_all,
       sum(cost_usd) AS cost_usd,
       sum(steps) AS steps,
       array_agg(session_id ORDER BY epoch) AS session_ids
FROM evaluation_sessions
GROUP BY evaluation_run, task_id;
"""

EVALUATION_SUMMARY_VIEW = r"""
CREATE VIEW evaluation_summary AS
WITH trials AS (
    SELECT evaluation_run,
           count(*) AS trials,
           count(*) FILTER (WHERE passed) AS passed,
           max(resume) AS resumes,
           sum(superseded) AS rerun_sessions,
           min(created_at) AS started_at
    FROM evaluation_sessions
    GROUP BY evaluation_run
),
tasks AS (
    SELECT evaluation_run,
           count(*) AS tasks,
           max(epochs) AS epochs,
           count(*) FILTER (WHERE passed_any) AS passed_any,
           count(*) FILTER (WHERE passed_all) AS passed_all
    FROM evaluation_tasks
    GROUP BY evaluation_run
)
SELECT t.evaluation_run,
       t.started_at,
       t.trials,
       t.passed,
       round(t.passed::numeric / t.trials, 4) AS pass_rate,
       k.tasks,
       k.epochs,
       round(k.passed_any::numeric / k.tasks, 4) AS pass_at_k,
       round(k.passed_all::numeric / k.tasks, 4) AS pass_hat_k,
       t.resumes,
       t.rerun_sessions
FROM trials t
JOIN tasks k USING (evaluation_run);
"""

EVALUATION_ENDINGS_VIEW = r"""
CREATE VIEW evaluation_endings AS
SELECT evaluation_run, ending, count(*) AS sessions
FROM evaluation_sessions
GROUP BY evaluation_run, ending;
"""

EVALUATION_USAGE_VIEW = r"""
CREATE VIEW evaluation_usage AS
SELECT evaluation_run,
       sum(model_calls) AS model_calls,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cost_usd) AS cost_usd,
       count(*) FILTER (WHERE cost_usd IS NULL AND unpriced_calls > 0) AS unpriced_sessions,
       sum(cost_usd) / nullif(count(*) FILTER (WHERE passed), 0) AS cost_per_passed,
       sum(steps) AS steps,
       round(avg(steps), 2) AS mean_steps,
       sum(wall_seconds) AS wall_seconds,
       round(avg(wall_seconds), 3) AS mean_wall_seconds
FROM evaluation_sessions
GROUP BY evaluation_run;
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

EVALUATION_TOOL_ERRORS_VIEW = r"""
CREATE VIEW evaluation_tool_errors AS
SELECT s.evaluation_run,
       count(t.seq) AS tool_calls,
       count(t.seq) FILTER (WHERE t.failed) AS failed,
       round((count(t.seq) FILTER (WHERE t.failed))::numeric / nullif(count(t.seq), 0), 4)
           AS error_rate
FROM evaluation_sessions s
JOIN tool_calls t ON t.session_id = s.session_id
WHERE t.observation_seq IS NOT NULL
GROUP BY s.evaluation_run;
"""

EVALUATION_REPLAYS_VIEW = r"""
CREATE VIEW evaluation_replays AS
SELECT s.evaluation_run,
       s.task_id,
       s.epoch,
       s.session_id,
       s.replay_of,
       (r.payload->>'matched')::boolean AS matched,
       (r.payload->'divergence'->>'step')::integer AS divergence_step,
       r.payload->'divergence'->>'kind' AS divergence_kind,
       r.payload->'divergence'->>'summary' AS divergence,
       (r.payload->>'steps_matched')::integer AS steps_matched,
       (r.payload->>'steps_recorded')::integer AS steps_recorded,
       (r.payload->>'model_calls')::integer AS model_calls
FROM evaluation_sessions s
JOIN events r ON r.session_id = s.session_id AND r.kind = 'replay.result'
WHERE s.replay_of IS NOT NULL;
"""

VIEWS = {
    "evaluation_sessions": EVALUATION_SESSIONS_VIEW,
    "evaluation_tasks": EVALUATION_TASKS_VIEW,
    "evaluation_summary": EVALUATION_SUMMARY_VIEW,
    "evaluation_endings": EVALUATION_ENDINGS_VIEW,
    "evaluation_usage": EVALUATION_USAGE_VIEW,
    "evaluation_latency": EVALUATION_LATENCY_VIEW,
    "evaluation_tool_errors": EVALUATION_TOOL_ERRORS_VIEW,
    "evaluation_replays": EVALUATION_REPLAYS_VIEW,
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


def _run(sql: str) -> None:
    # Straight to the driver without parameters, so the SQL is sent as written.
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:
        cursor.execute(sql)


def upgrade() -> None:
    for view in VIEWS.values():
        _run(view)
    _run(PRIVILEGES)
    _run(ANALYST_PRIVILEGES)


def downgrade() -> None:
    for name in reversed(VIEWS):
        _run(f"DROP VIEW {name};")
