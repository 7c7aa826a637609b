"""Users and API tokens of the access service, and who owns each session.

``users`` are the people (and programs) the API serves; ``is_admin`` sees every session.
``api_tokens`` holds only the sha256 of each token: the token itself is shown once, when it
is created (``chronicle tokens create``), and a stolen table reveals none. A token is
``api`` (sent as ``Authorization: Bearer``) or ``cookie`` (made by ``POST /api/login`` for a
browser, accepted only from the session cookie and revoked by logging out). A token is
never deleted: revoking sets ``revoked_at``, which keeps who used what auditable.

``session_owners`` says which user created each session through the API: another user gets
404 for it, an admin sees it. Sessions started from the terminal (``chronicle run``) have no
row and are an admin's only. The log stays the record of what happened (every event a user
sent carries the user's name); this table is the index the API filters by.

Owned by ``chronicle_owner`` like every table since 0003. ``chronicle_app`` may read users and
tokens, add them, and update a token's ``last_used_at`` / ``revoked_at`` (column grants), but
delete nothing; it may read and add owners, never change one.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

from app.migrations.helpers import run

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TABLES = r"""
CREATE TABLE users (
    id          uuid        PRIMARY KEY,
    name        text        NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    is_admin    boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE users IS 'People and programs the access service serves (chronicle users add).';

CREATE TABLE api_tokens (
    id            uuid        PRIMARY KEY,
    user_id       uuid        NOT NULL REFERENCES users (id),
    kind          text        NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'cookie')),
    label         text        NOT NULL DEFAULT '',
    hash          bytea       NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id, created_at);
COMMENT ON TABLE api_tokens IS
    'Only the sha256 of each token; the token is shown once when created.';
COMMENT ON COLUMN api_tokens.kind IS
    'api: an Authorization: Bearer token; cookie: a browser login''s session cookie';

CREATE TABLE session_owners (
    session_id  uuid        PRIMARY KEY,
    user_id     uuid        NOT NULL REFERENCES users (id),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_owners_by_user ON session_owners (user_id, created_at DESC);
COMMENT ON TABLE session_owners IS 'The user who created each session through the API.';
"""

OWNERSHIP = r"""
ALTER TABLE users OWNER TO chronicle_owner;
ALTER TABLE api_tokens OWNER TO chronicle_owner;
ALTER TABLE session_owners OWNER TO chronicle_owner;
"""

APP_PRIVILEGES = r"""
REVOKE ALL ON users, api_tokens, session_owners FROM PUBLIC, chronicle_app;
GRANT SELECT, INSERT ON users, api_tokens, session_owners TO chronicle_app;
GRANT UPDATE (last_used_at, revoked_at) ON api_tokens TO chronicle_app;
"""

DROP_TABLES = "DROP TABLE session_owners; DROP TABLE api_tokens; DROP TABLE users;"


def upgrade() -> None:
    run(TABLES)
    run(OWNERSHIP)
    run(APP_PRIVILEGES)


def downgrade() -> None:
    run(DROP_TABLES)
