CREATE FUNCTION chronicle_redact(
    p_session   uuid,
    p_seq       integer,
    p_payload   text,
    p_record_id uuid,
    p_record    text,
    p_version   smallint,
    OUT seq             integer,
    OUT global_position bigint,
    OUT tx              xid8,
    OUT created_at      timestamptz,
    OUT hash            bytea
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
-- Replace event p_seq's payload by p_payload, the same payload with parts replaced by their
-- redaction markers (app/events/commitment.py), and append the ``redaction`` event that
-- records it, in one transaction. Refused unless the payload's tree commitment is unchanged
-- (so the chain still verifies and nothing but removal happened) and the event's hash is over
-- that commitment (chain 2): an event appended before migration 0029 is hashed over its text.
#variable_conflict use_column
DECLARE
    v_kind     text;
    v_event_id uuid;
    v_old      jsonb;
    v_new      jsonb;
    v_row      events%ROWTYPE;
    v_prev     bytea;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT e.* INTO v_row FROM events e WHERE e.session_id = p_session AND e.seq = p_seq;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session % has no event %', p_session, p_seq
            USING ERRCODE = 'CR020', DETAIL = p_seq::text;
    END IF;
    v_new := chronicle_verifiable_payload(v_row.kind, p_payload);
    IF chronicle_tree_digest(v_new, uuid_send(v_row.event_id))
       IS DISTINCT FROM chronicle_tree_digest(v_row.payload, uuid_send(v_row.event_id)) THEN
        RAISE EXCEPTION 'the new payload of event % is not its old one with parts redacted', p_seq
            USING ERRCODE = 'CR020', DETAIL = p_seq::text,
                  HINT = 'a redaction may only replace parts with their markers (app/events/commitment.py)';
    END IF;
    SELECT e.hash INTO v_prev FROM events e WHERE e.session_id = p_session AND e.seq = p_seq - 1;
    IF v_row.hash IS DISTINCT FROM sha256(coalesce(v_prev, '\x'::bytea) || convert_to(
        '{"cause":' || coalesce(v_row.cause::text, 'null')
        || ',"chain":2,"created_at":"'
        || to_char(v_row.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || v_row.event_id::text
        || '","kind":' || to_json(v_row.kind)::text
        || ',"payload_commitment":"'
        || encode(chronicle_tree_digest(v_row.payload, uuid_send(v_row.event_id)), 'hex')
        || '","schema_version":' || v_row.schema_version::text
        || ',"seq":' || v_row.seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(v_row.source)::text
        || '}', 'UTF8')) THEN
        RAISE EXCEPTION 'event % of session % is not hashed over its payload''s commitment', p_seq, p_session
            USING ERRCODE = 'CR021', DETAIL = p_seq::text,
                  HINT = 'it was appended before migration 0029 (or the log was changed): its '
                         'content cannot go without its hash going too (docs/erasure.md)';
    END IF;
    PERFORM set_config('chronicle.redacting', p_session::text || ':' || p_seq::text, true);
    UPDATE events e SET payload = v_new WHERE e.session_id = p_session AND e.seq = p_seq;
    PERFORM set_config('chronicle.redacting', '', true);
    SELECT a.seq, a.global_position, a.tx, a.created_at, a.hash
    INTO seq, global_position, tx, created_at, hash
    FROM chronicle_append_one(p_session, NULL, p_record_id, 'redaction', 'user', NULL, p_record,
                              p_version) AS a;
END
$$;
