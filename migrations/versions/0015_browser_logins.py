"""Browser logins of their own, one-time sign-in codes, disabled and removed users.

``browser_logins`` replaces the ``cookie`` rows of ``api_tokens``: a login remembers the API
token it was made with (``token_id``; NULL for a login from a sign-in link made for the user),
and it is live only while that token and its user are (the join in ``authenticate_login``), so
revoking the token, disabling or removing the user ends it on its next request, however the
change was made. ``login_codes`` are the one-time codes of sign-in links: only a sha256 is
kept, a code lives minutes and is used once (``chronicle_exchange_login_code`` marks it used
in the statement that checks it, so two exchanges of one code cannot both win).
``chronicle_peek_login_code`` tells which user a live code signs in as, and leaves it unused:
the page names that user before the person agrees to use the link.

``users.disabled_at`` refuses every token and login of the user until it is enabled again;
``users.removed_at`` is for good (the row stays: sessions and the log still name the user).

Every change goes through the SECURITY DEFINER functions below (owned by ``chronicle_owner``,
executable by ``chronicle_app`` only); ``chronicle_app`` may read the new tables and write
nothing in them directly. A change to a token's ``revoked_at`` or a user's state sends
``NOTIFY chronicle_credentials`` (from triggers, so every path that changes them does), which
tells every API process to forget the Bearer tokens it remembers; an ended browser login sends
it too, so that the live streams opened with it end.

Making a user an admin ends the user's browser logins and voids their unused sign-in codes
(as 0014 revokes the tokens no owner login made): the application's login may make both for
a plain user, and neither may turn into an admin's session by a promotion. The user signs in
again.

Logins of the old kind (``api_tokens`` rows of kind ``cookie``) are revoked here: their
browsers sign in again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from app.migrations.helpers import run, search_path

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

TABLES = r"""
ALTER TABLE users ADD COLUMN disabled_at timestamptz, ADD COLUMN removed_at timestamptz,
    ADD CONSTRAINT users_removed_are_disabled CHECK (removed_at IS NULL OR disabled_at IS NOT NULL);
COMMENT ON COLUMN users.disabled_at IS
    'set: none of the user''s tokens or browser logins works (chronicle users disable)';
COMMENT ON COLUMN users.removed_at IS
    'set: removed for good; tokens revoked, logins ended (chronicle users remove)';

CREATE TABLE browser_logins (
    id            uuid        PRIMARY KEY,
    user_id       uuid        NOT NULL REFERENCES users (id),
    token_id      uuid        REFERENCES api_tokens (id),
    hash          bytea       NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
    address       text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX browser_logins_by_user ON browser_logins (user_id, created_at);
CREATE INDEX browser_logins_by_token ON browser_logins (token_id) WHERE token_id IS NOT NULL;
COMMENT ON TABLE browser_logins IS
    'A browser''s session cookie (its sha256 only); live while its token and user are.';
COMMENT ON COLUMN browser_logins.token_id IS
    'the API token the login was made with (NULL: a sign-in link made for the user)';

CREATE TABLE login_codes (
    id          uuid        PRIMARY KEY,
    user_id     uuid        NOT NULL REFERENCES users (id),
    token_id    uuid        REFERENCES api_tokens (id),
    hash        bytea       NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    login_id    uuid        REFERENCES browser_logins (id)
);
COMMENT ON TABLE login_codes IS
    'One-time codes of sign-in links (sha256 only): minutes to live, used once.';

UPDATE api_tokens SET revoked_at = now() WHERE kind = 'cookie' AND revoked_at IS NULL;
"""

# Whether a user may sign in at all; one place, used by every function below.
LIVE_USER = "u.disabled_at IS NULL AND u.removed_at IS NULL"

BEGIN_LOGIN = r"""
CREATE FUNCTION chronicle_begin_login(
    p_token_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision,
    p_address text
) RETURNS TABLE (login_id uuid, user_id uuid, name text, is_admin boolean,
                 token_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    v_user uuid;
    v_token uuid;
    v_expires timestamptz;
BEGIN
    SELECT t.user_id, t.id, least(now() + make_interval(secs => p_hours * 3600), t.expires_at)
    INTO v_user, v_token, v_expires
    FROM api_tokens t JOIN users u ON u.id = t.user_id
    WHERE t.hash = p_token_hash AND t.kind = 'api' AND t.revoked_at IS NULL
      AND (t.expires_at IS NULL OR t.expires_at > now()) AND {live_user};
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;
"""

CREATE_LOGIN_CODE = r"""
CREATE FUNCTION chronicle_create_login_code(
    p_user uuid, p_token uuid, p_code uuid, p_code_hash bytea, p_minutes double precision
) RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_expires timestamptz := now() + make_interval(secs => p_minutes * 60);
    v_admin boolean;
BEGIN
    -- FOR SHARE: a promotion (or a disable) not committed yet is waited for, then read.
    SELECT u.is_admin INTO v_admin FROM users u WHERE u.id = p_user AND {live_user} FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user is disabled' USING ERRCODE = 'CR010';
    END IF;
    -- A link signs in as the user: for an admin, only what may make an admin's token may
    -- make one (the owner's login, as 0014 has it for tokens), never the application's.
    IF v_admin AND NOT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'only the database owner''s login may make a sign-in link for an admin'
            USING ERRCODE = 'CR015';
    END IF;
    IF p_token IS NOT NULL THEN
        PERFORM 1 FROM api_tokens t WHERE t.id = p_token AND t.user_id = p_user
            AND t.kind = 'api' AND t.revoked_at IS NULL;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no such live token of this user' USING ERRCODE = 'CR010';
        END IF;
    END IF;
    INSERT INTO login_codes (id, user_id, token_id, hash, expires_at)
    VALUES (p_code, p_user, p_token, p_code_hash, v_expires);
    RETURN v_expires;
END
$$;
"""

EXCHANGE_LOGIN_CODE = r"""
CREATE FUNCTION chronicle_exchange_login_code(
    p_code_hash bytea, p_login uuid, p_login_hash bytea, p_hours double precision,
    p_address text
) RETURNS TABLE (login_id uuid, user_id uuid, name text, is_admin boolean,
                 token_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    v_code uuid;
    v_user uuid;
    v_token uuid;
    v_expires timestamptz := now() + make_interval(secs => p_hours * 3600);
BEGIN
    UPDATE login_codes c SET used_at = now()
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now()
    RETURNING c.id, c.user_id, c.token_id INTO v_code, v_user, v_token;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM users u WHERE u.id = v_user AND {live_user};
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_token IS NOT NULL THEN
        SELECT least(v_expires, t.expires_at) INTO v_expires FROM api_tokens t
        WHERE t.id = v_token AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    INSERT INTO browser_logins (id, user_id, token_id, hash, address, expires_at)
    VALUES (p_login, v_user, v_token, p_login_hash, left(coalesce(p_address, ''), 200), v_expires);
    UPDATE login_codes c SET login_id = p_login WHERE c.id = v_code;
    RETURN QUERY SELECT p_login, u.id, u.name, u.is_admin, v_token, v_expires
                 FROM users u WHERE u.id = v_user;
END
$$;
"""

# Reads, never writes: the page asks whom a link signs in as before the person agrees. The
# same liveness as the exchange (an unused, unexpired code of a live user and token), so a
# link the page names is one the exchange would honour.
PEEK_LOGIN_CODE = r"""
CREATE FUNCTION chronicle_peek_login_code(p_code_hash bytea)
RETURNS TABLE (name text, is_admin boolean, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {search_path} AS $$
    SELECT u.name, u.is_admin, c.expires_at
    FROM login_codes c JOIN users u ON u.id = c.user_id
    LEFT JOIN api_tokens t ON t.id = c.token_id
    WHERE c.hash = p_code_hash AND c.used_at IS NULL AND c.expires_at > now() AND {live_user}
      AND (c.token_id IS NULL OR (t.revoked_at IS NULL
                                  AND (t.expires_at IS NULL OR t.expires_at > now())));
$$;
"""

TOUCH_LOGIN = r"""
CREATE FUNCTION chronicle_touch_login(p_login uuid, p_resolution double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = {search_path} AS $$
    UPDATE browser_logins SET last_used_at = now()
    WHERE id = p_login AND (last_used_at IS NULL
                            OR last_used_at < now() - make_interval(secs => p_resolution));
$$;
"""

# p_login NULL: every live login of the user.
END_LOGINS = r"""
CREATE FUNCTION chronicle_end_logins(p_user uuid, p_login uuid) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_count integer;
BEGIN
    UPDATE browser_logins l SET ended_at = now()
    WHERE l.user_id = p_user AND (p_login IS NULL OR l.id = p_login) AND l.ended_at IS NULL
      AND l.expires_at > now();
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
"""

# p_state: 'disabled', 'enabled', 'removed', 'admin' or 'member'. Returns false when the user
# was already in that state; raises when there is no such user, or it is removed. Only an
# owner login's (`chronicle users` connects with it; the API never changes a user's state): the
# application's login would otherwise re-enable a user the operator disabled, or disable,
# demote and remove every admin for good.
SET_USER_STATE = r"""
CREATE FUNCTION chronicle_set_user_state(p_user uuid, p_state text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    IF NOT chronicle_owner_login() THEN
        RAISE EXCEPTION 'only the database owner''s login may change a user''s state (%)', p_state
            USING ERRCODE = 'CR015',
                  HINT = 'run `chronicle users` with the owner''s database URL '
                         '(CHRONICLE_OWNER_DATABASE_URL), not the application''s';
    END IF;
    PERFORM 1 FROM users u WHERE u.id = p_user AND u.removed_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such user, or the user was removed' USING ERRCODE = 'CR010';
    END IF;
    IF p_state = 'disabled' THEN
        UPDATE users SET disabled_at = now() WHERE id = p_user AND disabled_at IS NULL;
        IF NOT FOUND THEN RETURN false; END IF;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
    ELSIF p_state = 'enabled' THEN
        UPDATE users SET disabled_at = NULL WHERE id = p_user AND disabled_at IS NOT NULL;
        IF NOT FOUND THEN RETURN false; END IF;
    ELSIF p_state = 'removed' THEN
        UPDATE users SET removed_at = now(), disabled_at = coalesce(disabled_at, now())
        WHERE id = p_user;
        UPDATE api_tokens SET revoked_at = now() WHERE user_id = p_user AND revoked_at IS NULL;
        UPDATE browser_logins SET ended_at = now() WHERE user_id = p_user AND ended_at IS NULL;
        UPDATE login_codes SET used_at = now() WHERE user_id = p_user AND used_at IS NULL;
    ELSIF p_state IN ('admin', 'member') THEN
        UPDATE users SET is_admin = (p_state = 'admin')
        WHERE id = p_user AND is_admin <> (p_state = 'admin');
        IF NOT FOUND THEN RETURN false; END IF;
    ELSE
        RAISE EXCEPTION 'a user state is disabled, enabled, removed, admin or member, not %',
            p_state USING ERRCODE = 'CR010';
    END IF;
    RETURN true;
END
$$;
"""

# Every API process listens: any of these changes makes it forget the tokens it remembers.
CREDENTIAL_TRIGGERS = r"""
CREATE FUNCTION chronicle_credentials_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    PERFORM pg_notify('chronicle_credentials', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
CREATE TRIGGER api_tokens_revoked AFTER UPDATE OF revoked_at, expires_at ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
CREATE TRIGGER users_changed AFTER UPDATE OF is_admin, disabled_at, removed_at ON users
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
CREATE TRIGGER browser_logins_ended AFTER UPDATE OF ended_at ON browser_logins
    FOR EACH STATEMENT EXECUTE FUNCTION chronicle_credentials_changed();
"""

# As 0014's chronicle_promotion_revokes_tokens, for what this revision adds.
PROMOTION_ENDS_LOGINS = r"""
CREATE FUNCTION chronicle_promotion_ends_logins() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    UPDATE browser_logins SET ended_at = now() WHERE user_id = NEW.id AND ended_at IS NULL;
    UPDATE login_codes SET used_at = now() WHERE user_id = NEW.id AND used_at IS NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER users_promotion_ends_logins AFTER UPDATE OF is_admin ON users
    FOR EACH ROW WHEN (NEW.is_admin AND NOT OLD.is_admin)
    EXECUTE FUNCTION chronicle_promotion_ends_logins();
"""

FUNCTIONS = (
    "chronicle_begin_login(bytea, uuid, bytea, double precision, text)",
    "chronicle_create_login_code(uuid, uuid, uuid, bytea, double precision)",
    "chronicle_exchange_login_code(bytea, uuid, bytea, double precision, text)",
    "chronicle_peek_login_code(bytea)",
    "chronicle_touch_login(uuid, double precision)",
    "chronicle_end_logins(uuid, uuid)",
    "chronicle_set_user_state(uuid, text)",
)

OWNERSHIP = "\n".join(
    [
        "ALTER TABLE browser_logins OWNER TO chronicle_owner;",
        "ALTER TABLE login_codes OWNER TO chronicle_owner;",
        "ALTER FUNCTION chronicle_credentials_changed() OWNER TO chronicle_owner;",
        "ALTER FUNCTION chronicle_promotion_ends_logins() OWNER TO chronicle_owner;",
        *(f"ALTER FUNCTION {f} OWNER TO chronicle_owner;" for f in FUNCTIONS),
    ]
)

# The codes' table is not even readable: nothing but the exchange and the peek need it.
APP_PRIVILEGES = "\n".join(
    [
        "REVOKE ALL ON browser_logins, login_codes FROM PUBLIC, chronicle_app;",
        "GRANT SELECT ON browser_logins TO chronicle_app;",
        "REVOKE ALL ON FUNCTION chronicle_credentials_changed() FROM PUBLIC;",
        "REVOKE ALL ON FUNCTION chronicle_promotion_ends_logins() FROM PUBLIC;",
        *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC;" for f in FUNCTIONS),
        *(f"GRANT EXECUTE ON FUNCTION {f} TO chronicle_app;" for f in FUNCTIONS),
    ]
)

DROP = "\n".join(
    [
        "DROP TRIGGER browser_logins_ended ON browser_logins;",
        "DROP TRIGGER users_changed ON users;",
        "DROP TRIGGER api_tokens_revoked ON api_tokens;",
        "DROP FUNCTION chronicle_credentials_changed();",
        "DROP TRIGGER users_promotion_ends_logins ON users;",
        "DROP FUNCTION chronicle_promotion_ends_logins();",
        *(f"DROP FUNCTION {f};" for f in FUNCTIONS),
        "DROP TABLE login_codes;",
        "DROP TABLE browser_logins;",
        "ALTER TABLE users DROP CONSTRAINT users_removed_are_disabled, "
        "DROP COLUMN removed_at, DROP COLUMN disabled_at;",
    ]
)


def upgrade() -> None:
    path = search_path()
    run(TABLES)
    for function in (
        BEGIN_LOGIN,
        CREATE_LOGIN_CODE,
        EXCHANGE_LOGIN_CODE,
        PEEK_LOGIN_CODE,
        TOUCH_LOGIN,
        END_LOGINS,
        SET_USER_STATE,
        CREDENTIAL_TRIGGERS,
        PROMOTION_ENDS_LOGINS,
    ):
        run(function.replace("{search_path}", path).replace("{live_user}", LIVE_USER))
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    run(DROP)
