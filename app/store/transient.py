"""Which database errors mean "not now, try again" rather than "this is wrong".

Two kinds: the database went away (``TRANSIENT_ERRORS``, ``DATABASE_GONE_ERRORS``: the
connection is lost or refused, the server starts or stops), and the database is there but
refuses for now (``REFUSED_FOR_NOW``: its disk is full, it is out of memory or connections).
Both leave the request as good as it was: a caller keeps its work and tries again later.
"""

from __future__ import annotations

import asyncpg

from app.store.errors import DatabaseUnavailableError, RefusedForNowError

#: Connection lost or refused, server starting or shutting down, a statement timing out.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.ConnectionDoesNotExistError,
    # A connection the server ended with a message (a fast shutdown's 57P01) can be left
    # waiting for an answer that never comes: each use then raises this (asyncpg #1069).
    asyncpg.InternalClientError,
)

#: What a database that went away looks like to a caller of the store: the store's own error
#: once its retries are spent, and the driver's raw errors from a pooled connection the
#: server closed under it (callers outside app/store never import the driver).
DATABASE_GONE_ERRORS = (
    DatabaseUnavailableError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    ConnectionError,
)

#: The SQLSTATEs of a server that refuses for now, and what each means in plain words (never
#: the server's own message, which names its files). PostgreSQL's class 53, insufficient
#: resources, whole: a disk full (53100: a table, an index or a temporary file cannot grow),
#: memory (53200, also its lock table's "out of shared memory"), connection slots (53300),
#: a configured limit (53400: replication slots, dynamic shared memory segments) or the rest
#: (53000: file descriptors). And 25006: a server that takes no writes just now (a primary
#: demoted by a failover, ``default_transaction_read_only`` set for maintenance). Not here:
#: the server going away or starting (57P01-57P03, TRANSIENT_ERRORS above), and 58030, an
#: I/O error (a failing disk, which waiting does not mend).
REFUSED_FOR_NOW_REASONS: dict[str, str] = {
    "53000": "it is short of a resource such as open files",
    "53100": "its disk is full (an operator must free space)",
    "53200": "it is out of memory",
    "53300": "all its connection slots are taken",
    "53400": "it reached one of its configured limits",
    "25006": "it takes no writes at the moment",
}

#: The same refusals as exceptions: the store's own error and the driver's raw ones (class 53
#: is ``InsufficientResourcesError`` and its subclasses), for ``except`` clauses.
REFUSED_FOR_NOW: tuple[type[BaseException], ...] = (
    RefusedForNowError,
    asyncpg.InsufficientResourcesError,
    asyncpg.ReadOnlySQLTransactionError,
)


def refused_for_now(exc: object) -> RefusedForNowError | None:
    """The store's error for a refusal that passes (a driver error, a refused append, or the
    store's error already); None for anything else."""
    if isinstance(exc, RefusedForNowError):
        return exc
    state = getattr(exc, "sqlstate", None)
    if not isinstance(state, str) or state not in REFUSED_FOR_NOW_REASONS:
        return None
    reason = REFUSED_FOR_NOW_REASONS[state]
    return RefusedForNowError(state, reason, getattr(exc, "message", None) or str(exc))
