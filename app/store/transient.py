"""Which database errors mean "not now, try again" rather than "this is wrong"."""

from __future__ import annotations

import asyncpg

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
