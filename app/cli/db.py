"""`chronicle db ...`: the database Chronicle uses (embedded by default)."""

from __future__ import annotations

import argparse

from app.config import Settings
from app.store.embedded import EmbeddedPostgres
from app.store.urls import redact


def add_parser(commands: argparse._SubParsersAction) -> None:
    db = commands.add_parser("db", help="start, inspect and migrate the database")
    sub = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    sub.add_parser("up", help="start the embedded PostgreSQL (if no URL is set) and migrate it")
    sub.add_parser("status", help="which database is used, is it up, which schema revision")
    sub.add_parser("url", help="print the database URL")
    migrate = sub.add_parser("migrate", help="upgrade the schema (default: to head)")
    migrate.add_argument("--revision", default="head")
    downgrade = sub.add_parser("downgrade", help="downgrade the schema (default: to base)")
    downgrade.add_argument("--revision", default="base")
    sub.add_parser("stop", help="stop the embedded PostgreSQL")


def _url(settings: Settings) -> str:
    from app.store.database import ensure_database

    return ensure_database(settings)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.store import migrate

    command = args.db_command
    if command == "up":
        url = _url(settings)
        migrate.upgrade(url)
        where = "configured" if settings.database_url else "embedded"
        print(f"database ready ({where}): {redact(url)}")
        print(f"schema revision: {migrate.current_revision(url)}")
        return 0
    if command == "url":
        print(_url(settings))
        return 0
    if command == "status":
        return _status(settings)
    if command == "migrate":
        url = settings.database_url or _url(settings)
        migrate.upgrade(url, args.revision)
        print(f"schema at revision {migrate.current_revision(url)}")
        return 0
    if command == "downgrade":
        url = settings.database_url or _url(settings)
        migrate.downgrade(url, args.revision)
        print(f"schema at revision {migrate.current_revision(url) or 'base (empty)'}")
        return 0
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
        url = settings.database_url
        print(f"database: configured (CHRONICLE_DATABASE_URL) {redact(url)}")
    else:
        status = EmbeddedPostgres(settings.data_dir).status()
        print(f"database: embedded PostgreSQL in {status.pgdata}")
        if not status.running:
            state = "stopped" if status.initialised else "not created yet"
            print(f"state: {state} (`chronicle db up` starts it)")
            return 1
        print(f"state: running (pid {status.pid})")
        assert status.url is not None
        url = status.url
        print(f"url: {url}")
    try:
        revision = migrate.current_revision(url)
    except Exception as exc:
        print(f"state: unreachable ({type(exc).__name__}: {exc})")
        return 1
    head = migrate.head_revision()
    print(f"schema revision: {revision or 'none'} (head: {head})")
    return 0 if revision == head else 1
