"""Monthly partitions of ``events`` (issue 28, item 2; docs/scale-out.md "Monthly partitions").

``events`` becomes ``PARTITION BY RANGE (created_at)``, one partition a UTC month, and the
rows of the one table move into their months (``tx`` and ``global_position`` kept, so every
checkpoint and cursor stays where it was). A unique index of a partitioned table must include
the partition key, so each invariant gets its own keeper:

- ``(session_id, seq)`` gapless and unique: the head ``sessions(last_seq, last_hash)``, moved
  under the session's lock, as before; each partition keeps ``UNIQUE (session_id, seq)`` of
  its own as a guard within the month;
- ``event_id`` idempotency: ``event_ids (event_id PRIMARY KEY, session_id, seq, answers)``, one
  row per event, written by every append before its events (unique across sessions, as before);
- one observation per action: ``answers`` is an observation's cause, and
  ``event_ids_one_observation_per_action`` is ``UNIQUE (session_id, answers)``;
- one ``session.created``: a constraint trigger that looks at the session's months under the
  session's lock (it fires once per session); each partition keeps both partial unique
  indexes of 0003 as guards within the month;
- ``global_position`` unique: the identity sequence; the key is ``(global_position,
  created_at)``;
- append-only: the row triggers of the parent apply to every partition; each partition gets
  its own TRUNCATE trigger when it is made (``chronicle_event_partition_keys``).

``sessions`` gets ``first_event_at`` and ``last_event_at`` (the least and greatest
``created_at`` of its events), so a session's read can name the months it spans and
PostgreSQL prunes the others. Partitions are made by ``chronicle_ensure_event_partitions``
(the application may call it), dropped only by ``chronicle_drop_event_partition`` (the
owner's). This revision makes the months from the oldest row's to two after the current one.

Views over ``events`` are dropped with the old table and made again from their definitions,
owners, grants and comments as the database held them.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03
"""

from __future__ import annotations

from typing import NamedTuple

from alembic import op
from app.migrations.helpers import earlier_revision, run, search_path, sql_file

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

COLUMNS = (
    "global_position, session_id, seq, event_id, tx, kind, source, cause, payload, "
    "schema_version, created_at, hash"
)

#: The columns and checks of events as 0001-0025 made them; the key is what changes.
TABLE_BODY = r"""
    global_position bigint      GENERATED ALWAYS AS IDENTITY,
    session_id      uuid        NOT NULL,
    seq             integer     NOT NULL,
    event_id        uuid        NOT NULL,
    tx              xid8        NOT NULL DEFAULT pg_current_xact_id(),
    kind            text        NOT NULL,
    source          text        NOT NULL,
    cause           integer,
    payload         jsonb       NOT NULL,
    schema_version  smallint    NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    hash            bytea       NOT NULL,
    CONSTRAINT events_cause_earlier CHECK (((cause >= 1) AND (cause < seq))),
    CONSTRAINT events_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT events_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_.]*$'::text)),
    CONSTRAINT events_seq_check CHECK ((seq >= 1)),
    CONSTRAINT events_source_check CHECK ((source = ANY (ARRAY['user'::text, 'agent'::text,
                                                            'environment'::text, 'system'::text])))
"""

COMMENT = (
    "COMMENT ON TABLE events IS 'Chronicle event log: append-only, one hash chain per session. "
    "Write through chronicle_append().';"
)

NEW_TABLE = rf"""
CREATE TABLE events ({TABLE_BODY},
    CONSTRAINT events_pkey PRIMARY KEY (global_position, created_at)
) PARTITION BY RANGE (created_at);
ALTER TABLE events OWNER TO chronicle_owner;
{COMMENT}

CREATE TABLE event_ids (
    event_id   uuid    PRIMARY KEY,
    session_id uuid    NOT NULL,
    seq        integer NOT NULL,
    answers    integer
);
ALTER TABLE event_ids OWNER TO chronicle_owner;
GRANT SELECT ON event_ids TO chronicle_app;
COMMENT ON TABLE event_ids IS
    'The keys of events across its monthly partitions: one row per event, written by the append before the event.';
COMMENT ON COLUMN event_ids.answers IS
    'an observation''s cause (the seq of the action it answers), else null: one observation per action';

ALTER TABLE sessions ADD COLUMN first_event_at timestamptz, ADD COLUMN last_event_at timestamptz;
COMMENT ON COLUMN sessions.first_event_at IS
    'the least created_at of its events: a read bounds created_at by it, so PostgreSQL reads only the months the session spans';
COMMENT ON COLUMN sessions.last_event_at IS 'the greatest created_at of its events';
"""

#: Each new function's text (``{search_path}`` left in), and who may call it besides its
#: owner: the application makes months ahead and lists them, never drops one.
FUNCTIONS = (
    (
        "chronicle_event_partitions()",
        sql_file("functions/chronicle_event_partitions.sql"),
        "chronicle_app",
    ),
    (
        "chronicle_event_partition_keys(regclass)",
        sql_file("functions/chronicle_event_partition_keys.sql"),
        None,
    ),
    (
        "chronicle_ensure_event_partitions(date, integer)",
        sql_file("functions/chronicle_ensure_event_partitions.sql"),
        "chronicle_app",
    ),
    (
        "chronicle_drop_event_partition(text)",
        sql_file("functions/chronicle_drop_event_partition.sql"),
        None,
    ),
    (
        "chronicle_one_session_created()",
        sql_file("functions/chronicle_one_session_created.sql"),
        None,
    ),
)

#: The append functions of this revision (CREATE OR REPLACE keeps their owners and grants).
APPEND_FUNCTIONS = (
    sql_file("functions/chronicle_append_one.sql"),
    sql_file("functions/chronicle_append.sql"),
    sql_file("functions/chronicle_import.sql"),
)

CONSTRAINT_TRIGGERS = r"""
CREATE CONSTRAINT TRIGGER events_one_session_created AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.kind = 'session.created')
    EXECUTE FUNCTION chronicle_one_session_created();
"""

#: One observation per action across months: a real key, on the key table.
ANSWERS_KEY = r"""
CREATE UNIQUE INDEX event_ids_one_observation_per_action ON event_ids (session_id, answers)
    WHERE answers IS NOT NULL;
"""

#: The keys of 0001-0025 that the unpartitioned table held (the downgrade makes them again).
OLD_KEYS = r"""
ALTER TABLE ONLY events ADD CONSTRAINT events_pkey PRIMARY KEY (global_position);
ALTER TABLE ONLY events ADD CONSTRAINT events_session_seq UNIQUE (session_id, seq);
ALTER TABLE ONLY events ADD CONSTRAINT events_event_id UNIQUE (event_id);
CREATE UNIQUE INDEX events_one_session_created ON events (session_id)
    WHERE kind = 'session.created';
"""

#: Objects of events this revision makes itself; the others (indexes, triggers, grants) are
#: carried over from the table before as the database held them.
OWN_INDEXES = frozenset(
    {
        "events_pkey",
        "events_session_seq",
        "events_event_id",
        "events_one_observation_per_action",
        "events_one_session_created",
    }
)
OWN_TRIGGERS = frozenset({"events_one_session_created"})


class View(NamedTuple):
    """A view over events, as the database holds it, to be made again after the swap."""

    name: str
    definition: str
    owner: str
    options: list[str]
    grants: list[tuple[str, str]]
    comment: str | None
    column_comments: list[tuple[str, str]]
    depends_on: set[str]


def _rows(sql: str) -> list[tuple]:
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


def _views_over_events() -> list[View]:
    """Every view reading events, directly or through another view, in an order that makes
    each after the views it reads."""
    rows = _rows(
        r"""
        WITH RECURSIVE over(oid) AS (
            SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = 'events'::regclass
              AND r.ev_class <> 'events'::regclass
            UNION
            SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            JOIN over ON d.refobjid = over.oid
            WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> over.oid
        )
        SELECT c.relname, c.relkind, pg_get_viewdef(c.oid), pg_get_userbyid(c.relowner),
               coalesce(c.reloptions, '{}'),
               ARRAY(SELECT ARRAY[CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                       ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                                  a.privilege_type]
                     FROM aclexplode(c.relacl) WITH ORDINALITY a
                     WHERE a.grantee <> c.relowner ORDER BY a.ordinality),
               obj_description(c.oid, 'pg_class'),
               ARRAY(SELECT ARRAY[quote_ident(a.attname), col_description(c.oid, a.attnum)]
                     FROM pg_attribute a
                     WHERE a.attrelid = c.oid AND a.attnum > 0
                       AND col_description(c.oid, a.attnum) IS NOT NULL ORDER BY a.attnum),
               ARRAY(SELECT DISTINCT d.refobjid::regclass::text
                     FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid
                     WHERE r.ev_class = c.oid AND d.classid = 'pg_rewrite'::regclass
                       AND d.refobjid IN (SELECT oid FROM over) AND d.refobjid <> c.oid)
        FROM over JOIN pg_class c ON c.oid = over.oid
        ORDER BY c.relname
        """
    )
    views = []
    for name, kind, definition, owner, options, grants, comment, columns, depends in rows:
        if kind != "v":
            raise RuntimeError(f"{name} reads events and is not a plain view: move it by hand")
        views.append(
            View(
                name,
                definition,
                owner,
                list(options),
                [tuple(g) for g in grants],
                comment,
                [tuple(c) for c in columns],
                set(depends),
            )
        )
    ordered: list[View] = []
    made: set[str] = set()
    while len(ordered) < len(views):
        ready = [v for v in views if v.name not in made and v.depends_on <= made]
        if not ready:
            raise RuntimeError("the views over events depend on each other in a circle")
        for view in ready:
            ordered.append(view)
            made.add(view.name)
    return ordered


def _make_views(views: list[View]) -> None:
    for view in views:
        options = f" WITH ({', '.join(view.options)})" if view.options else ""
        statements = [
            f"CREATE VIEW {view.name}{options} AS {view.definition}",
            f"ALTER VIEW {view.name} OWNER TO {view.owner};",
            *(f"GRANT {privilege} ON {view.name} TO {who};" for who, privilege in view.grants),
        ]
        if view.comment is not None:
            statements.append(f"COMMENT ON VIEW {view.name} IS {_literal(view.comment)};")
        statements += [
            f"COMMENT ON COLUMN {view.name}.{column} IS {_literal(text)};"
            for column, text in view.column_comments
        ]
        run("\n".join(statements))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _carried_over(table: str) -> tuple[list[str], list[str], list[str]]:
    """What ``table`` holds that the new events must hold again: its indexes (other than the
    keys this revision makes), its triggers (other than this revision's) and its grants."""
    indexes = [
        definition.replace(" ON ONLY ", " ON ")
        for name, definition in _rows(
            f"SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '{table}' "
            "AND schemaname = current_schema() ORDER BY indexname"
        )
        if name not in OWN_INDEXES
    ]
    triggers = [
        definition
        for name, definition in _rows(
            f"SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = '{table}'::regclass "
            "AND NOT tgisinternal ORDER BY tgname"
        )
        if name not in OWN_TRIGGERS
    ]
    grants = [
        f"GRANT {privilege} ON events TO {who};"
        for who, privilege in _rows(
            "SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' "
            "ELSE quote_ident(pg_get_userbyid(a.grantee)) END, a.privilege_type "
            f"FROM pg_class c, aclexplode(c.relacl) WITH ORDINALITY a "
            f"WHERE c.oid = '{table}'::regclass AND a.grantee <> c.relowner ORDER BY a.ordinality"
        )
    ]
    return indexes, triggers, grants


def _set_aside(old: str) -> None:
    """Rename events and what is named after it, so the new table can take the names."""
    names = _rows(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'events' "
        "AND schemaname = current_schema()"
    )
    run(
        "\n".join(
            [
                f"ALTER TABLE events RENAME TO {old};",
                f"ALTER SEQUENCE events_global_position_seq RENAME TO {old}_global_position_seq;",
                *(
                    f"ALTER INDEX {name} RENAME TO {old}_{name[len('events_') :]};"
                    for (name,) in names
                ),
            ]
        )
    )


def _functions_sql(path: str) -> str:
    statements = []
    for signature, text, grantee in FUNCTIONS:
        statements.append(text.replace("{search_path}", path))
        statements.append(f"ALTER FUNCTION {signature} OWNER TO chronicle_owner;")
        statements.append(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC;")
        if grantee:
            statements.append(f"GRANT EXECUTE ON FUNCTION {signature} TO {grantee};")
    return "\n".join(statements)


def _append_functions(path: str) -> str:
    return "\n".join(
        text.replace("{search_path}", path).replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
        for text in APPEND_FUNCTIONS
    )


def upgrade() -> None:
    path = search_path()
    old = "events_0025"
    views = _views_over_events()
    indexes, triggers, grants = _carried_over("events")
    _set_aside(old)
    if views:
        run(f"DROP VIEW {', '.join(v.name for v in views)};")
    run(NEW_TABLE)
    # The indexes first: each month made below makes its part of them under their names.
    run("\n".join(f"{statement};" for statement in indexes))
    run(_functions_sql(path))
    # The months from the oldest row's to two after this one, made before the rows move in.
    run(
        f"""
        SELECT chronicle_ensure_event_partitions(first, months)
        FROM (SELECT date_trunc('month', coalesce(min(created_at), now()) AT TIME ZONE 'UTC')::date
                     AS first
              FROM {old}) AS o,
             LATERAL (SELECT (extract(year FROM age(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                                    o.first)) * 12
                              + extract(month FROM age(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                                       o.first)))::integer + 3 AS months) AS m;
        """
    )
    run(
        f"""
        INSERT INTO events ({COLUMNS}) OVERRIDING SYSTEM VALUE SELECT {COLUMNS} FROM {old};
        INSERT INTO event_ids (event_id, session_id, seq, answers)
        SELECT event_id, session_id, seq,
               CASE WHEN kind = ANY (chronicle_observation_kinds()) THEN cause END
        FROM {old};
        UPDATE sessions s SET first_event_at = o.first_at, last_event_at = o.last_at
        FROM (SELECT session_id, min(created_at) AS first_at, max(created_at) AS last_at
              FROM {old} GROUP BY session_id) AS o
        WHERE o.session_id = s.id;
        SELECT setval(pg_get_serial_sequence('events', 'global_position'),
                      (SELECT max(global_position) FROM {old}))
        WHERE EXISTS (SELECT FROM {old});
        """
    )
    # The head exists only with events, and with them its bounds.
    run(
        "UPDATE sessions SET first_event_at = created_at, last_event_at = created_at "
        "WHERE first_event_at IS NULL;"
        "ALTER TABLE sessions ALTER COLUMN first_event_at SET NOT NULL, "
        "ALTER COLUMN last_event_at SET NOT NULL;"
    )
    run("\n".join(f"{statement};" for statement in triggers))
    run(CONSTRAINT_TRIGGERS)
    run(ANSWERS_KEY)
    run("\n".join(grants))
    run(f"DROP TABLE {old};")
    _make_views(views)
    run(_append_functions(path))
    run("ANALYZE events, event_ids, sessions;")


def _functions_before(path: str) -> str:
    """chronicle_append_one and chronicle_append as 0014 made them, chronicle_import as 0006."""
    v14 = earlier_revision("0014_app_role_limits.py")
    v06 = earlier_revision("0006_analytics.py")
    texts = (v14.APPEND_ONE_FUNCTION, v14.APPEND_FUNCTION, v06.IMPORT_FUNCTION)
    return "\n".join(
        text.replace("{search_path}", path).replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
        for text in texts
    )


def downgrade() -> None:
    path = search_path()
    old = "events_0026"
    views = _views_over_events()
    indexes, triggers, grants = _carried_over("events")
    observation_kinds = _rows("SELECT array_to_string(chronicle_observation_kinds(), ',')")[0][0]
    _set_aside(old)
    if views:
        run(f"DROP VIEW {', '.join(v.name for v in views)};")
    run(
        f"""
        CREATE TABLE events ({TABLE_BODY});
        ALTER TABLE events OWNER TO chronicle_owner;
        {COMMENT}
        INSERT INTO events ({COLUMNS}) OVERRIDING SYSTEM VALUE SELECT {COLUMNS} FROM {old};
        SELECT setval(pg_get_serial_sequence('events', 'global_position'),
                      (SELECT max(global_position) FROM {old}))
        WHERE EXISTS (SELECT FROM {old});
        """
    )
    kinds = ", ".join(f"'{kind}'" for kind in observation_kinds.split(","))
    run(
        OLD_KEYS
        + "CREATE UNIQUE INDEX events_one_observation_per_action ON events (session_id, cause)\n"
        + f"    WHERE cause IS NOT NULL AND kind IN ({kinds});"
    )
    run("\n".join(f"{statement};" for statement in (*indexes, *triggers)))
    run("\n".join(grants))
    run(f"DROP TABLE {old};")
    _make_views(views)
    run(_functions_before(path))
    run(
        "DROP FUNCTION "
        + ", ".join(signature for signature, _, _ in reversed(FUNCTIONS))
        + ";\nDROP TABLE event_ids;\n"
        "ALTER TABLE sessions DROP COLUMN first_event_at, DROP COLUMN last_event_at;"
    )
