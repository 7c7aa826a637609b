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
