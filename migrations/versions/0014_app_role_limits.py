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

from app.migrations.helpers import earlier_revision, quoted, run, search_path

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

KINDS_FUNCTION = r"""
CREATE FUNCTION chronicle_event_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{event_kinds}]::text[] $$;
"""

# A jsonb number as canonical JSON writes what a reader gets back from it. jsonb writes a
# number without a point exactly when it is an integer, which a reader gets back as an int:
# written as it is within 64 bits; beyond, the store's reader (orjson) gets a float back, and
# verify hashes that float's exact integer: the text must be that integer. Any other is a float to a reader: canonical JSON writes it as Python's
# shortest repr, which PostgreSQL's float8 output is too (extra_float_digits >= 1), but for
# its exponent from 1e15 on where repr's starts at 1e16 (chronicle_verifiable_payload sets
# extra_float_digits for it; a plain integer is written inline by chronicle_canonical_json). An integral float, or one that
# becomes 0 or is 2^53 or more (all integral), is written without a fraction by canonical
# JSON, so a text that gave it one is not canonical: NULL, which matches nothing.
CANONICAL_NUMBER = r"""
CREATE FUNCTION chronicle_canonical_number(p_number text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    v_number numeric;
    v_float  double precision;
    v_text   text;
    v_digits text;
    v_shift  integer;
    v_exact  numeric;
BEGIN
    IF strpos(p_number, '.') = 0 THEN
        IF length(p_number) < 19 THEN
            RETURN p_number;
        END IF;
        v_number := p_number::numeric;
        IF v_number BETWEEN -9223372036854775808 AND 18446744073709551615 THEN
            RETURN p_number;
        END IF;
        IF abs(v_number) > 2::numeric ^ 1024 - 2::numeric ^ 971 THEN
            RETURN NULL;
        END IF;
        v_float := v_number::double precision;
        v_shift := floor(log(2, abs(v_number)))::integer - 53;
        v_exact := (v_float / 2::double precision ^ v_shift)::bigint * 2::numeric ^ v_shift;
        RETURN CASE WHEN v_exact = v_number THEN p_number END;
    END IF;
    v_number := abs(p_number::numeric);
    IF v_number >= 9007199254740992 OR v_number < 2.5e-324 THEN
        RETURN NULL;
    END IF;
    v_float := p_number::double precision;
    IF v_float = trunc(v_float) THEN
        RETURN NULL;
    END IF;
    v_text := v_float::text;
    IF v_text LIKE '%e+15' THEN
        v_digits := replace(split_part(ltrim(v_text, '-'), 'e', 1), '.', '');
        v_text := CASE WHEN v_float < 0 THEN '-' ELSE '' END
                  || left(v_digits, 16) || '.' || substr(v_digits, 17);
    END IF;
    RETURN v_text;
END
$$;
"""

# Keys in code point order (UTF-8 bytes in "C" order), "," and ":" without spaces; strings,
# true, false and null as jsonb writes them (the same escapes as Python's json and orjson).
CANONICAL_JSON = r"""
CREATE FUNCTION chronicle_canonical_json(p_value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        RETURN '{' || coalesce((
            SELECT string_agg(to_json(e.key)::text || ':' || CASE jsonb_typeof(e.value)
                       WHEN 'object' THEN chronicle_canonical_json(e.value)
                       WHEN 'array' THEN chronicle_canonical_json(e.value)
                       WHEN 'number' THEN CASE WHEN strpos(e.value::text, '.') = 0 AND length(e.value::text) < 19
                                                THEN e.value::text
                                                ELSE chronicle_canonical_number(e.value::text) END
                       ELSE e.value::text END, ',' ORDER BY e.key COLLATE "C")
            FROM jsonb_each(p_value) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((
            SELECT string_agg(CASE jsonb_typeof(a.value)
                       WHEN 'object' THEN chronicle_canonical_json(a.value)
                       WHEN 'array' THEN chronicle_canonical_json(a.value)
                       WHEN 'number' THEN CASE WHEN strpos(a.value::text, '.') = 0 AND length(a.value::text) < 19
                                                THEN a.value::text
                                                ELSE chronicle_canonical_number(a.value::text) END
                       ELSE a.value::text END, ',' ORDER BY a.ord)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, ord)), '') || ']';
    WHEN 'number' THEN
        RETURN chronicle_canonical_number(p_value::text);
    ELSE
        RETURN p_value::text;
    END CASE;
END
$$;
"""

# What every append function asks of each event before it takes the session's lock; returns
# the payload as jsonb (parsed once). A string_agg above skips a NULL (a number that cannot
# be canonical), so such a payload renders shorter than its text and is refused too.
VERIFIABLE_PAYLOAD = r"""
CREATE FUNCTION chronicle_verifiable_payload(p_kind text, p_payload text, p_index integer DEFAULT 1)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET extra_float_digits = 1 AS $$
DECLARE
    v_payload jsonb := p_payload::jsonb;
BEGIN
    IF p_kind IS NOT NULL AND NOT (p_kind = ANY (chronicle_event_kinds())) THEN
        RAISE EXCEPTION 'event % has the kind %, which the protocol does not know', p_index, p_kind
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'append only the kinds of app/events (verify could not read the event)';
    END IF;
    IF jsonb_typeof(v_payload) IS DISTINCT FROM 'object' AND v_payload IS NOT NULL THEN
        RAISE EXCEPTION 'event % has a payload that is a JSON %, not an object', p_index,
            jsonb_typeof(v_payload) USING ERRCODE = 'CR014', DETAIL = p_index::text;
    END IF;
    IF chronicle_canonical_json(v_payload) IS DISTINCT FROM p_payload THEN
        RAISE EXCEPTION 'event % has a payload text that is not canonical JSON', p_index
            USING ERRCODE = 'CR014', DETAIL = p_index::text,
                  HINT = 'send the payload as app.events.canonical writes it (sorted keys, no '
                         'whitespace): the chain covers that text, and verify re-hashes the stored value';
    END IF;
    RETURN v_payload;
END
$$;
"""

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

LOCK = "    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));\n"


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


def _checked_append_one() -> str:
    """0007's function, checking its event first and inserting the payload it parsed."""
    body = _append_one_body()
    body = _replaced(body, "DECLARE\n", "DECLARE\n    v_payload  jsonb;\n")
    body = _replaced(
        body, LOCK, "    v_payload := chronicle_verifiable_payload(p_kind, p_payload);\n" + LOCK
    )
    return _replaced(body, "p_payload::jsonb, p_version", "v_payload, p_version")


def _append_body() -> str:
    return earlier_revision("0003_least_privilege.py").APPEND_FUNCTION


def _checked_append() -> str:
    """0003's function, checking every event of the batch first."""
    check = (
        "    FOR i IN 1 .. n LOOP\n"
        "        PERFORM chronicle_verifiable_payload(p_kinds[i], p_payloads[i], i);\n"
        "    END LOOP;\n"
    )
    return _replaced(_append_body(), LOCK, check + LOCK)


# -- users and tokens ---------------------------------------------------------------------------

OWNER_LOGIN = r"""
CREATE FUNCTION chronicle_owner_login() RETURNS boolean
LANGUAGE sql STABLE AS $$ SELECT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') $$;
COMMENT ON FUNCTION chronicle_owner_login() IS
    'Is the login behind this statement (not the definer it runs as) the owner''s?';
"""

ADMINS_BY_OWNER = r"""
CREATE FUNCTION chronicle_admins_by_owner() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    IF NEW.is_admin AND (TG_OP = 'INSERT' OR NOT OLD.is_admin) AND NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may make % an admin', NEW.name
            USING ERRCODE = 'CR015',
                  HINT = 'run the command with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER users_admins_by_owner BEFORE INSERT OR UPDATE OF is_admin ON users
    FOR EACH ROW EXECUTE FUNCTION chronicle_admins_by_owner();
"""

TOKENS_BY_WHOM = r"""
ALTER TABLE api_tokens ADD COLUMN by_owner boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN api_tokens.by_owner IS
    'made by an owner login (set by a trigger); the others are revoked when the user is promoted';
"""

# An AFTER trigger, so it runs once the BEFORE trigger let the promotion through (only an
# owner login's); SECURITY DEFINER so that an owner login without UPDATE on api_tokens itself
# (a member of chronicle_owner that does not inherit) still revokes.
PROMOTION_REVOKES = r"""
CREATE FUNCTION chronicle_promotion_revokes_tokens() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    UPDATE api_tokens SET revoked_at = now()
    WHERE user_id = NEW.id AND revoked_at IS NULL AND NOT by_owner;
    RETURN NULL;
END
$$;
CREATE TRIGGER users_promotion_revokes_tokens AFTER UPDATE OF is_admin ON users
    FOR EACH ROW WHEN (NEW.is_admin AND NOT OLD.is_admin)
    EXECUTE FUNCTION chronicle_promotion_revokes_tokens();
"""

TOKENS_BY_OWNER = r"""
CREATE FUNCTION chronicle_tokens_by_owner() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NOT NULL
       AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'token % is revoked, and stays revoked', OLD.id USING ERRCODE = 'CR015';
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.by_owner := chronicle_owner_login();
    END IF;
    IF chronicle_owner_login() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.hash, NEW.user_id, NEW.kind, NEW.created_at, NEW.by_owner)
       IS DISTINCT FROM (OLD.hash, OLD.user_id, OLD.kind, OLD.created_at, OLD.by_owner) THEN
        RAISE EXCEPTION 'only the database owner''s login may change what token % is', OLD.id
            USING ERRCODE = 'CR015';
    END IF;
    -- FOR SHARE: a promotion not committed yet is waited for and then read, never the user
    -- as it was (its revocation cannot see this row, not committed yet either).
    IF TG_OP = 'INSERT' AND (SELECT u.is_admin FROM users u WHERE u.id = NEW.user_id FOR SHARE) THEN
        RAISE EXCEPTION 'only the database owner''s login may make a token for an admin'
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle tokens create` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER api_tokens_by_owner BEFORE INSERT OR UPDATE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION chronicle_tokens_by_owner();
"""

ADD_USER = r"""
CREATE FUNCTION chronicle_add_user(p_id uuid, p_name text, p_is_admin boolean)
RETURNS TABLE (id uuid, name text, is_admin boolean, created_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    INSERT INTO users AS u (id, name, is_admin) VALUES (p_id, p_name, coalesce(p_is_admin, false))
    RETURNING u.id, u.name, u.is_admin, u.created_at;
$$;
"""

# The token is made by the caller and only its sha256 arrives (the secret never reaches the
# database, its logs included).
CREATE_TOKEN = r"""
CREATE FUNCTION chronicle_create_token(
    p_id uuid, p_user uuid, p_kind text, p_label text, p_hash bytea, p_expires timestamptz
) RETURNS TABLE (id uuid, user_id uuid, user_name text, kind text, label text,
                 created_at timestamptz, expires_at timestamptz, revoked_at timestamptz,
                 last_used_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
BEGIN
    IF octet_length(p_hash) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'a token is kept as its sha256 (32 bytes), not % bytes',
            coalesce(octet_length(p_hash), 0) USING ERRCODE = 'CR005';
    END IF;
    RETURN QUERY
        WITH t AS (
            INSERT INTO api_tokens AS k (id, user_id, kind, label, hash, expires_at)
            VALUES (p_id, p_user, coalesce(p_kind, 'api'), left(coalesce(p_label, ''), 200),
                    p_hash, p_expires)
            RETURNING k.*
        )
        SELECT t.id, t.user_id, u.name, t.kind, t.label, t.created_at, t.expires_at,
               t.revoked_at, t.last_used_at
        FROM t JOIN users u ON u.id = t.user_id;
END
$$;
"""

# p_user NULL: any user's token (an operator's revocation).
REVOKE_TOKEN = r"""
CREATE FUNCTION chronicle_revoke_token(p_token uuid, p_user uuid) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    WITH revoked AS (
        UPDATE api_tokens SET revoked_at = now()
        WHERE id = p_token AND revoked_at IS NULL AND (p_user IS NULL OR user_id = p_user)
        RETURNING id
    )
    SELECT EXISTS (SELECT FROM revoked);
$$;
"""

TOUCH_TOKEN = r"""
CREATE FUNCTION chronicle_touch_token(p_token uuid, p_resolution double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    UPDATE api_tokens SET last_used_at = now()
    WHERE id = p_token AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;
"""

# The one way the application finds a token: by the hash of a token it was shown.
TOKEN_BY_HASH = r"""
CREATE FUNCTION chronicle_token_by_hash(p_hash bytea)
RETURNS TABLE (id uuid, user_id uuid, kind text, expires_at timestamptz, revoked_at timestamptz,
               last_used_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {search_path} AS $$
    SELECT t.id, t.user_id, t.kind, t.expires_at, t.revoked_at, t.last_used_at
    FROM api_tokens t WHERE t.hash = p_hash;
$$;
"""

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
    run(_checked_append_one().replace("{search_path}", path))
    run(_checked_append().replace("{search_path}", path))
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
