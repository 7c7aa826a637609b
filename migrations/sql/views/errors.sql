CREATE OR REPLACE VIEW errors AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.kind,
       CASE e.kind WHEN 'error' THEN nullif(e.payload->>'error_type', '')
                   WHEN 'llm.call' THEN e.payload->>'error_kind' END AS error_type,
       CASE e.kind WHEN 'error' THEN e.payload->>'message'
                   WHEN 'llm.call' THEN e.payload->>'error'
                   WHEN 'agent.state' THEN e.payload->>'reason'
                   WHEN 'runtime.failed' THEN e.payload->>'message' END AS message,
       e.cause,
       c.kind AS cause_kind,
       e.payload ? 'replayed_from' AS replayed
FROM events e
LEFT JOIN events c ON c.session_id = e.session_id AND c.seq = e.cause
WHERE e.kind = 'error'
   OR e.kind = 'runtime.failed'
   OR (e.kind = 'llm.call' AND e.payload->>'error' IS NOT NULL)
   OR (e.kind = 'agent.state' AND e.payload->>'state' = 'error');
