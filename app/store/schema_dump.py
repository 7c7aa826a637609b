"""The schema as one text: ``pg_dump --schema-only`` of a migrated database, normalised.

``migrations/sql/schema.sql`` is this text for a database migrated from zero to head
(``./dev schema`` writes it, ``python -m app.store.schema_dump``; a test migrates a fresh
database and compares), so the
whole schema can be read in one file and a revision that changes it unnoticed fails a test.
Normalising drops what differs between two dumps of the same schema: pg_dump's comments and
session settings, its per-dump ``\\restrict`` key, and the name of the role that migrated
(written ``CURRENT_USER``, as the revisions write it).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from app.store import migrate
from app.store.embedded.programs import binaries
from app.store.embedded.server import EmbeddedPostgres
from app.store.errors import StoreError
from app.store.urls import asyncpg_dsn

_SETTINGS = re.compile(r"^(SET |SELECT pg_catalog\.set_config\(|\\restrict |\\unrestrict )")


def dump_schema(url: str, migrating_role: str) -> str:
    """The normalised schema of the database at ``url`` (a login that may read it all)."""
    done = subprocess.run(
        [str(binaries() / "pg_dump"), "--schema-only", "--no-tablespaces", asyncpg_dsn(url)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise StoreError(f"pg_dump failed: {done.stderr.strip()}")
    return without_months(normalise(done.stdout, migrating_role))


def normalise(dump: str, migrating_role: str) -> str:
    """``dump`` without comments, settings or blank runs; the migrating role named
    ``CURRENT_USER`` wherever it owns or is granted something."""
    lines: list[str] = []
    for line in dump.splitlines():
        if line.startswith("--") or _SETTINGS.match(line):
            continue
        if not line.strip():
            if lines and lines[-1] == "":
                continue
            line = ""
        lines.append(line.rstrip())
    text = "\n".join(lines).strip() + "\n"
    role = re.escape(migrating_role)
    return re.sub(rf"\b(OWNER TO|TO|FROM) {role}\b", r"\1 CURRENT_USER", text)


#: A statement about one monthly partition of ``events`` (its table, keys, indexes, attach).
_MONTH = re.compile(r"\bpublic\.events_[0-9]{4}_[0-9]{2}\b")


def without_months(text: str) -> str:
    """``text`` without the statements about the monthly partitions of ``events``: which
    months exist depends on the day a database was migrated and on its data, not on the
    schema, which is the parent table and ``chronicle_event_partition_keys`` (what every
    month holds); tests/integration/store/test_event_partitions.py holds the months to it."""
    statements = text.split("\n\n")
    return "\n\n".join(s for s in statements if not _MONTH.search(s))


def schema_file() -> Path:
    return migrate.migrations_dir() / "sql" / "schema.sql"


def schema_from_zero() -> str:
    """Migrate an empty database of a throw-away embedded server to head and dump it."""
    with tempfile.TemporaryDirectory(prefix="chronicle-schema-") as root:
        server = EmbeddedPostgres(Path(root))
        admin = server.start()
        try:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute("CREATE DATABASE chronicle_schema")
            url = urlsplit(admin)._replace(path="/chronicle_schema").geturl()
            migrate.upgrade(url)
            return dump_schema(url, urlsplit(admin).username or "")
        finally:
            server.stop()


if __name__ == "__main__":
    schema_file().write_text(schema_from_zero(), encoding="utf-8")
    sys.stdout.write(f"wrote {schema_file()}\n")
