"""A test's embedded server survives another pytest session starting on the machine.

Each starting session makes pytest's temporary root (``pytest-of-<user>``) 0700 again. As
root the server runs as pgserver's user, who must pass through the data dir's parents: a
data dir under ``tmp_path`` was then unreachable, and initdb, ``pg_ctl start`` or a restart
failed with "Permission denied" (``test_subscriptions_survive_server_restart`` and the
trust-era upgrade test failed that way now and then). With the data dir under ``tmp_path``
this test fails every time as root; the ``data_dir`` fixture puts it beneath /tmp itself.
"""

from __future__ import annotations

import stat
from pathlib import Path

import psycopg
import pytest

from app.store.embedded import EmbeddedPostgres

pytestmark = pytest.mark.slow


def test_a_pytest_session_starting_meanwhile_leaves_the_server_reachable(
    data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    server = EmbeddedPostgres(data_dir)
    try:
        server.ensure_running()
        # What pytest's getbasetemp does to its root when a session starts.
        root = tmp_path_factory.getbasetemp().parent
        root.chmod(stat.S_IMODE(root.stat().st_mode) & ~0o077)

        server.restart()
        urls = server.ensure_running()
        with psycopg.connect(urls.app) as connection:
            assert connection.execute("SELECT current_user").fetchone() == ("chronicle_app",)
    finally:
        server.stop()
