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

from app.migrations.helpers import run, search_path, sql_file

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

BEGIN_LOGIN = sql_file("functions/chronicle_begin_login.sql")

CREATE_LOGIN_CODE = sql_file("functions/chronicle_create_login_code.sql")

EXCHANGE_LOGIN_CODE = sql_file("functions/chronicle_exchange_login_code.sql")

# Reads, never writes: the page asks whom a link signs in as before the person agrees. The
# same liveness as the exchange (an unused, unexpired code of a live user and token), so a
# link the page names is one the exchange would honour.
PEEK_LOGIN_CODE = sql_file("functions/chronicle_peek_login_code.sql")

TOUCH_LOGIN = sql_file("functions/chronicle_touch_login.sql")

# p_login NULL: every live login of the user.
END_LOGINS = sql_file("functions/chronicle_end_logins.sql")

# p_state: 'disabled', 'enabled', 'removed', 'admin' or 'member'. Returns false when the user
# was already in that state; raises when there is no such user, or it is removed. Only an
# owner login's (`chronicle users` connects with it; the API never changes a user's state): the
# application's login would otherwise re-enable a user the operator disabled, or disable,
# demote and remove every admin for good.
SET_USER_STATE = sql_file("functions/chronicle_set_user_state.sql")

# Every API process listens: any of these changes makes it forget the tokens it remembers.
CREDENTIAL_TRIGGERS = sql_file("functions/chronicle_credentials_changed.sql")

# As 0014's chronicle_promotion_revokes_tokens, for what this revision adds.
PROMOTION_ENDS_LOGINS = sql_file("functions/chronicle_promotion_ends_logins.sql")

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
