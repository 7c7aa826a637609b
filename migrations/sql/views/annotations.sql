CREATE VIEW annotations AS
SELECT e.session_id,
       e.seq,
       (e.payload->>'target_seq')::integer AS target_seq,
       e.payload->>'label' AS label,
       coalesce(e.payload->>'comment', '') AS comment,
       ARRAY(SELECT jsonb_array_elements_text(coalesce(e.payload->'tags', '[]'::jsonb))) AS tags,
       e.payload->>'user' AS annotated_by,
       e.created_at,
       e.event_id
FROM events e
WHERE e.kind = 'annotation' AND NOT e.payload ? 'replayed_from';
COMMENT ON VIEW annotations IS
    'People''s labels on sessions (target_seq NULL) and on their events, with comment, tags, who and when';
