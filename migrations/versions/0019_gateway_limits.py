"""Limits on external agents' gateway calls: each user's limits, and what each scope used.

Issue 24, item 5 (app/external/limits.py, docs/gateway.md "Limits"). ``gateway_user_limits``
holds the limits an admin sets for a user (``chronicle users limits``); a column left NULL
takes the deployment's default (``gateway_limits.user``). The application's login may only
read it: the CLI writes it through the database owner's login, so an agent's server cannot
lift its own user's cap.

``gateway_usage`` is what one scope (a user, a session) has used since its limits began
counting: calls made, their recorded cost, and its rate bucket. The gateway reserves a call
by locking the scope's rows (``SELECT ... FOR UPDATE``, the session's then the user's),
deciding, and counting it, in one transaction: concurrent calls of one session, on any
number of API processes, are counted one after the other and never pass a call cap. The
cost is added when the call is over. ``refused`` counts refusals (the log has each one too).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

from __future__ import annotations

from app.migrations.helpers import run

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

TABLES = r"""
CREATE TABLE gateway_user_limits (
    user_id          uuid             PRIMARY KEY REFERENCES users (id),
    max_cost_usd     double precision CHECK (max_cost_usd >= 0 AND max_cost_usd < 'Infinity'),
    max_calls        bigint           CHECK (max_calls >= 0),
    models           text[],
    rate_per_minute  double precision CHECK (rate_per_minute > 0
                                             AND rate_per_minute < 'Infinity'),
    updated_at       timestamptz      NOT NULL DEFAULT now()
);
COMMENT ON TABLE gateway_user_limits IS
    'Limits an admin set on a user''s gateway calls (NULL: the deployment''s default)';

CREATE TABLE gateway_usage (
    scope        text             NOT NULL CHECK (scope IN ('session', 'user')),
    subject      uuid             NOT NULL,
    calls        bigint           NOT NULL DEFAULT 0 CHECK (calls >= 0),
    cost_usd     double precision NOT NULL DEFAULT 0,
    refused      bigint           NOT NULL DEFAULT 0,
    tokens       double precision,
    refilled_at  double precision NOT NULL DEFAULT 0,
    since        timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, subject)
);
COMMENT ON TABLE gateway_usage IS
    'What a user or a session used of its gateway limits: calls, cost, its rate bucket';
COMMENT ON COLUMN gateway_usage.tokens IS
    'calls the rate bucket holds at refilled_at (epoch seconds); NULL: full';
"""

PRIVILEGES = r"""
ALTER TABLE gateway_user_limits OWNER TO chronicle_owner;
ALTER TABLE gateway_usage OWNER TO chronicle_owner;
REVOKE ALL ON gateway_user_limits, gateway_usage FROM PUBLIC, chronicle_app;
GRANT SELECT ON gateway_user_limits TO chronicle_app;
GRANT SELECT, INSERT, UPDATE (calls, cost_usd, refused, tokens, refilled_at)
    ON gateway_usage TO chronicle_app;
"""

DROP = r"""
DROP TABLE gateway_usage;
DROP TABLE gateway_user_limits;
"""


def upgrade() -> None:
    run(TABLES)
    run(PRIVILEGES)


def downgrade() -> None:
    run(DROP)
