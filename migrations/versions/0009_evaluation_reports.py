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
    "evaluation_sessions": sql_file("views/evaluation_sessions.sql"),
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
