"""`chronicle db ...`: the database Chronicle uses (embedded by default).

The application connects as ``chronicle_app``; migrations and these admin commands use the
embedded server's superuser (or, with a configured URL, whatever role that URL names: run
`chronicle db migrate` with the owner's URL, the application with ``chronicle_app``'s).
"""

from __future__ import annotations

import argparse
import asyncio

from app.cli import db_partitions, db_replica, db_scrub
from app.config import Settings
from app.store import redact
from app.store.embedded import EmbeddedPostgres


def add_parsers(commands: argparse._SubParsersAction) -> None:
    db = commands.add_parser("db", help="start, inspect and migrate the database")
    sub = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    sub.add_parser("up", help="start the embedded PostgreSQL (if no URL is set) and migrate it")
    sub.add_parser("status", help="which database is used, is it up, which schema revision")
    url = sub.add_parser("url", help="print the application's database URL (password hidden)")
    url.add_argument(
        "--show-password", action="store_true", help="print the password too (a secret)"
    )
    url.add_argument(
        "--admin",
        action="store_true",
        help="the embedded server's superuser URL instead (for psql; never for the application)",
    )
    migrate = sub.add_parser("migrate", help="upgrade the schema (default: to head)")
    migrate.add_argument("--revision", default="head")
    downgrade = sub.add_parser("downgrade", help="downgrade the schema (default: to base)")
    downgrade.add_argument("--revision", default="base")
    sub.add_parser("stop", help="stop the embedded PostgreSQL")
    db_replica.add_parser(sub)
    db_partitions.add_parser(sub)
    db_scrub.add_parser(sub)
    db.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.store import admin_database_url, ensure_database, forget_migrations, migrate

    command = args.db_command
    database = settings.database_config()
    if command == "up":
        url = ensure_database(database)
        admin = admin_database_url(database)
        migrate.upgrade(admin)
        where = "configured" if settings.database_url else "embedded"
        print(f"database ready ({where}): {redact(url)}")
        print(f"schema revision: {migrate.current_revision(admin)}")
        return 0
    if command == "url":
        if args.admin and settings.database_url:
            print("a database URL is configured; Chronicle has no superuser URL of its own")
            return 1
        url = admin_database_url(database) if args.admin else ensure_database(database)
        print(url if args.show_password else redact(url))
        return 0
    if command == "status":
        return _status(settings)
    if command == "migrate":
        admin = admin_database_url(database)
        migrate.upgrade(admin, args.revision)
        print(f"schema at revision {migrate.current_revision(admin)}")
        return 0
    if command == "downgrade":
        admin = admin_database_url(database)
        migrate.downgrade(admin, args.revision)
        forget_migrations(database)
        print(f"schema at revision {migrate.current_revision(admin) or 'base (empty)'}")
        return 0
    if command == "replica":
        return db_replica.run(args, settings)
    if command == "partitions":
        return asyncio.run(db_partitions.run(args, settings))
    if command == "scrub":
        return asyncio.run(db_scrub.run(args, settings))
    if command == "stop":
        if settings.database_url:
            print("a database URL is configured; Chronicle did not start it and will not stop it")
            return 1
        stopped = EmbeddedPostgres(settings.data_dir).stop()
        print("embedded PostgreSQL stopped" if stopped else "embedded PostgreSQL was not running")
        return 0
    raise AssertionError(command)


def _status(settings: Settings) -> int:
    from app.store import migrate

    if settings.database_url:
        url = admin = settings.database_url
        print(f"database: configured (CHRONICLE_DATABASE_URL) {redact(url)}")
    else:
        status = EmbeddedPostgres(settings.data_dir).status()
        print(f"database: embedded PostgreSQL in {status.pgdata}")
        if not status.running or status.url is None or status.admin_url is None:
            state = "stopped" if status.initialised else "not created yet"
            print(f"state: {state} (`chronicle db up` starts it)")
            return 1
        print(f"state: running (pid {status.pid})")
        url, admin = status.url, status.admin_url
        print(f"url: {redact(url)}")
    try:
        revision = migrate.current_revision(admin)
        role = migrate.connected_role(url)
    except Exception as exc:
        print(f"state: unreachable ({type(exc).__name__}: {exc})")
        return 1
    print(f"role: {role}")
    head = migrate.head_revision()
    print(f"schema revision: {revision or 'none'} (head: {head})")
    return 0 if revision == head else 1
