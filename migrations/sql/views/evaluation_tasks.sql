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
