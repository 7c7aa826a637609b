"""Schema migrations through alembic, callable from the CLI and the tests.

The migrations and alembic's configuration ship inside the package (``app.migrations``, the
repository's ``migrations/`` mapped by pyproject.toml) and are found with
``importlib.resources``, so an installed wheel migrates exactly like a checkout. alembic is
imported only when a migration runs: every command checks the migrations' names first.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import TYPE_CHECKING

from app.store.urls import asyncpg_dsn

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_PACKAGE = "app.migrations"


def migrations_dir() -> Path:
    """The directory of the shipped migrations (alembic reads them as files)."""
    found = importlib.resources.files(MIGRATIONS_PACKAGE)
    if not isinstance(found, Path):
        raise RuntimeError(
            f"{MIGRATIONS_PACKAGE} is not installed as files on disk ({found}); install "
            "Chronicle with pip into a directory, not as a zip"
        )
    return found


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    scripts = migrations_dir()
    config = Config(str(scripts / "alembic.ini"))
    config.set_main_option("script_location", str(scripts))
    # ConfigParser interpolates '%': escape it so URL-encoded passwords survive.
    config.set_main_option("sqlalchemy.url", asyncpg_dsn(url).replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def current_revision(url: str) -> str | None:
    """The schema revision the database is at, or None for an empty database."""
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine, pool

    from app.store.urls import sqlalchemy_url

    engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"version_table": "chronicle_schema_version"}
            )
            return context.get_current_revision()
    finally:
        engine.dispose()


def revisions() -> list[str]:
    """Every revision, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config("postgresql://"))
    return [found.revision for found in reversed(list(script.walk_revisions()))]


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("postgresql://")).get_current_head()


def connected_role(url: str) -> str:
    """Which role ``url`` logs in as, and whether that is right for the application."""
    import psycopg

    with psycopg.connect(asyncpg_dsn(url)) as connection:
        row = connection.execute(
            "SELECT current_user, rolsuper, "
            "CASE WHEN to_regrole('chronicle_owner') IS NULL THEN false "
            "ELSE pg_has_role(current_user, 'chronicle_owner', 'USAGE') END, "
            "CASE WHEN to_regrole('chronicle_app') IS NULL THEN false "
            "ELSE pg_has_role(current_user, 'chronicle_app', 'USAGE') END "
            "FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert row is not None
    name, superuser, owner, app = row
    if superuser:
        return f"{name} (superuser: for migrations only; the application uses chronicle_app)"
    if owner:
        return (
            f"{name} (the tables' owner: for migrations only; the application uses chronicle_app)"
        )
    if app:
        return f"{name} (chronicle_app: append and read only)"
    return f"{name} (not chronicle_app: it may lack the privileges the application needs)"
