"""A local hot standby of the embedded server (`chronicle db replica`), to try read replicas
and failover on one machine.

The standby is a second PostgreSQL cluster in a directory of its own (``<dir>/postgres``, laid
out as the embedded server's own, so ``EmbeddedPostgres`` starts and stops it), on a port of its
own, made by ``pg_basebackup -R`` (which writes ``standby.signal`` and ``primary_conninfo``)
and streaming from the primary through a physical replication slot, so the primary keeps every
WAL segment the standby has not received yet (and keeps it while the standby is stopped: remove
a standby you no longer want, which drops its slot).

The primary is set up for it the first time: ``wal_level``, ``max_wal_senders`` and
``max_replication_slots`` raised if they are too low (PostgreSQL 16's defaults suffice; a change
restarts the primary), a ``chronicle_replication`` role (REPLICATION and LOGIN, its generated
password in the primary's ``secrets``) and a pg_hba.conf line that lets that role open
replication connections on the socket and nothing else. The superuser is never used to stream.

Every role and password comes from the primary: the standby's URLs are the primary's logins on
the standby's socket. A standby takes no writes (SQLSTATE 25006) until it is promoted.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import NamedTuple

import psycopg
from psycopg import sql
from pydantic import BaseModel

from app.store.embedded.auth import (
    PG_HBA_REPLICATION,
    REPLICATION_ROLE,
    set_password,
)
from app.store.embedded.postmaster import Postmaster, read_postmaster
from app.store.embedded.programs import run_program, server_user, write_server_file
from app.store.embedded.server import (
    APP_ROLE,
    DATABASE,
    SUPERUSER,
    EmbeddedPostgres,
    server_url,
)
from app.store.embedded.sockets import PORT
from app.store.errors import StoreError
from app.store.private_files import read_secret, secret_in

#: The standby's default port (its socket's name): the primary's plus one.
STANDBY_PORT = PORT + 1
#: What ``chronicle db replica`` wrote in the standby's directory: whose standby it is.
RECORD_NAME = "chronicle-replica.json"
#: Enough senders for a standby and a base backup at once, and a slot.
MIN_WAL_SENDERS = 4
MIN_REPLICATION_SLOTS = 2

STANDBY_SQL = """
SELECT pg_is_in_recovery() AS in_recovery,
       pg_last_wal_replay_lsn()::text AS replay_lsn,
       pg_last_wal_receive_lsn()::text AS receive_lsn
"""

#: The primary's position, how far the standby's replay (``pg_last_wal_replay_lsn()`` on the
#: standby, the parameter) trails it, and the slot's walsender (``pg_stat_replication``:
#: ``replay_lag`` is NULL once a caught-up standby has been idle a moment).
PRIMARY_SQL = """
SELECT pg_current_wal_lsn()::text AS current_lsn,
       pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)::bigint AS lag_bytes,
       r.state,
       r.sync_state,
       extract(epoch FROM r.replay_lag)::float8 AS replay_lag_seconds,
       pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::bigint AS retained_bytes
FROM pg_replication_slots s
LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid
WHERE s.slot_name = %s
"""


class ReplicaError(StoreError):
    """`chronicle db replica` cannot do what was asked; the message says what to do instead."""


class StandbyPosition(NamedTuple):
    in_recovery: bool
    replay_lsn: str | None
    receive_lsn: str | None


class ReplicaRecord(BaseModel):
    """Whose standby a directory holds, through which slot, on which port, and whether the
    primary waits for it before a commit returns (``synchronous``)."""

    primary_data_dir: Path
    slot: str
    port: int
    synchronous: bool = False


class ReplicaStatus(BaseModel):
    """What `chronicle db replica status` prints."""

    directory: Path
    slot: str
    port: int
    running: bool
    #: True while it replays the primary's WAL (a hot standby); False once promoted.
    in_recovery: bool | None = None
    #: The application's login on the standby (with its password); redact before printing.
    url: str | None = None
    replay_lsn: str | None = None
    primary_running: bool = False
    primary_lsn: str | None = None
    #: WAL the primary wrote that the standby has not replayed yet.
    lag_bytes: int | None = None
    #: How long the standby's replay trails the primary's commits (pg_stat_replication).
    lag_seconds: float | None = None
    #: The walsender's state on the primary (``streaming``), or None when none is connected.
    stream_state: str | None = None
    sync_state: str | None = None
    #: WAL the primary keeps for the slot.
    retained_bytes: int | None = None


def slot_name(directory: Path) -> str:
    """The standby's slot and ``application_name``: one per directory (names are lower case
    letters, digits and underscores)."""
    digest = hashlib.sha256(str(directory).encode()).hexdigest()[:10]
    return f"chronicle_standby_{digest}"


class EmbeddedReplica:
    """The standby in ``directory`` of the embedded server of ``primary_data_dir``."""

    def __init__(self, primary_data_dir: Path, directory: Path) -> None:
        self.primary = EmbeddedPostgres(primary_data_dir)
        self.directory = directory.expanduser().resolve()
        self.record_file = self.directory / RECORD_NAME

    # -- public ------------------------------------------------------------------------------

    def start(self, port: int = STANDBY_PORT, *, synchronous: bool = False) -> tuple[str, bool]:
        """Make the standby (first time) or start it again; its application URL, and whether
        it was made now. ``synchronous`` (when making it): the primary's commits return only
        once the standby has the commit's WAL (``synchronous_standby_names``), so no
        acknowledged append is lost when the primary dies; while the standby is stopped the
        primary's commits wait for it."""
        record = self._record()
        if record is not None:
            self._server(record).start_as_is()
            self._wait_for(record)
            return self._app_url(record), False
        if self.directory.exists() and any(self.directory.iterdir()):
            raise ReplicaError(
                f"{self.directory} is not empty and holds no replica of Chronicle's; "
                "choose another directory with --dir"
            )
        primary = self._running_primary("make a replica of it")
        if port == primary.port:
            raise ReplicaError(f"port {port} is the primary's; choose another with --port")
        record = ReplicaRecord(
            primary_data_dir=self.primary.data_dir,
            slot=slot_name(self.directory),
            port=port,
            synchronous=synchronous,
        )
        self._allow_replication()
        server = self._server(record)
        try:
            server.prepare_directories()
            self._base_backup(record)
        except BaseException:
            # nothing half-made is left: the next attempt starts afresh
            self._drop_slot(record, wait=0)
            self._empty_directory()
            raise
        self.record_file.write_text(record.model_dump_json(indent=2) + "\n")
        self.record_file.chmod(0o600)
        server.start_as_is()
        self._wait_for(record)
        return self._app_url(record), True

    def url(self) -> str:
        record = self._existing_record()
        if read_postmaster(self._server(record).pgdata) is None:
            raise ReplicaError("the replica is stopped; `chronicle db replica` starts it")
        return self._app_url(record)

    def stop(self) -> bool:
        """Stop the standby if it runs; True when it was running. Its slot stays: the primary
        keeps the WAL it will need when started again."""
        return self._server(self._existing_record()).stop()

    def promote(self) -> bool:
        """Make the standby a primary of its own, and drop its slot on the old primary when
        that one still runs (a promoted server never streams from it again); whether the slot
        was dropped."""
        record = self._existing_record()
        server = self._server(record)
        running = read_postmaster(server.pgdata)
        if running is None:
            raise ReplicaError("the replica is stopped; `chronicle db replica` starts it first")
        if not self._standby_row(record, running).in_recovery:
            raise ReplicaError("the replica was promoted already; it takes writes")
        server.promote()
        self._stop_waiting_for(record)  # the old primary, if it runs, no longer waits for it
        return self._drop_slot(record, wait=5.0)

    def remove(self) -> bool:
        """Stop the standby, drop its slot on the primary and delete its directory; whether
        the slot was dropped (not when the primary is not running)."""
        record = self._existing_record()
        self._stop_waiting_for(record)  # before it stops: the primary's commits would wait
        self._server(record).stop()
        dropped = self._drop_slot(record, wait=5.0)
        if not dropped and self.primary.status().running:
            raise ReplicaError(f"the primary's slot {record.slot} is still in use; try again")
        shutil.rmtree(self.directory)
        return dropped

    def status(self) -> ReplicaStatus:
        record = self._existing_record()
        found = ReplicaStatus(
            directory=self.directory, slot=record.slot, port=record.port, running=False
        )
        running = read_postmaster(self._server(record).pgdata)
        if running is not None and running.ready:
            standby = self._standby_row(record, running)
            found.running = True
            found.in_recovery = standby.in_recovery
            found.url = self._app_url(record)
            found.replay_lsn = standby.replay_lsn
        primary = self.primary.status()
        if primary.running and primary.admin_url is not None:
            found.primary_running = True
            with psycopg.connect(primary.admin_url, autocommit=True) as admin:
                row = admin.execute(PRIMARY_SQL, (found.replay_lsn, record.slot)).fetchone()
            if row is not None:
                (found.primary_lsn, lag, found.stream_state, found.sync_state) = row[:4]
                (found.lag_seconds, found.retained_bytes) = row[4:]
                if found.in_recovery and lag is not None:
                    found.lag_bytes = max(0, int(lag))
                    if found.lag_bytes == 0 and found.lag_seconds is None:
                        found.lag_seconds = 0.0  # caught up and idle: nothing to replay
        return found

    # -- the primary ---------------------------------------------------------------------------

    def _running_primary(self, to: str) -> Postmaster:
        server = read_postmaster(self.primary.pgdata)
        if server is None or not server.ready:
            raise ReplicaError(
                f"the embedded PostgreSQL in {self.primary.pgdata} is not running; "
                f"start it with `chronicle db up`, then {to}"
            )
        return server

    def _wait_for(self, record: ReplicaRecord) -> None:
        """A synchronous standby named to the primary (its ``application_name`` is its slot)."""
        if not record.synchronous:
            return
        with self._admin() as admin:
            admin.execute(
                sql.SQL("ALTER SYSTEM SET synchronous_standby_names TO {}").format(
                    sql.Literal(f'"{record.slot}"')
                )
            )
            admin.execute("SELECT pg_reload_conf()")

    def _stop_waiting_for(self, record: ReplicaRecord) -> None:
        """The primary (when it runs) waits for this standby no more."""
        if not record.synchronous or not self.primary.status().running:
            return
        with self._admin() as admin:
            named = admin.execute("SHOW synchronous_standby_names").fetchone()
            if named is not None and record.slot in str(named[0]):
                admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
                admin.execute("SELECT pg_reload_conf()")

    def _admin(self) -> psycopg.Connection:
        url = self.primary.status().admin_url
        if url is None:
            raise ReplicaError("the embedded PostgreSQL is not running; `chronicle db up`")
        return psycopg.connect(url, autocommit=True)

    def _allow_replication(self) -> None:
        """Settings, the replication role and its pg_hba.conf line, as needed."""
        with self._admin() as admin:
            wal_level = admin.execute("SHOW wal_level").fetchone()
            senders = admin.execute("SHOW max_wal_senders").fetchone()
            slots = admin.execute("SHOW max_replication_slots").fetchone()
            assert wal_level and senders and slots
            needs_restart = False
            if wal_level[0] == "minimal":
                admin.execute("ALTER SYSTEM SET wal_level = 'replica'")
                needs_restart = True
            if int(senders[0]) < MIN_WAL_SENDERS:
                admin.execute(f"ALTER SYSTEM SET max_wal_senders = {MIN_WAL_SENDERS}")
                needs_restart = True
            if int(slots[0]) < MIN_REPLICATION_SLOTS:
                admin.execute(f"ALTER SYSTEM SET max_replication_slots = {MIN_REPLICATION_SLOTS}")
                needs_restart = True
            exists = admin.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", (REPLICATION_ROLE,)
            ).fetchone()
            if exists is None:
                admin.execute(
                    sql.SQL("CREATE ROLE {} WITH REPLICATION NOLOGIN").format(
                        sql.Identifier(REPLICATION_ROLE)
                    )
                )
            set_password(admin, REPLICATION_ROLE, secret_in(self._replication_password_file))
            hba = self.primary.pgdata / "pg_hba.conf"
            if hba.read_text() != PG_HBA_REPLICATION:
                write_server_file(hba, PG_HBA_REPLICATION, server_user())
                admin.execute("SELECT pg_reload_conf()")
        if needs_restart:
            self.primary.restart()
        self._wait_for_replication_login()

    @property
    def _replication_password_file(self) -> Path:
        return self.primary.secrets_dir / f"postgres-{REPLICATION_ROLE}.password"

    def _replication_conninfo(self, server: Postmaster, application_name: str) -> str:
        """Without the password (``PGPASSWORD`` carries it)."""
        return psycopg.conninfo.make_conninfo(
            host=str(server.socket_dir),
            port=str(server.port),
            user=REPLICATION_ROLE,
            application_name=application_name,
        )

    def _wait_for_replication_login(self) -> None:
        """Until the reloaded pg_hba.conf lets the role open a replication connection."""
        server = self._running_primary("make a replica of it")
        conninfo = self._replication_conninfo(server, "chronicle_check")
        password = read_secret(self._replication_password_file)
        deadline = time.monotonic() + 10
        while True:
            try:
                psycopg.connect(conninfo, password=password, replication="true").close()
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise ReplicaError(
                        f"the primary refuses {REPLICATION_ROLE}'s replication connection: {exc}"
                    ) from None
                time.sleep(0.1)

    def _drop_slot(self, record: ReplicaRecord, wait: float) -> bool:
        """Drop the standby's slot once no walsender holds it; False when the primary is not
        running or the slot stayed in use for ``wait`` seconds."""
        status = self.primary.status()
        if not status.running or status.admin_url is None:
            return False
        deadline = time.monotonic() + wait
        with psycopg.connect(status.admin_url, autocommit=True) as admin:
            while True:
                row = admin.execute(
                    "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (record.slot,)
                ).fetchone()
                if row is None:
                    return True
                if not row[0]:
                    admin.execute("SELECT pg_drop_replication_slot(%s)", (record.slot,))
                    return True
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)

    # -- the standby ---------------------------------------------------------------------------

    def _base_backup(self, record: ReplicaRecord) -> None:
        """Copy the primary through a new slot; -R writes the standby's configuration."""
        server = self._running_primary("make a replica of it")
        self._drop_slot(record, wait=0)  # a slot left by a directory removed by hand
        pgdata = self._server(record).pgdata
        run_program(
            server_user(),
            "pg_basebackup",
            "--pgdata", str(pgdata),
            "--dbname", self._replication_conninfo(server, record.slot),
            "--write-recovery-conf",
            "--wal-method=stream",
            "--create-slot",
            "--slot", record.slot,
            "--checkpoint=fast",
            "--no-password",
            failure=lambda output: f"pg_basebackup of the embedded PostgreSQL failed: {output}",
            env={"PGPASSWORD": read_secret(self._replication_password_file)},
        )  # fmt: skip
        # the primary's server log came along; the standby writes its own
        (pgdata / "log").unlink(missing_ok=True)

    def _empty_directory(self) -> None:
        """Remove what a failed attempt made in the (empty or new) directory."""
        for made in self.directory.iterdir() if self.directory.is_dir() else ():
            if made.is_dir() and not made.is_symlink():
                shutil.rmtree(made, ignore_errors=True)
            else:
                made.unlink(missing_ok=True)

    def _server(self, record: ReplicaRecord) -> EmbeddedPostgres:
        return EmbeddedPostgres(self.directory, port=record.port)

    def _record(self) -> ReplicaRecord | None:
        try:
            return ReplicaRecord.model_validate_json(self.record_file.read_text())
        except FileNotFoundError:
            return None

    def _existing_record(self) -> ReplicaRecord:
        record = self._record()
        if record is None:
            raise ReplicaError(
                f"there is no replica in {self.directory}; `chronicle db replica` makes one"
            )
        return record

    def _standby_row(self, record: ReplicaRecord, server: Postmaster) -> StandbyPosition:
        url = server_url(
            SUPERUSER, read_secret(self.primary.superuser_password_file), DATABASE, server
        )
        with psycopg.connect(url, autocommit=True) as standby:
            row = standby.execute(STANDBY_SQL).fetchone()
        assert row is not None
        return StandbyPosition(*row)

    def _app_url(self, record: ReplicaRecord) -> str:
        server = read_postmaster(self._server(record).pgdata)
        if server is None:
            raise ReplicaError("the replica is stopped; `chronicle db replica` starts it")
        return server_url(APP_ROLE, read_secret(self.primary.app_password_file), DATABASE, server)
