"""A login in chronicle_analyst only, on a test's database: what `chronicle sql`, the
exports and the analytics views are tested with, made and dropped by the server's superuser."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import psycopg
from psycopg import sql

from tests.support.postgres import ServerAddress, database_name


@contextmanager
def analyst_login(database_url: str, pg_address: ServerAddress) -> Iterator[str]:
    """The URL of a fresh chronicle_analyst login on ``database_url``'s database; the login's
    sessions are ended and the role dropped afterwards."""
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
