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
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} SET extra_float_digits = 1 AS $$
-- Replace event p_seq's payload by p_payload, the same payload with parts replaced by their
-- redaction markers (app/events/commitment.py), and append the ``redaction`` event that
-- records it, in one transaction.
-- An event hashed over its payload's tree commitment (chain 2, since migration 0029): refused
-- unless the commitment is unchanged, so the chain still verifies and nothing but removal
-- happened. An event hashed over its payload's text (chain 1, appended before 0029): no
-- commitment covers its parts, so only its whole payload can go, as exactly one marker of the
-- payload's tree digest, with a record that names it (path "", that digest); its hash then
-- stays as it was, proving its place in the chain but not what went (app/events/chain.py).
-- An event whose hash matches neither is refused (the log was changed).
#variable_conflict use_column
DECLARE
    v_new      jsonb;
    v_row      events%ROWTYPE;
    v_prev     bytea;
    v_salt     bytea;
    v_digest   bytea;
    v_head     text;
    v_tail     text;
    v_record   jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT e.* INTO v_row FROM events e WHERE e.session_id = p_session AND e.seq = p_seq;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session % has no event %', p_session, p_seq
            USING ERRCODE = 'CR020', DETAIL = p_seq::text;
    END IF;
    v_new := chronicle_verifiable_payload(v_row.kind, p_payload);
    v_salt := uuid_send(v_row.event_id);
    v_digest := chronicle_tree_digest(v_row.payload, v_salt);
    SELECT e.hash INTO v_prev FROM events e WHERE e.session_id = p_session AND e.seq = p_seq - 1;
    v_prev := coalesce(v_prev, '\x'::bytea);
    -- The hashed document's fields around the payload (chain 1) or its commitment (chain 2).
    v_head := ',"created_at":"'
        || to_char(v_row.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || v_row.event_id::text
        || '","kind":' || to_json(v_row.kind)::text;
    v_tail := ',"schema_version":' || v_row.schema_version::text
        || ',"seq":' || v_row.seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(v_row.source)::text
        || '}';
    IF v_row.hash = sha256(v_prev || convert_to(
        '{"cause":' || coalesce(v_row.cause::text, 'null') || ',"chain":2' || v_head
        || ',"payload_commitment":"' || encode(v_digest, 'hex') || '"' || v_tail, 'UTF8')) THEN
        IF chronicle_tree_digest(v_new, v_salt) IS DISTINCT FROM v_digest THEN
            RAISE EXCEPTION 'the new payload of event % is not its old one with parts redacted', p_seq
                USING ERRCODE = 'CR020', DETAIL = p_seq::text,
                      HINT = 'a redaction may only replace parts with their markers (app/events/commitment.py)';
        END IF;
    ELSIF v_row.hash = sha256(v_prev || convert_to(
        '{"cause":' || coalesce(v_row.cause::text, 'null') || v_head
        || ',"payload":' || chronicle_canonical_json(v_row.payload) || v_tail, 'UTF8')) THEN
        IF v_new IS DISTINCT FROM jsonb_build_object('$redacted', encode(v_digest, 'hex'),
                                                     'was', 'object') THEN
            RAISE EXCEPTION 'event % of session % was recorded before migration 0029: only its whole payload can be redacted',
                p_seq, p_session
                USING ERRCODE = 'CR021', DETAIL = p_seq::text,
                      HINT = 'its hash covers its payload''s text, so no part of it can go alone: '
                             'redact the whole payload (path "", chronicle redact without --field); '
                             'that proves the event''s place in the chain, not what was removed '
                             '(docs/erasure.md)';
        END IF;
        v_record := p_record::jsonb;
        IF v_record ->> 'target_seq' IS DISTINCT FROM p_seq::text
           OR coalesce(v_record ->> 'path', '') <> ''
           OR v_record ->> 'removed' IS DISTINCT FROM encode(v_digest, 'hex')
           OR v_record ->> 'was' IS DISTINCT FROM 'object' THEN
            RAISE EXCEPTION 'the redaction record of event % does not name its whole payload''s removal', p_seq
                USING ERRCODE = 'CR020', DETAIL = p_seq::text,
                      HINT = 'record target_seq, path "", the removed digest and was "object"';
        END IF;
    ELSE
        RAISE EXCEPTION 'event % of session % does not match its hash', p_seq, p_session
            USING ERRCODE = 'CR021', DETAIL = p_seq::text,
                  HINT = 'the log was changed, or its whole payload was redacted already: '
                         'run chronicle verify (docs/erasure.md)';
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
