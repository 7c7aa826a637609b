"""What chronicle_app may write: users and tokens through definer functions, appends that verify would accept.

**Users and tokens.** ``chronicle_app`` no longer writes ``users`` or ``api_tokens`` itself
(0011 let it INSERT both, so a compromised application could add an admin and a token whose
sha256 it chose). It calls four SECURITY DEFINER functions instead — add a user, create a
token, revoke a token, mark a token used — and two rules live with the tables, as triggers, so
that every writer obeys them, these functions and any later one alike:

- only an *owner login* (a member of ``chronicle_owner``: the migrating role, a superuser, the
  embedded server's superuser that the CLI's ``users`` and ``tokens`` commands use) may make a
  user an admin, by adding one or by changing ``is_admin``;
- only an owner login may make a token for an admin, or change what a token is (its hash, its
  user, its kind, who made it); a revoked token stays revoked;
- a token remembers whether an owner login made it (``by_owner``), and making a user an admin
  revokes the user's tokens that no owner login made: else a token the application's login
  made for a plain user (a hash it chose) would become an admin's the day the owner promotes
  that user (0015 ends the user's browser logins and sign-in codes too).

So the application's login may add plain users, make their tokens, revoke tokens and mark them
used, and no more: whoever holds it can act as a plain user (it reads and appends every session
anyway), never as an admin. It no longer reads a token's hash either (every other column stays
readable): a token is looked up by ``chronicle_token_by_hash``, so a hash is only known to whoever
holds the token, and a later function that takes one as proof (a browser login made with a
token) cannot be handed an admin's hash read from the table.

**Appends verify would accept.** ``chronicle_append_one`` and ``chronicle_append`` (and so
``chronicle_append_many``) refuse, before taking the session's lock, an event whose kind the
protocol does not know and a payload whose text is not the canonical JSON that ``verify`` will
hash the stored value to (app/events/canonical.py: sorted keys, no whitespace, UTF-8, an
integral number without a fraction, any other as Python's shortest ``repr``). Before, a login
in chronicle_app could call them with ``{"b":1, "a":2}``: the chain covered that text, the
table kept the jsonb, and the session failed ``verify`` for ever. ``chronicle_canonical_json``
renders a jsonb value as that text; the payload must be it, byte for byte. Refusals are
``CR014``.

The kinds are the protocol's at this revision (app/events/registry.py):
tests/integration/store/test_verifiable_appends.py holds ``chronicle_event_kinds()`` to the
registry, so a new kind fails that test until a migration replaces the function.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from app.migrations.helpers import earlier_revision, quoted, run, search_path, sql_file

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# The protocol's kinds at this revision (app.events.registry.EVENT_TYPES).
EVENT_KINDS = (
    "agent.condensation",
    "agent.state",
    "audit.fork_started",
    "audit.login",
    "audit.logout",
    "audit.replay_started",
    "audit.session_read",
    "audit.token_created",
    "audit.token_revoked",
    "audit.user_changed",
    "environment.divergence",
    "error",
    "eval.score",
    "file.edit",
    "file.edit.output",
    "file.read",
    "file.read.output",
    "file.write",
    "file.write.output",
    "finish",
    "imported",
    "imported.output",
    "llm.call",
    "mcp.call",
    "mcp.result",
    "message",
    "replay.result",
    "run",
    "run.output",
    "runtime.failed",
    "runtime.ready",
    "runtime.restarted",
    "runtime.starting",
    "session.closed",
    "session.created",
    "think",
    "workspace.diff",
    "workspace.snapshot",
)

KINDS_FUNCTION = sql_file("functions/chronicle_event_kinds.sql")

# A jsonb number as canonical JSON writes what a reader gets back from it. jsonb writes a
# number without a point exactly when it is an integer, which a reader gets back as an int:
# written as it is within 64 bits; beyond, the store's reader (orjson) gets a float back, and
# verify hashes that float's exact integer: the text must be that integer. Any other is a float to a reader: canonical JSON writes it as Python's
# shortest repr, which PostgreSQL's float8 output is too (extra_float_digits >= 1), but for
# its exponent from 1e15 on where repr's starts at 1e16 (chronicle_verifiable_payload sets
# extra_float_digits for it; a plain integer is written inline by chronicle_canonical_json). An integral float, or one that
# becomes 0 or is 2^53 or more (all integral), is written without a fraction by canonical
# JSON, so a text that gave it one is not canonical: NULL, which matches nothing.
CANONICAL_NUMBER = sql_file("functions/chronicle_canonical_number.sql")

# Keys in code point order (UTF-8 bytes in "C" order), "," and ":" without spaces; strings,
# true, false and null as jsonb writes them (the same escapes as Python's json and orjson).
CANONICAL_JSON = sql_file("functions/chronicle_canonical_json.sql")

# What every append function asks of each event before it takes the session's lock; returns
# the payload as jsonb (parsed once). A string_agg above skips a NULL (a number that cannot
# be canonical), so such a payload renders shorter than its text and is refused too.
VERIFIABLE_PAYLOAD = sql_file("functions/chronicle_verifiable_payload.sql")

APPEND_SIGNATURE = (
    "chronicle_append(uuid, integer, uuid[], text[], text[], integer[], text[], smallint[], "
    "boolean)"
)
APPEND_ONE_SIGNATURE = (
    "chronicle_append_one(uuid, integer, uuid, text, text, integer, text, smallint, boolean)"
)
HELPERS = (
    "chronicle_event_kinds()",
    "chronicle_canonical_number(text)",
    "chronicle_canonical_json(jsonb)",
    "chronicle_verifiable_payload(text, text, integer)",
)


#: The append functions as this revision made them (their files in migrations/sql/ hold
#: the current text, which a later revision loads: 0026).
APPEND_ONE_FUNCTION = r"""CREATE OR REPLACE FUNCTION chronicle_append_one(
    p_session   uuid,
    p_expected  integer,
    p_event_id  uuid,
    p_kind      text,
    p_source    text,
    p_cause     integer,
    p_payload   text,
    p_version   smallint,
    p_notify    boolean DEFAULT true,
    OUT seq             integer,
    OUT global_position bigint,
    OUT tx              xid8,
    OUT created_at      timestamptz,
    OUT hash            bytea
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_payload  jsonb;
    v_last     integer;
    v_prev     bytea;
    v_answered text;
BEGIN
    v_payload := chronicle_verifiable_payload(p_kind, p_payload);
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_prev FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_prev := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'session % is at seq %, the writer expected %', p_session, v_last, p_expected
            USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    -- A cause beyond the head is left to events_cause_earlier, as in chronicle_append.
    IF p_cause IS NOT NULL AND p_cause <= v_last
       AND p_kind = ANY (chronicle_observation_kinds()) THEN
        SELECT e.kind INTO v_answered
        FROM events e WHERE e.session_id = p_session AND e.seq = p_cause;
        IF FOUND AND NOT (
            v_answered = ANY (chronicle_action_kinds()) OR (p_kind = 'error' AND v_answered = 'llm.call')
        ) THEN
            RAISE EXCEPTION 'a % event must answer an action of its session, but its cause (seq %) is a % event',
                p_kind, p_cause, v_answered
                USING ERRCODE = 'CR003', DETAIL = p_cause::text,
                      HINT = 'set cause to the seq of the action this observation answers';
        END IF;
    END IF;

    seq := v_last + 1;
    created_at := now();
    hash := sha256(v_prev || convert_to(
        '{"cause":' || coalesce(p_cause::text, 'null')
        || ',"created_at":"' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || p_event_id::text
        || '","kind":' || to_json(p_kind)::text
        || ',"payload":' || p_payload
        || ',"schema_version":' || p_version::text
        || ',"seq":' || seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(p_source)::text
        || '}', 'UTF8'));

    INSERT INTO events AS e
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at, hash)
    VALUES (p_session, seq, p_event_id, p_kind, p_source, p_cause, v_payload, p_version,
            created_at, hash)
    RETURNING e.global_position, e.tx INTO global_position, tx;

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, created_at, 1, hash);
    ELSE
        UPDATE sessions s SET last_seq = seq, last_hash = hash WHERE s.id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || seq::text);
    END IF;
END
$$;
"""

APPEND_FUNCTION = r"""CREATE OR REPLACE FUNCTION chronicle_append(
    p_session   uuid,
    p_expected  integer,
    p_event_ids uuid[],
    p_kinds     text[],
    p_sources   text[],
    p_causes    integer[],
    p_payloads  text[],
    p_versions  smallint[],
    p_notify    boolean DEFAULT true
) RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
                 hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    n              integer := coalesce(cardinality(p_event_ids), 0);
    v_now          timestamptz := now();
    v_ts           text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_actions      text[] := chronicle_action_kinds();
    v_observations text[] := chronicle_observation_kinds();
    v_last         integer;
    v_hash         bytea;
    v_hashes       bytea[] := '{}';
    v_answered     text;
    i              integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_kinds) IS DISTINCT FROM n OR cardinality(p_sources) IS DISTINCT FROM n
       OR cardinality(p_causes) IS DISTINCT FROM n OR cardinality(p_payloads) IS DISTINCT FROM n
       OR cardinality(p_versions) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'every column array of an append must have % elements', n
            USING ERRCODE = 'CR005';
    END IF;
    FOR i IN 1 .. n LOOP
        PERFORM chronicle_verifiable_payload(p_kinds[i], p_payloads[i], i);
    END LOOP;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));

    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'session % is at seq %, the writer expected %', p_session, v_last, p_expected
            USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;

    FOR i IN 1 .. n LOOP
        IF p_causes[i] IS NOT NULL AND p_kinds[i] = ANY (v_observations) THEN
            IF p_causes[i] > v_last THEN
                -- An event earlier in this batch; a later one is left to events_cause_earlier.
                v_answered := CASE WHEN p_causes[i] < v_last + i
                                   THEN p_kinds[p_causes[i] - v_last] END;
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
                    USING ERRCODE = 'CR003', DETAIL = p_causes[i]::text,
                          HINT = 'set cause to the seq of the action this observation answers';
            END IF;
        END IF;
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"' || v_ts
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || (v_last + i)::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        v_hashes[i] := v_hash;
    END LOOP;

    RETURN QUERY
        INSERT INTO events AS e
            (session_id, seq, event_id, kind, source, cause, payload, schema_version,
             created_at, hash)
        SELECT p_session, v_last + t.ord::integer, t.event_id, t.kind, t.source, t.cause,
               t.payload::jsonb, t.version, v_now, t.hash
        FROM unnest(p_event_ids, p_kinds, p_sources, p_causes, p_payloads, p_versions, v_hashes)
             WITH ORDINALITY AS t(event_id, kind, source, cause, payload, version, hash, ord)
        RETURNING e.seq, e.global_position, e.tx, e.created_at, e.hash;

    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, v_now, n, v_hash);
    ELSE
        UPDATE sessions SET last_seq = v_last + n, last_hash = v_hash WHERE id = p_session;
    END IF;

    IF p_notify THEN
        PERFORM pg_notify('chronicle_events', p_session::text || ':' || (v_last + n)::text);
    END IF;
END
$$;
"""


def _replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r} in the earlier function"
    return text.replace(old, new)


def _append_one_body() -> str:
    """0007's chronicle_append_one, as CREATE OR REPLACE (it keeps its owner and grants)."""
    return _replaced(
        earlier_revision("0007_append_one.py").APPEND_ONE_FUNCTION,
        "CREATE FUNCTION",
        "CREATE OR REPLACE FUNCTION",
    )


def _append_body() -> str:
    return earlier_revision("0003_least_privilege.py").APPEND_FUNCTION


# -- users and tokens ---------------------------------------------------------------------------

OWNER_LOGIN = sql_file("functions/chronicle_owner_login.sql")

ADMINS_BY_OWNER = sql_file("functions/chronicle_admins_by_owner.sql")

TOKENS_BY_WHOM = r"""
ALTER TABLE api_tokens ADD COLUMN by_owner boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN api_tokens.by_owner IS
    'made by an owner login (set by a trigger); the others are revoked when the user is promoted';
"""

# An AFTER trigger, so it runs once the BEFORE trigger let the promotion through (only an
# owner login's); SECURITY DEFINER so that an owner login without UPDATE on api_tokens itself
# (a member of chronicle_owner that does not inherit) still revokes.
PROMOTION_REVOKES = sql_file("functions/chronicle_promotion_revokes_tokens.sql")

TOKENS_BY_OWNER = sql_file("functions/chronicle_tokens_by_owner.sql")

ADD_USER = sql_file("functions/chronicle_add_user.sql")

# The token is made by the caller and only its sha256 arrives (the secret never reaches the
# database, its logs included).
CREATE_TOKEN = sql_file("functions/chronicle_create_token.sql")

# p_user NULL: any user's token (an operator's revocation).
REVOKE_TOKEN = sql_file("functions/chronicle_revoke_token.sql")

TOUCH_TOKEN = sql_file("functions/chronicle_touch_token.sql")

# The one way the application finds a token: by the hash of a token it was shown.
TOKEN_BY_HASH = sql_file("functions/chronicle_token_by_hash.sql")

#: Every column of api_tokens but the hash.
READABLE_TOKEN_COLUMNS = (
    "id, user_id, kind, label, created_at, expires_at, revoked_at, last_used_at"
)

USER_FUNCTIONS = (
    "chronicle_add_user(uuid, text, boolean)",
    "chronicle_token_by_hash(bytea)",
    "chronicle_create_token(uuid, uuid, text, text, bytea, timestamptz)",
    "chronicle_revoke_token(uuid, uuid)",
    "chronicle_touch_token(uuid, double precision)",
)
TRIGGER_FUNCTIONS = (
    "chronicle_admins_by_owner()",
    "chronicle_tokens_by_owner()",
    "chronicle_promotion_revokes_tokens()",
)

OWNERSHIP = "\n".join(
    f"ALTER FUNCTION {f} OWNER TO chronicle_owner;"
    for f in (*HELPERS, "chronicle_owner_login()", *TRIGGER_FUNCTIONS, *USER_FUNCTIONS)
)

# Functions are executable by PUBLIC unless revoked. chronicle_owner_login stays PUBLIC: it
# only says what the caller is.
APP_PRIVILEGES = "\n".join(
    [
        "REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON users, api_tokens FROM chronicle_app;",
        "REVOKE SELECT ON api_tokens FROM chronicle_app;",
        f"GRANT SELECT ({READABLE_TOKEN_COLUMNS}) ON api_tokens TO chronicle_app;",
        *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC;" for f in (*HELPERS, *TRIGGER_FUNCTIONS)),
        *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC;" for f in USER_FUNCTIONS),
        *(f"GRANT EXECUTE ON FUNCTION {f} TO chronicle_app;" for f in USER_FUNCTIONS),
    ]
)

# -- downgrade: 0011's privileges, the functions as 0003 and 0007 left them -------------------

DOWNGRADE_PRIVILEGES = rf"""
REVOKE SELECT ({READABLE_TOKEN_COLUMNS}) ON api_tokens FROM chronicle_app;
GRANT SELECT, INSERT ON api_tokens TO chronicle_app;
GRANT INSERT ON users TO chronicle_app;
GRANT UPDATE (last_used_at, revoked_at) ON api_tokens TO chronicle_app;
"""

DROP_USERS_AND_TOKENS = "\n".join(
    [
        "DROP TRIGGER users_promotion_revokes_tokens ON users;",
        "DROP TRIGGER api_tokens_by_owner ON api_tokens;",
        "DROP TRIGGER users_admins_by_owner ON users;",
        *(f"DROP FUNCTION {f};" for f in (*USER_FUNCTIONS, *TRIGGER_FUNCTIONS)),
        "DROP FUNCTION chronicle_owner_login();",
        "ALTER TABLE api_tokens DROP COLUMN by_owner;",
    ]
)

DROP_HELPERS = "\n".join(f"DROP FUNCTION {f};" for f in reversed(HELPERS))


def upgrade() -> None:
    path = search_path()
    run(KINDS_FUNCTION.replace("{event_kinds}", quoted(EVENT_KINDS)))
    run(CANONICAL_NUMBER)
    run(CANONICAL_JSON)
    run(VERIFIABLE_PAYLOAD)
    run(APPEND_ONE_FUNCTION.replace("{search_path}", path))
    run(APPEND_FUNCTION.replace("{search_path}", path))
    run(OWNER_LOGIN)
    run(TOKENS_BY_WHOM)
    for sql in (
        ADMINS_BY_OWNER,
        PROMOTION_REVOKES,
        TOKENS_BY_OWNER,
        ADD_USER,
        TOKEN_BY_HASH,
        CREATE_TOKEN,
        REVOKE_TOKEN,
        TOUCH_TOKEN,
    ):
        run(sql.replace("{search_path}", path))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    path = search_path()
    run(DROP_USERS_AND_TOKENS)
    run(DOWNGRADE_PRIVILEGES)
    run(_append_one_body().replace("{search_path}", path))
    run(_append_body().replace("{search_path}", path))
    run(DROP_HELPERS)
