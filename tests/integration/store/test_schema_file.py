"""migrations/sql/schema.sql is the schema a database migrated from zero has: the revisions
are held to the one file a reader looks at (``./dev schema`` writes it again)."""

from __future__ import annotations

import uuid

from app.store import migrate
from app.store.schema_dump import dump_schema, schema_file
from tests.support.postgres import ServerAddress, database_from_template

AGAIN = "the schema differs from migrations/sql/schema.sql: run ./dev schema and read the diff"


def test_migrated_from_zero_is_schema_sql(pg_address: ServerAddress) -> None:
    for url in database_from_template(pg_address, "template1", f"s_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url)
        assert dump_schema(url, pg_address.user) == schema_file().read_text("utf-8"), AGAIN


def test_down_and_up_again_is_schema_sql(pg_address: ServerAddress) -> None:
    """Every revision's downgrade restores what the revision before it made, so going down
    to the analytics views' first revision and up again ends where a fresh migration does."""
    for url in database_from_template(pg_address, "template1", f"s_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url)
        migrate.downgrade(url, "0005")
        migrate.upgrade(url)
        assert dump_schema(url, pg_address.user) == schema_file().read_text("utf-8"), AGAIN
