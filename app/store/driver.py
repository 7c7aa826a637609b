"""The database driver as a feature's ``sql/`` module sees it, named here once.

A feature's table module (``app/<package>/sql/``) runs SQL on the store's connections, types
them and their rows, and catches a few of the database's refusals (a unique or foreign key
violation, any error of a statement). It takes those names from ``app.store``, never from the
driver: which driver the store uses, and what its errors mean, is decided in app/store alone,
here and in ``transient.py`` (which errors mean "try again" or "the database went away") and
``append.py``'s ``translate_error`` (an append's refusals as the store's own errors). The
names are the driver's own classes, so an ``except`` catches exactly what it caught before.
"""

from __future__ import annotations

from typing import TypeAlias

import asyncpg

#: A connection of the store's pool (or one of its own, as a claim or a listener holds).
Connection: TypeAlias = asyncpg.Connection
#: The store's connection pool, for a function that runs on either a pool or a connection.
Pool: TypeAlias = asyncpg.Pool
#: One row a query returned, read by column name.
Record: TypeAlias = asyncpg.Record

#: Any error PostgreSQL answered a statement with (it names an SQLSTATE).
DatabaseError = asyncpg.PostgresError
#: A row's key is taken already (SQLSTATE 23505).
UniqueViolationError = asyncpg.UniqueViolationError
#: A row breaks a CHECK constraint (23514).
CheckViolationError = asyncpg.CheckViolationError
#: A row names a row of another table that is not there (23503).
ForeignKeyViolationError = asyncpg.ForeignKeyViolationError
#: The connection cannot be used any more (closed, or released to the pool already).
ConnectionUnusableError = asyncpg.InterfaceError

__all__ = [
    "CheckViolationError",
    "Connection",
    "ConnectionUnusableError",
    "DatabaseError",
    "ForeignKeyViolationError",
    "Pool",
    "Record",
    "UniqueViolationError",
]
