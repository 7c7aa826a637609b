"""Which database errors mean "not now, try again" rather than "this is wrong"."""

from __future__ import annotations

import asyncpg

from app.store.errors import DatabaseUnavailableError

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
