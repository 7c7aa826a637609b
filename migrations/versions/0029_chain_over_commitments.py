"""The chain covers each payload's tree commitment, so content can be redacted.

Issue 29 (erase what must go, prove the rest). Until now an event's hash covered its payload's
text: no part of it could ever go without ``verify`` reporting tampering. From this revision on
an appended event's hash covers, in place of the payload, its *tree commitment*
(``chronicle_tree_digest``, mirrored by ``app/events/commitment.py``): every node of the
payload's stored form has a digest made from its children's, salted with the event's id, and a
redacted part is replaced by a marker that keeps its digest, so the commitment, and with it the
chain, stays the same (docs/event-store.md, "The hash chain").

The hashed document of such an event ("chain 2") is the old one with ``"chain":2`` and
``"payload_commitment":"<hex>"`` in place of ``"payload"``. Events appended before keep their
hashes ("chain 1"); which formula an event's hash follows is recognised by the one it matches
(import and verify try both), so no column changes and no stored hash is recomputed.

Redaction: ``chronicle_redact`` replaces parts of one chain-2 event's payload with their
markers, refusing anything that changes the payload's commitment, and appends the
``redaction`` event that records it in the same transaction. The events' append-only trigger
(``chronicle_refuse_event_change``) lets exactly that update through, and nothing else.
``chronicle_forget`` deletes a blob or a prompt message once no event names it any more (its
references redacted everywhere); the content tables' triggers let exactly that delete through.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-03
"""

from __future__ import annotations

from app.migrations.helpers import (
    earlier_revision,
    kinds_kept_by,
    render_kind_functions,
    run,
    search_path,
    sql_file,
)

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

TREE_DIGEST = "chronicle_tree_digest(jsonb, bytea)"
REDACT = "chronicle_redact(uuid, integer, text, uuid, text, smallint)"
FORGET = "chronicle_forget(text, bytea)"
EVENT_KINDS = (*kinds_kept_by("0027_session_archives.py", "EVENT_KINDS"), "redaction")

TRIGGER = r"""
DROP TRIGGER events_append_only ON events;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_event_change();
"""
CONTENT_TRIGGERS = r"""
DROP TRIGGER blobs_append_only ON blobs;
CREATE TRIGGER blobs_append_only BEFORE UPDATE OR DELETE ON blobs
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_content_change();
DROP TRIGGER llm_messages_append_only ON llm_messages;
CREATE TRIGGER llm_messages_append_only BEFORE UPDATE OR DELETE ON llm_messages
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_content_change();
"""
CONTENT_TRIGGERS_BEFORE = r"""
DROP TRIGGER blobs_append_only ON blobs;
CREATE TRIGGER blobs_append_only BEFORE DELETE OR UPDATE ON blobs
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();
DROP TRIGGER llm_messages_append_only ON llm_messages;
CREATE TRIGGER llm_messages_append_only BEFORE DELETE OR UPDATE ON llm_messages
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();
DROP FUNCTION chronicle_refuse_content_change();
"""
TRIGGER_BEFORE = r"""
DROP TRIGGER events_append_only ON events;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION chronicle_refuse_change();
DROP FUNCTION chronicle_refuse_event_change();
"""

#: chronicle_redact as this revision made it (0030 redacts events hashed before it too).
REDACT_FUNCTION = r"""
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
"""

#: The events' trigger as this revision made it (0030 lets an erasure through too).
REFUSE_EVENT_CHANGE = r"""
CREATE FUNCTION chronicle_refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
-- events is append-only, with one exception: chronicle_redact replacing parts of one event's
-- payload with their markers (it says which event, for its own transaction, in
-- chronicle.redacting, and has already checked that the payload's commitment is unchanged).
-- Nothing but the payload may change, and only that row.
BEGIN
    IF TG_OP = 'UPDATE'
       AND current_setting('chronicle.redacting', true) = OLD.session_id::text || ':' || OLD.seq::text
       AND (NEW.global_position, NEW.session_id, NEW.seq, NEW.event_id, NEW.tx, NEW.kind,
            NEW.source, NEW.cause, NEW.schema_version, NEW.created_at, NEW.hash)
           IS NOT DISTINCT FROM
           (OLD.global_position, OLD.session_id, OLD.seq, OLD.event_id, OLD.tx, OLD.kind,
            OLD.source, OLD.cause, OLD.schema_version, OLD.created_at, OLD.hash) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one, or redact '
                     'content with chronicle redact';
END
$$;
"""

#: chronicle_import as this revision made it: either chain (0030 also takes a chain-1 event
#: whose whole payload was redacted, with its record).
CHRONICLE_IMPORT_0029 = r"""CREATE FUNCTION chronicle_import(
    p_session    uuid,
    p_seqs       integer[],
    p_event_ids  uuid[],
    p_kinds      text[],
    p_sources    text[],
    p_causes     integer[],
    p_payloads   text[],
    p_versions   smallint[],
    p_created_at timestamptz[],
    p_hashes     bytea[]
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    n              integer := coalesce(cardinality(p_seqs), 0);
    v_actions      text[] := chronicle_action_kinds();
    v_observations text[] := chronicle_observation_kinds();
    v_first        integer;
    v_last         integer;
    v_hash         bytea;
    v_link         bytea;
    v_known        integer;
    v_bad          integer;
    v_answered     text;
    i              integer;
BEGIN
    IF n = 0 THEN
        RETURN 0;
    END IF;
    IF cardinality(p_event_ids) IS DISTINCT FROM n OR cardinality(p_kinds) IS DISTINCT FROM n
       OR cardinality(p_sources) IS DISTINCT FROM n OR cardinality(p_causes) IS DISTINCT FROM n
       OR cardinality(p_payloads) IS DISTINCT FROM n OR cardinality(p_versions) IS DISTINCT FROM n
       OR cardinality(p_created_at) IS DISTINCT FROM n OR cardinality(p_hashes) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'every column array of an import must have % elements', n
            USING ERRCODE = 'CR005';
    END IF;
    v_first := p_seqs[1];
    FOR i IN 1 .. n LOOP
        IF p_seqs[i] IS DISTINCT FROM v_first + i - 1 OR v_first < 1 THEN
            RAISE EXCEPTION 'an import must give consecutive seqs from 1 or more, not % at position %',
                coalesce(p_seqs[i]::text, 'NULL'), i USING ERRCODE = 'CR005';
        END IF;
    END LOOP;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF v_first > v_last + 1 THEN
        RAISE EXCEPTION 'session % is at seq %: an import cannot start at seq %', p_session,
            v_last, v_first USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    -- Already recorded: must be the very same events.
    v_known := greatest(least(n, v_last - v_first + 1), 0);
    IF v_known > 0 THEN
        SELECT t.seq INTO v_bad
        FROM unnest(p_seqs[1:v_known], p_event_ids[1:v_known], p_hashes[1:v_known])
             AS t(seq, event_id, hash)
        LEFT JOIN events e ON e.session_id = p_session AND e.seq = t.seq
        WHERE e.event_id IS DISTINCT FROM t.event_id OR e.hash IS DISTINCT FROM t.hash
        ORDER BY t.seq
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'session % holds another event at seq % than the import',
                p_session, v_bad USING ERRCODE = 'CR006', DETAIL = v_bad::text,
                HINT = 'the two databases have different histories of this session';
        END IF;
    END IF;
    IF v_known = n THEN
        RETURN 0;
    END IF;

    FOR i IN v_known + 1 .. n LOOP
        IF p_causes[i] IS NOT NULL AND p_kinds[i] = ANY (v_observations) THEN
            IF p_causes[i] > v_last THEN
                v_answered := CASE WHEN p_causes[i] < p_seqs[i]
                                   THEN p_kinds[p_causes[i] - v_first + 1] END;
            ELSE
                SELECT e.kind INTO v_answered
                FROM events e WHERE e.session_id = p_session AND e.seq = p_causes[i];
                IF NOT FOUND THEN
                    v_answered := NULL;
                END IF;
            END IF;
            IF v_answered IS NOT NULL AND NOT (
                v_answered = ANY (v_actions) OR (p_kinds[i] = 'error' AND v_answered = 'llm.call')
            ) THEN
                RAISE EXCEPTION 'a % event must answer an action of its session, but its cause (seq %) is a % event',
                    p_kinds[i], p_causes[i], v_answered
                    USING ERRCODE = 'CR003', DETAIL = p_causes[i]::text;
            END IF;
        END IF;
        -- An event's hash is over its payload (chain 1, before migration 0029) or over the
        -- payload's tree commitment (chain 2): whichever it matches.
        v_link := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"'
            || to_char(p_created_at[i] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || p_seqs[i]::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        IF v_link IS DISTINCT FROM p_hashes[i] THEN
            v_link := sha256(v_hash || convert_to(
                '{"cause":' || coalesce(p_causes[i]::text, 'null')
                || ',"chain":2,"created_at":"'
                || to_char(p_created_at[i] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                || '","event_id":"' || p_event_ids[i]::text
                || '","kind":' || to_json(p_kinds[i])::text
                || ',"payload_commitment":"'
                || encode(chronicle_tree_digest(p_payloads[i]::jsonb, uuid_send(p_event_ids[i])), 'hex')
                || '","schema_version":' || p_versions[i]::text
                || ',"seq":' || p_seqs[i]::text
                || ',"session_id":"' || p_session::text
                || '","source":' || to_json(p_sources[i])::text
                || '}', 'UTF8'));
        END IF;
        v_hash := v_link;
        IF v_hash IS DISTINCT FROM p_hashes[i] THEN
            RAISE EXCEPTION 'event % of session % does not match its hash', p_seqs[i], p_session
                USING ERRCODE = 'CR007', DETAIL = p_seqs[i]::text,
                      HINT = 'the file was changed, or it does not continue this database''s copy of the session';
        END IF;
    END LOOP;

    INSERT INTO event_ids (event_id, session_id, seq, answers)
    SELECT t.event_id, p_session, t.seq,
           CASE WHEN t.kind = ANY (v_observations) THEN t.cause END
    FROM unnest(p_event_ids[v_known + 1:n], p_seqs[v_known + 1:n], p_kinds[v_known + 1:n],
                p_causes[v_known + 1:n]) AS t(event_id, seq, kind, cause);

    INSERT INTO events
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at,
         hash)
    SELECT p_session, t.seq, t.event_id, t.kind, t.source, t.cause, t.payload::jsonb,
           t.version, t.created_at, t.hash
    FROM unnest(p_seqs[v_known + 1:n], p_event_ids[v_known + 1:n], p_kinds[v_known + 1:n],
                p_sources[v_known + 1:n], p_causes[v_known + 1:n], p_payloads[v_known + 1:n],
                p_versions[v_known + 1:n], p_created_at[v_known + 1:n], p_hashes[v_known + 1:n])
         AS t(seq, event_id, kind, source, cause, payload, version, created_at, hash);

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash, first_event_at, last_event_at)
        SELECT p_session, p_created_at[1], p_seqs[n], v_hash, min(t.at), max(t.at)
        FROM unnest(p_created_at[v_known + 1:n]) AS t(at);
    ELSE
        UPDATE sessions s SET last_seq = p_seqs[n], last_hash = v_hash,
               first_event_at = least(s.first_event_at, t.first_at),
               last_event_at = greatest(s.last_event_at, t.last_at)
        FROM (SELECT min(a.at) AS first_at, max(a.at) AS last_at
              FROM unnest(p_created_at[v_known + 1:n]) AS a(at)) AS t
        WHERE s.id = p_session;
    END IF;
    PERFORM pg_notify('chronicle_events', p_session::text || ':' || p_seqs[n]::text);
    RETURN n - v_known;
END
$$;
"""

#: The append functions over commitments (CREATE OR REPLACE keeps their owners and grants).
APPEND_FUNCTIONS = (
    sql_file("functions/chronicle_append_one.sql"),
    sql_file("functions/chronicle_append.sql"),
    CHRONICLE_IMPORT_0029,
)


def _replacing(texts: tuple[str, ...], path: str) -> str:
    return "\n".join(
        text.replace("{search_path}", path).replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
        for text in texts
    )


def upgrade() -> None:
    path = search_path()
    run(render_kind_functions(event_kinds=EVENT_KINDS))
    run(sql_file("functions/chronicle_tree_digest.sql"))
    run(REFUSE_EVENT_CHANGE)
    run(sql_file("functions/chronicle_refuse_content_change.sql"))
    run(TRIGGER)
    run(CONTENT_TRIGGERS)
    run(_replacing(APPEND_FUNCTIONS, path))
    run(REDACT_FUNCTION.replace("{search_path}", path))
    run(sql_file("functions/chronicle_forget.sql", search_path=path))
    run(
        f"ALTER FUNCTION {TREE_DIGEST} OWNER TO chronicle_owner;\n"
        f"REVOKE ALL ON FUNCTION {TREE_DIGEST} FROM PUBLIC;\n"
        f"ALTER FUNCTION {REDACT} OWNER TO chronicle_owner;\n"
        f"REVOKE ALL ON FUNCTION {REDACT} FROM PUBLIC;\n"
        f"GRANT EXECUTE ON FUNCTION {REDACT} TO chronicle_app;\n"
        f"ALTER FUNCTION {FORGET} OWNER TO chronicle_owner;\n"
        f"REVOKE ALL ON FUNCTION {FORGET} FROM PUBLIC;\n"
        f"GRANT EXECUTE ON FUNCTION {FORGET} TO chronicle_app;"
    )


def downgrade() -> None:
    before = earlier_revision("0026_event_partitions.py")
    run(f"DROP FUNCTION {FORGET};")
    run(f"DROP FUNCTION {REDACT};")
    run(CONTENT_TRIGGERS_BEFORE)
    run(_replacing(before.APPEND_FUNCTIONS, search_path()))
    run(TRIGGER_BEFORE)
    run(f"DROP FUNCTION {TREE_DIGEST};")
    run(render_kind_functions(event_kinds=kinds_kept_by("0027_session_archives.py", "EVENT_KINDS")))
