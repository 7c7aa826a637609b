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
