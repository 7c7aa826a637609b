"""Alembic environment: plain SQL migrations run over a synchronous psycopg connection."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine, pool

from app.store.urls import sqlalchemy_url

config = context.config


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("CHRONICLE_DATABASE_URL")
    if not url:
        raise RuntimeError(
            "no database URL: run `chronicle db migrate` or set CHRONICLE_DATABASE_URL"
        )
    return sqlalchemy_url(url)


def run_migrations_offline() -> None:
    context.configure(url=_url(), literal_binds=True, version_table="chronicle_schema_version")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, version_table="chronicle_schema_version")
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
