CREATE OR REPLACE VIEW tool_calls AS
SELECT a.session_id,
       a.seq,
       a.event_id,
       a.created_at,
       a.cause,
       a.kind AS tool,
       a.payload->>'tool_call_id' AS gen_ai_tool_call_id,
       CASE a.kind WHEN 'run' THEN a.payload->>'command'
                   WHEN 'mcp.call' THEN (a.payload->>'server') || '.' || (a.payload->>'tool')
                   ELSE a.payload->>'path' END AS target,
       CASE WHEN a.kind = 'run' THEN a.payload->>'command' END AS command,
       CASE WHEN a.kind LIKE 'file.%' THEN a.payload->>'path' END AS path,
       a.payload->>'server' AS mcp_server,
       a.payload->>'tool' AS mcp_tool,
       o.seq AS observation_seq,
       o.kind AS observation_kind,
       o.created_at AS observed_at,
       (extract(epoch FROM o.created_at - a.created_at) * 1000)::float8 AS duration_ms,
       (o.payload->>'exit_code')::integer AS exit_code,
       CASE WHEN o.seq IS NOT NULL
            THEN coalesce((o.payload->>'timed_out')::boolean, false) END AS timed_out,
       CASE WHEN o.seq IS NOT NULL
            THEN o.kind = 'error'
              OR coalesce((o.payload->>'timed_out')::boolean, false)
              OR coalesce((o.payload->>'exit_code')::integer, 0) <> 0
              OR coalesce((o.payload->>'is_error')::boolean, false) END AS failed,
       CASE WHEN o.kind = 'error' THEN nullif(o.payload->>'error_type', '') END AS error_type,
       CASE WHEN o.kind = 'error' THEN o.payload->>'message' END AS error_message,
       coalesce(o.payload ? 'replayed_from', false) AS replayed
FROM events a
LEFT JOIN events o
       ON o.session_id = a.session_id
      AND o.cause = a.seq
      AND o.kind = ANY (chronicle_observation_kinds())
WHERE a.kind = ANY (chronicle_tool_kinds());
