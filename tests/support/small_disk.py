"""A database of the tests' server whose disk fills up for real: its tablespace (its tables,
indexes, catalogs and temporary files) on a tmpfs of a few megabytes, which a test fills with
a file and frees again. The write-ahead log stays on the server's own disk, as it would on a
server whose data volume is full (a full WAL volume stops the server: another fault).

Mounting needs root, and the server must run on this machine (the embedded test server).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from app.store.embedded.programs import server_user
from tests.support.postgres import PgServer

CHUNK = 1 << 20


@dataclass(frozen=True)
class SmallDisk:
    """The tmpfs under the database's tablespace."""

    mount: Path

    @property
    def filler(self) -> Path:
        return self.mount / "filler"

    def fill(self) -> None:
        """Take every free byte, so that no table, index or temporary file can grow."""
        with self.filler.open("ab", buffering=0) as out:
            for size in (CHUNK, 4096, 1):
                block = b"\0" * size
                while True:
                    try:
                        out.write(block)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        assert shutil.disk_usage(self.mount).free == 0

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


def can_fill_a_disk(server: PgServer) -> str | None:
    """None when this test run can fill a database's disk; else why not."""
    if os.geteuid() != 0:
        return "mounting a small disk to fill needs root"
    if not server.admin.host.startswith("/"):
        return "the test server is not on this machine (CHRONICLE_TEST_DATABASE_URL)"
    return None


@contextlib.contextmanager
def database_on_small_disk(
    server: PgServer, template: str, *, megabytes: int = 16
) -> Iterator[tuple[str, SmallDisk]]:
    """A fresh database cloned from ``template`` in a tablespace on a tmpfs of ``megabytes``:
    its superuser's URL and the disk; both gone afterwards."""
    root = Path(tempfile.mkdtemp(prefix="chronicle-small-disk-"))
    root.chmod(0o711)  # the server's user passes through to its tablespace
    mount = root / "disk"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0755", "chronicle-test", mount],
        check=True,
    )
    suffix = uuid.uuid4().hex[:16]
    name, tablespace = f"small_{suffix}", f"small_disk_{suffix}"
    admin = server.admin.url("postgres")
    try:
        location = mount / "tablespace"
        location.mkdir(mode=0o700)
        user = server_user()
        if user is not None:
            os.chown(location, user.uid, user.gid)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(
                sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                    sql.Identifier(tablespace), sql.Literal(str(location))
                )
            )
            connection.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} TABLESPACE {}").format(
                    sql.Identifier(name), sql.Identifier(template), sql.Identifier(tablespace)
                )
            )
        disk = SmallDisk(mount)
        try:
            yield server.admin.url(name), disk
        finally:
            disk.free()
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
                connection.execute(
                    sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(tablespace))
                )
    finally:
        subprocess.run(["umount", "--lazy", mount], check=False)
        shutil.rmtree(root, ignore_errors=True)
