"""The platform's own audit trail: the ``platform_audit`` view, and the log kept out of session views.

Token creation and revocation, logins and logouts, user changes and admins' reads, forks
and replays of other users' sessions are ``audit.*`` events of one stream of the events
table, ``00000000-0000-4000-8000-00000000a0d1`` (app/events/platform_audit.py): the same
append functions, hash chain, ``verify`` and anchors as every session, so this migration
adds no table and no writer. It adds:

- ``platform_audit``: one row per audit event (who, through what, from which address, and
  the fields the auditor filters by), for ``chronicle_analyst`` like every view;
- a rule of the events table: the log takes only its own ``session.created`` (its fixed
  event id, marked ``platform_log``) first and ``audit.*`` records after it, whoever appends. Else a login
  in ``chronicle_app`` could start the log before the platform's first record with a
  ``session.created`` of its own (unmarked: ``chronicle resume`` of the log would then run an
  agent into it), or append any other kind to it;
- ``session_costs`` without the platform log: it is a stream, not a session (the
  ``session_state`` projection leaves it out in code; the other views select kinds it
  never holds).

The view is owned by ``chronicle_owner`` and granted to the analyst (not to the
application, which reads the log through the store); 0003 and 0006 ask it of every view.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from app.migrations.helpers import earlier_revision, run, search_path, sql_file

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

#: app.events.platform_audit.PLATFORM_LOG_ID (a test compares them).
PLATFORM_LOG_ID = "00000000-0000-4000-8000-00000000a0d1"
#: app.events.platform_audit.PLATFORM_LOG_CREATED_ID: the log's session.created.
PLATFORM_LOG_CREATED_ID = "00000000-0000-4000-8000-00000000a0d2"

# A trigger, not a check in the append functions: chronicle_import writes events too.
PLATFORM_LOG_KINDS = r"""
CREATE FUNCTION chronicle_platform_log_kinds() RETURNS trigger
LANGUAGE plpgsql SET search_path = {search_path} AS $$
BEGIN
    -- Its session.created again, later: a re-sent append, which the event id's uniqueness
    -- refuses as such (so seq 1 is the only one there is).
    IF (NEW.kind LIKE 'audit.%' AND NEW.seq > 1) OR (NEW.kind = 'session.created'
            AND NEW.event_id = '00000000-0000-4000-8000-00000000a0d2'::uuid
            AND NEW.payload->'config'->'platform_log' = 'true'::jsonb) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the platform''s audit log takes only audit records, not %', NEW.kind
        USING ERRCODE = 'CR014',
              HINT = 'the platform log''s session.created is the platform''s own (its fixed '
                     'event id, marked platform_log)';
END
$$;
ALTER FUNCTION chronicle_platform_log_kinds() OWNER TO chronicle_owner;
REVOKE ALL ON FUNCTION chronicle_platform_log_kinds() FROM PUBLIC;
CREATE TRIGGER events_platform_log_kinds BEFORE INSERT ON events
    FOR EACH ROW WHEN (NEW.session_id = '00000000-0000-4000-8000-00000000a0d1'::uuid)
    EXECUTE FUNCTION chronicle_platform_log_kinds();
"""


PRIVILEGES = r"""
ALTER VIEW platform_audit OWNER TO chronicle_owner;
ALTER VIEW session_costs OWNER TO chronicle_owner;
REVOKE ALL ON platform_audit FROM PUBLIC, chronicle_app;
DO $$
BEGIN
    IF to_regrole('chronicle_analyst') IS NOT NULL THEN
        GRANT SELECT ON platform_audit, session_costs TO chronicle_analyst;
    END IF;
END
$$;
"""

SESSION_COSTS_END = ") c ON c.session_id = s.id;"


def _session_costs_0008() -> str:
    view: str = earlier_revision("0008_replays_are_not_spend.py").SESSION_COSTS_VIEW
    assert view.rstrip().endswith(SESSION_COSTS_END), "0008's session_costs changed shape"
    return view


def upgrade() -> None:
    narrowed = _session_costs_0008().rstrip().removesuffix(";")
    run(f"{narrowed}\nWHERE s.id <> '{PLATFORM_LOG_ID}'::uuid;")
    run(sql_file("views/platform_audit.sql"))
    run(PRIVILEGES)
    run(PLATFORM_LOG_KINDS.replace("{search_path}", search_path()))


def downgrade() -> None:
    # The audit events stay in the log (it is append-only); only the view goes.
    run("DROP TRIGGER events_platform_log_kinds ON events;")
    run("DROP FUNCTION chronicle_platform_log_kinds();")
    run("DROP VIEW platform_audit;")
    run(_session_costs_0008())
