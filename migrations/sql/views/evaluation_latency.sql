CREATE VIEW evaluation_latency AS
SELECT s.evaluation_run,
       count(l.seq) AS model_calls,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.latency_ms)::numeric, 1) AS p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY l.latency_ms)::numeric, 1) AS p95_ms
FROM evaluation_sessions s
JOIN llm_calls l ON l.session_id = s.session_id
WHERE NOT l.replayed AND l.error_message IS NULL
GROUP BY s.evaluation_run;
