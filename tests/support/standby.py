"""A primary and a hot standby of it on this machine, for the tests of read replicas and
failover: the embedded PostgreSQL and `chronicle db replica`'s standby (real servers,
streaming replication through a slot)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import psutil
import psycopg

from app.store import ensure_database
from app.store.config import DatabaseConfig
from app.store.embedded import EmbeddedPostgres, EmbeddedReplica
from app.store.embedded.postmaster import read_postmaster


def _on_server_of(url: str, server_url: str) -> str:
    """``url``'s login and database on the server ``server_url`` names (its socket, port)."""
    parts, server = urlsplit(url), dict(parse_qsl(urlsplit(server_url).query))
    query = dict(parse_qsl(parts.query)) | {"host": server["host"], "port": server["port"]}
    return parts._replace(query=urlencode(query, safe="/")).geturl()


@dataclass
class Pair:
    """The two servers and their URLs (the application's login, and the superuser's)."""

    data_dir: Path
    primary_url: str
    primary_admin_url: str
    standby: EmbeddedReplica
    standby_url: str

    @property
    def standby_admin_url(self) -> str:
        return _on_server_of(self.primary_admin_url, self.standby_url)

    def pause_replay(self) -> None:
        """The standby stops applying WAL (it still receives it): it falls behind."""
        with psycopg.connect(self.standby_admin_url, autocommit=True) as standby:
            standby.execute("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        with psycopg.connect(self.standby_admin_url, autocommit=True) as standby:
            standby.execute("SELECT pg_wal_replay_resume()")

    def kill_primary(self) -> None:
        """The primary dies at once (SIGKILL to its postmaster; its backends follow it)."""
        server = read_postmaster(EmbeddedPostgres(self.data_dir).pgdata)
        assert server is not None, "the primary is not running"
        processes = [psutil.Process(server.pid), *psutil.Process(server.pid).children()]
        os.kill(server.pid, signal.SIGKILL)
        _, alive = psutil.wait_procs(processes, timeout=30)
        assert not alive, alive

    def caught_up(self) -> bool:
        """The standby has replayed everything the primary wrote so far."""
        with psycopg.connect(self.primary_admin_url, autocommit=True) as primary:
            row = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        with psycopg.connect(self.standby_admin_url, autocommit=True) as standby:
            replayed = standby.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)
            ).fetchone()
        return bool(replayed and replayed[0])


@contextmanager
def primary_and_standby(*, synchronous: bool = False) -> Iterator[Pair]:
    """A migrated embedded primary and a standby streaming from it, both stopped and deleted
    at the end. Beneath the system temp dir: the server's user must pass through its parents."""
    root = Path(tempfile.mkdtemp(prefix="chronicle-standby-"))
    data_dir = root / "data"
    try:
        app_url = ensure_database(DatabaseConfig(data_dir=data_dir))
        admin_url = EmbeddedPostgres(data_dir).ensure_running().admin
        standby = EmbeddedReplica(data_dir, root / "standby" / "data")
        standby_url, _ = standby.start(synchronous=synchronous)
        yield Pair(data_dir, app_url, admin_url, standby, standby_url)
    finally:
        for data in (root / "standby" / "data", data_dir):
            if data.is_dir():
                with contextlib.suppress(Exception):  # a primary a test killed is not running
                    EmbeddedPostgres(data).stop()
        shutil.rmtree(root, ignore_errors=True)
