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
