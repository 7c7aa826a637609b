CREATE VIEW platform_audit AS
SELECT e.seq,
       e.event_id,
       e.created_at,
       e.kind,
       e.payload->>'actor' AS actor,
       e.payload->>'via' AS via,
       e.payload->>'address' AS address,
       coalesce(e.payload->>'owner', e.payload->>'name') AS subject,
       e.payload->>'change' AS change,
       e.payload->>'token_id' AS token_id,
       e.payload->>'login_id' AS login_id,
       e.payload->>'session_id' AS session_id,
       e.payload->>'source_session' AS source_session,
       e.payload AS details
FROM events e
WHERE e.session_id = '00000000-0000-4000-8000-00000000a0d1'::uuid AND e.kind LIKE 'audit.%';
COMMENT ON VIEW platform_audit IS
    'The platform''s audit trail: tokens, logins, user changes, admins'' reads of others'' sessions';
