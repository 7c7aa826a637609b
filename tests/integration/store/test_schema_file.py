"""migrations/sql/schema.sql is the schema a database migrated from zero has: the revisions
are held to the one file a reader looks at (``./dev schema`` writes it again)."""

from __future__ import annotations

import uuid

import pytest

from app.store import migrate
from app.store.schema_dump import dump_schema, schema_file
from tests.support.postgres import ServerAddress, database_from_template

AGAIN = "the schema differs from migrations/sql/schema.sql: run ./dev schema and read the diff"


def test_migrated_from_zero_is_schema_sql(pg_address: ServerAddress) -> None:
    for url in database_from_template(pg_address, "template1", f"s_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url)
        assert dump_schema(url, pg_address.user) == schema_file().read_text("utf-8"), AGAIN


@pytest.mark.usefixtures("role_settings_changing")
def test_each_downgrade_restores_what_the_revision_before_made(pg_address: ServerAddress) -> None:
    """One database goes up a revision at a time from zero, another down a revision at a
    time from head: at every revision both dump the same schema, and the last step up is
    schema.sql. So each revision, run step by step, makes what it always made."""
    revisions = migrate.revisions()
    up_name, down_name = f"u_{uuid.uuid4().hex[:12]}", f"d_{uuid.uuid4().hex[:12]}"
    for up in database_from_template(pg_address, "template1", up_name):
        going_up = {}
        for revision in revisions:
            migrate.upgrade(up, revision)
            going_up[revision] = dump_schema(up, pg_address.user)
        assert going_up[revisions[-1]] == schema_file().read_text("utf-8"), AGAIN
        for down in database_from_template(pg_address, "template1", down_name):
            migrate.upgrade(down)
            for revision in reversed(revisions[:-1]):
                migrate.downgrade(down, revision)
                assert dump_schema(down, pg_address.user) == going_up[revision], revision
