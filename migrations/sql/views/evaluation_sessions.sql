CREATE OR REPLACE VIEW evaluation_sessions AS
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
       -- stuck detection's end says so (0021: agent.state's "stuck"); a state recorded before
       -- it had only its reason's words
       CASE WHEN s.status = 'error' AND coalesce((last_state.payload->>'stuck')::boolean,
                                                 s.state_reason LIKE 'the agent looks stuck%')
            THEN 'stuck'
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
    SELECT e.payload
    FROM events e
    WHERE e.session_id = r.session_id AND e.kind = 'agent.state' AND e.source = 'agent'
    ORDER BY e.seq DESC
    LIMIT 1
) last_state ON true
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
