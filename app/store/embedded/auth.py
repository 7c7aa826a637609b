"""Password authentication for the embedded server: its pg_hba.conf and how passwords are set."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

PG_HBA = """\
# Written by Chronicle: each connection needs its password (scram-sha-256).
# The server listens on no TCP address; the host lines only make that doubly sure.
local   all   all                 scram-sha-256
host    all   all   0.0.0.0/0     reject
host    all   all   ::/0          reject
"""

#: The role a standby streams as (`chronicle db replica`): REPLICATION and LOGIN, nothing else.
REPLICATION_ROLE = "chronicle_replication"

#: PG_HBA once a standby was made: the replication role may open replication connections on
#: the socket (``all`` never matches those; they need a line of their own) and nothing else.
PG_HBA_REPLICATION = f"""\
# Written by Chronicle: each connection needs its password (scram-sha-256).
# {REPLICATION_ROLE} streams to a standby (`chronicle db replica`) and may do nothing else.
# The server listens on no TCP address; the host lines only make that doubly sure.
local   replication   {REPLICATION_ROLE}   scram-sha-256
local   all           {REPLICATION_ROLE}   reject
local   all           all                     scram-sha-256
host    all           all   0.0.0.0/0         reject
host    all           all   ::/0              reject
"""


def hba_requires_passwords(pgdata: Path) -> bool:
    """Does every rule of pg_hba.conf either ask for a SCRAM password or reject?"""
    try:
        text = (pgdata / "pg_hba.conf").read_text()
    except FileNotFoundError:
        return False
    rules = [line.split("#", 1)[0].split() for line in text.splitlines()]
    rules = [rule for rule in rules if rule]
    return bool(rules) and all(
        rule[0] in ("local", "host") and rule[-1] in ("scram-sha-256", "reject") for rule in rules
    )


def set_password(admin: psycopg.Connection, role: str, password: str) -> None:
    """LOGIN with ``password``, sent as a SCRAM verifier so the clear text never reaches the
    server (nor its log)."""
    verifier = admin.pgconn.encrypt_password(
        password.encode(), role.encode(), b"scram-sha-256"
    ).decode()
    admin.execute(
        sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(verifier)
        )
    )
