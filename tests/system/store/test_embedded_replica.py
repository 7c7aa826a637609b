"""`chronicle db replica` makes a hot standby of the embedded PostgreSQL: events appended on
the primary reach it with the same hashes and verify there, it refuses writes, and once
promoted it takes them, continuing the same chains. Real servers, the real command."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest

from app.config import Settings
from app.events import Message, SessionCreated
from app.store import EventStore, RefusedForNowError
from app.store.embedded import EmbeddedPostgres, slot_name
from tests.support.cli import chronicle, empty_settings_file
from tests.support.waiting import until

MESSAGES = 20


def _env(tmp_path: Path, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CHRONICLE_DATABASE_URL"}
    env["CHRONICLE_DATA_DIR"] = str(data_dir)  # not under tmp_path: see data_dir's doc
    env["CHRONICLE_CONFIG"] = str(empty_settings_file(tmp_path))
    return env


def _ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return str(result.stdout)


def _url(output: str) -> str:
    return next(
        line.removeprefix("url: ") for line in output.splitlines() if line.startswith("url: ")
    )


@pytest.mark.slow
async def test_replica_streams_refuses_writes_and_takes_them_once_promoted(
    tmp_path: Path, data_dir: Path
) -> None:
    env = _env(tmp_path, data_dir)
    replica_dir = data_dir.parent / "replica" / "data"  # stopped by data_dir's fixture too
    where = ["--dir", str(replica_dir)]
    settings = Settings(data_dir=data_dir)
    session = uuid.uuid4()
    try:
        primary_url = _ok(chronicle("db", "url", "--show-password", env=env)).strip()
        made = _ok(chronicle("db", "replica", *where, "--show-password", env=env))
        assert "made and started" in made
        replica_url = _url(made)
        assert "port=5433" in replica_url and str(replica_dir) in replica_url
        with psycopg.connect(primary_url) as primary:
            slots = primary.execute(
                "SELECT slot_type, active FROM pg_replication_slots WHERE slot_name = %s",
                (slot_name(replica_dir.resolve()),),
            ).fetchall()
        assert slots == [("physical", True)]  # the standby streams through its own slot

        async with await EventStore.open(primary_url, masker=settings.masker()) as store:
            events = [SessionCreated(config={})] + [
                Message(content=f"message {n}") for n in range(MESSAGES)
            ]
            written = await store.append(session, events, expected_seq=0)

        async with await EventStore.open(replica_url, masker=settings.masker()) as replica:

            async def caught_up() -> bool:
                return len(await replica.read(session)) == len(written)

            await until(caught_up, timeout=15, what="the replica to replay the appends")
            read = await replica.read(session)
            assert [e.hash for e in read] == [e.hash for e in written]
            assert [e.payload for e in read] == [e.payload for e in written]
            report = await replica.verify(session)
            assert report.ok and report.checked == len(written), report.reason

            status = _ok(chronicle("db", "replica", "status", *where, env=env))
            assert "hot standby (reads only)" in status and "stream: streaming" in status
            assert "lag: 0 bytes" in status, status

            with pytest.raises(RefusedForNowError) as refused:
                await replica.append(session, [Message(content="on the standby")])
            assert refused.value.sqlstate == "25006"
            assert "takes no writes" in str(refused.value)
        assert len(read) == len(written)  # nothing was written by the refused append

        replica_env = {**env, "CHRONICLE_DATABASE_URL": replica_url}
        verified = _ok(chronicle("verify", str(session), env=replica_env))
        assert f"ok: {len(written)} events" in verified, verified

        assert _ok(chronicle("db", "replica", "stop", *where, env=env)).startswith(
            "replica stopped"
        )
        stopped = chronicle("db", "replica", "status", *where, env=env)
        assert stopped.returncode == 1 and "state: stopped" in stopped.stdout
        again = _ok(chronicle("db", "replica", *where, env=env))
        assert "replica running" in again  # started again, streaming from where it stopped
        shown = _ok(chronicle("db", "replica", "url", *where, "--show-password", env=env))
        assert shown.strip() == replica_url

        promoted = _ok(chronicle("db", "replica", "promote", *where, env=env))
        assert "promoted" in promoted
        async with await EventStore.open(replica_url, masker=settings.masker()) as replica:
            more = await replica.append(
                session, [Message(content="after failover")], expected_seq=len(written)
            )
            assert more[0].seq == len(written) + 1
            report = await replica.verify(session)
            assert report.ok and report.checked == len(written) + 1, report.reason
        status = _ok(chronicle("db", "replica", "status", *where, env=env))
        assert "promoted (takes writes)" in status
        with psycopg.connect(primary_url) as primary:  # its slot went with the promotion
            assert primary.execute("SELECT count(*) FROM pg_replication_slots").fetchone() == (0,)

        removed = _ok(chronicle("db", "replica", "remove", *where, env=env))
        assert "deleted" in removed and not replica_dir.exists()
    finally:
        if (replica_dir / "postgres").exists():
            EmbeddedPostgres(replica_dir).stop()


@pytest.mark.slow
async def test_a_synchronous_replica_holds_every_acknowledged_append(
    tmp_path: Path, data_dir: Path
) -> None:
    """``--synchronous``: an append on the primary returns only once the standby has it; while
    the standby is stopped appends wait (none is acknowledged that it lacks); once it streams
    again they return; removing it lets the primary commit alone."""
    env = _env(tmp_path, data_dir)
    replica_dir = data_dir.parent / "replica" / "sync"
    where = ["--dir", str(replica_dir)]
    settings = Settings(data_dir=data_dir)
    session = uuid.uuid4()
    try:
        primary_url = _ok(chronicle("db", "url", "--show-password", env=env)).strip()
        made = _ok(chronicle("db", "replica", *where, "--synchronous", env=env))
        assert "synchronous: the primary's commits wait for it" in made

        async with await EventStore.open(primary_url, masker=settings.masker()) as store:

            async def synchronous() -> bool:
                status = chronicle("db", "replica", "status", *where, env=env).stdout
                return "stream: streaming, sync" in status

            await until(synchronous, timeout=15, what="the standby to stream synchronously")
            await store.append(session, [SessionCreated(config={})], expected_seq=0)

            _ok(chronicle("db", "replica", "stop", *where, env=env))
            waiting = asyncio.create_task(
                store.append(session, [Message(content="held")], expected_seq=1)
            )
            done, _ = await asyncio.wait({waiting}, timeout=2.0)
            assert not done, "an append returned with its synchronous standby stopped"

            _ok(chronicle("db", "replica", *where, env=env))  # streams again
            held = await asyncio.wait_for(waiting, timeout=30)
            assert held[0].seq == 2

            _ok(chronicle("db", "replica", "remove", *where, env=env))
            with psycopg.connect(primary_url) as primary:
                named = primary.execute("SHOW synchronous_standby_names").fetchone()
            assert named == ("",)
            alone = await asyncio.wait_for(
                store.append(session, [Message(content="alone")], expected_seq=2), timeout=10
            )
            assert alone[0].seq == 3
    finally:
        if (replica_dir / "postgres").exists():
            EmbeddedPostgres(replica_dir).stop()


def test_replica_says_what_to_do_without_a_running_embedded_server(
    tmp_path: Path, data_dir: Path
) -> None:
    env = _env(tmp_path, data_dir)
    where = ["--dir", str(data_dir.parent / "replica" / "data")]
    not_running = chronicle("db", "replica", *where, env=env)
    assert not_running.returncode == 1
    assert "is not running; start it with `chronicle db up`" in not_running.stderr
    assert "Traceback" not in not_running.stderr
    missing = chronicle("db", "replica", "status", *where, env=env)
    assert missing.returncode == 1
    assert "there is no replica in" in missing.stderr and "Traceback" not in missing.stderr

    configured = {**env, "CHRONICLE_DATABASE_URL": "postgresql://someone@elsewhere/db"}
    for action in ("start", "status", "promote", "stop"):
        refused = chronicle("db", "replica", action, env=configured)
        assert refused.returncode == 1
        assert "a database URL is configured" in refused.stdout
        assert "pg_basebackup -R" in refused.stdout
