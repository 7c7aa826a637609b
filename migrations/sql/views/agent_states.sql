CREATE OR REPLACE VIEW agent_states AS
SELECT e.session_id,
       e.seq,
       e.event_id,
       e.created_at,
       e.source,
       e.payload->>'state' AS state,
       e.payload->>'reason' AS reason,
       -- The limit the state names (0020); a state recorded before it had only its reason's
       -- words (app.events.conversation.limit_reached reads both the same way).
       CASE WHEN e.payload ? 'limit' THEN e.payload->>'limit'
            WHEN e.payload->>'reason' LIKE 'reached the iteration limit%' THEN 'iterations'
            WHEN e.payload->>'reason' LIKE 'reached the cost limit%' THEN 'cost' END
           AS limit_reached
FROM events e
WHERE e.kind = 'agent.state';
