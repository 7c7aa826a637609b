"""An embedded PostgreSQL (the ``pgserver`` package) for running without any setup.

The server lives in ``<data_dir>/postgres``, listens only on a Unix socket, and keeps running
after the command that started it exits, so the next command reuses it. Running as root is
handled by pgserver (the server runs as a dedicated system user).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from types import ModuleType

import psycopg
from pydantic import BaseModel

DATABASE = "chronicle"


def _pgserver() -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pgserver

    return pgserver


class EmbeddedStatus(BaseModel):
    pgdata: Path
    initialised: bool
    running: bool
    pid: int | None = None
    url: str | None = None


class EmbeddedPostgres:
    """Start, inspect, restart and stop the embedded server in one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "postgres").expanduser().resolve()

    def _system_user(self) -> str | None:
        return "pgserver" if os.geteuid() == 0 else None

    def _pg_ctl(self, *args: str) -> None:
        _pgserver()
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import

        pg_ctl(list(args), pgdata=self.pgdata, user=self._system_user(), timeout=60)

    def start(self) -> str:
        """Start (or reuse) the server, create the ``chronicle`` database; return its URL."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = _pgserver().get_server(self.pgdata, cleanup_mode=None)
        admin_url = server.get_uri("postgres")
        with psycopg.connect(admin_url, autocommit=True) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if not exists:
                connection.execute(f'CREATE DATABASE "{DATABASE}"')
        return server.get_uri(DATABASE)

    def status(self) -> EmbeddedStatus:
        _pgserver()
        from pgserver.utils import PostmasterInfo

        initialised = (self.pgdata / "PG_VERSION").exists()
        info = PostmasterInfo.read_from_pgdata(self.pgdata) if initialised else None
        running = bool(info and info.is_running() and info.status == "ready")
        return EmbeddedStatus(
            pgdata=self.pgdata,
            initialised=initialised,
            running=running,
            pid=info.pid if running and info else None,
            url=info.get_uri(database=DATABASE) if running and info else None,
        )

    def restart(self) -> None:
        """Fast restart: every client connection is cut, the data stays."""
        self._pg_ctl("-w", "-m", "fast", "restart")

    def stop(self) -> bool:
        """Stop the server if it runs; True when it was running."""
        if not self.status().running:
            return False
        self._pg_ctl("-w", "-m", "fast", "stop")
        return True
