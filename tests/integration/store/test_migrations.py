"""`chronicle db migrate` takes an empty database to head, and downgrade back to base."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from app.store import migrate
from tests.support.postgres import ServerAddress, database_from_template


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {row[0] for row in rows}


@pytest.mark.usefixtures("role_settings_changing")
def test_upgrade_from_empty_and_downgrade_to_base(pg_address: ServerAddress) -> None:
    for url in database_from_template(pg_address, "template1", f"m_{uuid.uuid4().hex[:12]}"):
        assert migrate.current_revision(url) is None
        migrate.upgrade(url)
        assert migrate.current_revision(url) == migrate.head_revision()
        assert {"events", "sessions", "checkpoints", "llm_messages"} <= _tables(url)
        migrate.downgrade(url)
        assert migrate.current_revision(url) is None
        assert not {"events", "sessions", "checkpoints", "llm_messages"} & _tables(url)
        migrate.upgrade(url)  # and up again
        assert "events" in _tables(url)
