"""The documented set-up of a configured (external) database, with no superuser involved.

A DBA creates ``chronicle_owner`` (NOLOGIN), a migrating login in it, the application's login
``chronicle_app``, and a database owned by the migrating login; `chronicle db migrate` runs as
that login, Chronicle as ``chronicle_app``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from app.config import Settings
from app.events import Message, Run, RunOutput
from app.store import EventStore, migrate
from tests.support.postgres import ServerAddress


@pytest.fixture
def migrator_database(pg_address: ServerAddress) -> Iterator[tuple[str, str]]:
    """(the migrating login's URL, the database's name), made as the DBA would."""
    suffix = uuid.uuid4().hex[:10]
    login, password, name = f"migrator_{suffix}", f"pw-{suffix}", f"ext_{suffix}"
    admin_url = pg_address.url("postgres")
    with psycopg.connect(admin_url, autocommit=True) as dba:
        # The roles are cluster-wide; chronicle_app exists on the test server already.
        dba.execute(
            "DO $$ BEGIN IF to_regrole('chronicle_owner') IS NULL THEN "
            "CREATE ROLE chronicle_owner NOLOGIN; END IF; END $$"
        )
        dba.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE chronicle_owner").format(
                sql.Identifier(login), sql.Literal(password)
            )
        )
        dba.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(login)
            )
        )
    try:
        yield ServerAddress(pg_address.host, pg_address.port, login, password).url(name), name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as dba:
            dba.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
            dba.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


async def test_a_non_superuser_migrates_and_chronicle_app_runs(
    migrator_database: tuple[str, str], pg_app_address: ServerAddress, settings: Settings
) -> None:
    migrator_url, name = migrator_database
    with psycopg.connect(migrator_url) as connection:
        superuser = connection.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert superuser == (False,)

    migrate.upgrade(migrator_url)
    assert migrate.current_revision(migrator_url) == migrate.head_revision()
    assert "the tables' owner" in migrate.connected_role(migrator_url)

    async with await EventStore.open(
        pg_app_address.url(name), config=settings.store, masker=settings.masker()
    ) as store:
        session = uuid.uuid4()
        await store.append(session, [Message(content="hi"), Run(command="ls")])
        await store.append(session, [RunOutput(exit_code=0, cause=2)])
        assert (await store.verify(session)).ok
        owner = await store.pool.fetchval(
            "SELECT tableowner FROM pg_tables WHERE tablename = 'events'"
        )
        assert owner == "chronicle_owner"

    migrate.downgrade(migrator_url)  # and back, still without a superuser
    assert migrate.current_revision(migrator_url) is None
