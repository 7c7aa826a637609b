"""A login in chronicle_analyst on the test's database, for `chronicle sql` and exports."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pytest
from psycopg import sql

from tests.support.postgres import ServerAddress, database_name


@pytest.fixture
def analyst_database_url(database_url: str, pg_address: ServerAddress) -> Iterator[str]:
    login = f"analyst_test_{uuid.uuid4().hex[:12]}"
    password = secrets.token_urlsafe(18)
    admin = pg_address.url("postgres")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE chronicle_analyst").format(
                sql.Identifier(login), sql.Literal(password)
            )
        )
    try:
        yield replace(pg_address, user=login, password=password).url(database_name(database_url))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (login,),
            )
            connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))
