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
