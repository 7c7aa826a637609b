"""`chronicle db replica [start|status|url|promote|stop|remove]`: a local hot standby of the
embedded PostgreSQL, streaming from it (``app.store.embedded.replica``), to try read replicas
and failover on one machine."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.config import Settings
from app.store import failover_url, redact

if TYPE_CHECKING:
    from app.store.embedded import EmbeddedReplica

ACTIONS = ("start", "status", "url", "promote", "stop", "remove")

#: What to say when Chronicle uses a server it did not start.
CONFIGURED = (
    "a database URL is configured (CHRONICLE_DATABASE_URL); `chronicle db replica` makes "
    "standbys of the embedded PostgreSQL only. For your own server, make a standby with its "
    "tools (pg_basebackup -R --slot ... against it) and see docs/configuration.md"
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    replica = sub.add_parser(
        "replica",
        help="a local hot standby of the embedded PostgreSQL (make/start, status, promote, ...)",
        description="start (the default) makes the standby the first time (base backup, "
        "replication slot) or starts it again, and prints its URL; status shows its lag; "
        "promote makes it take writes; stop stops it (its slot keeps WAL for it); remove "
        "stops it, drops its slot and deletes its directory.",
    )
    replica.add_argument("action", nargs="?", choices=ACTIONS, default="start")
    replica.add_argument(
        "--dir",
        type=Path,
        help="the standby's own directory (default: DATA_DIR/replica)",
    )
    replica.add_argument(
        "--port",
        type=int,
        default=None,
        help="the standby's port, which names its socket (default: 5433); when making it",
    )
    replica.add_argument(
        "--synchronous",
        action="store_true",
        help="when making it: the primary's commits return only once the standby has them "
        "(no acknowledged append lost when the primary dies; while it is stopped, commits wait)",
    )
    replica.add_argument(
        "--failover",
        action="store_true",
        help="with url: a write URL naming the primary and then the standby "
        "(target_session_attrs=read-write), for CHRONICLE_DATABASE_URL: after `promote`, "
        "Chronicle goes on against the standby without a restart",
    )
    replica.add_argument(
        "--show-password", action="store_true", help="print the URL's password too (a secret)"
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.store.embedded import STANDBY_PORT, EmbeddedPostgres, EmbeddedReplica

    # A configured URL may be this very server's failover URL (`url --failover`): the
    # command still serves the embedded server it was made from.
    if settings.database_url and not EmbeddedPostgres(settings.data_dir).status().initialised:
        print(f"error: {CONFIGURED}")
        return 1
    replica = EmbeddedReplica(settings.data_dir, args.dir or settings.data_dir / "replica")

    def shown(url: str) -> str:
        return url if args.show_password else redact(url)

    action = args.action
    if action == "start":
        url, made = replica.start(args.port or STANDBY_PORT, synchronous=args.synchronous)
        what = "made and started" if made else "running"
        print(f"replica {what} in {replica.directory} (a hot standby: reads only)")
        if made and args.synchronous:
            print("synchronous: the primary's commits wait for it (while it is stopped too)")
        print(f"url: {shown(url)}")
        print(
            "reads on it: CHRONICLE_READ_DATABASE_URL=URL; failing over to it: "
            "CHRONICLE_DATABASE_URL=$(chronicle db replica url --failover --show-password)"
        )
        return 0
    if action == "url":
        url = replica.url()
        if args.failover:
            primary = EmbeddedPostgres(settings.data_dir).status().url
            if primary is None:
                print("error: the primary is not running; start it (`chronicle db up`) first")
                return 1
            url = failover_url([primary, url])
        print(shown(url))
        return 0
    if action == "status":
        return _status(replica, shown)
    if action == "promote":
        dropped = replica.promote()
        print("replica promoted: it takes writes now, and streams from nothing")
        if not dropped:
            print("note: the old primary is not running; drop its slot there when it is back")
        return 0
    if action == "stop":
        stopped = replica.stop()
        print("replica stopped" if stopped else "replica was not running")
        if stopped:
            print("note: the primary keeps WAL for it until it streams again or is removed")
        return 0
    if action == "remove":
        dropped = replica.remove()
        print(f"replica removed: {replica.directory} deleted")
        if not dropped:
            print("note: the primary is not running; its slot for this replica is left there")
        return 0
    raise AssertionError(action)


def _status(replica: EmbeddedReplica, shown: Callable[[str], str]) -> int:
    status = replica.status()
    print(f"replica: {status.directory} (port {status.port}, slot {status.slot})")
    if not status.running:
        print("state: stopped (`chronicle db replica` starts it)")
        return 1
    role = "hot standby (reads only)" if status.in_recovery else "promoted (takes writes)"
    print(f"state: running, {role}")
    if status.url is not None:
        print(f"url: {shown(status.url)}")
    if not status.in_recovery:
        return 0
    if not status.primary_running:
        print("primary: not running (the standby waits for it; `promote` to fail over)")
        return 0
    stream = status.stream_state or "not connected"
    sync = f", {status.sync_state}" if status.sync_state else ""
    print(f"stream: {stream}{sync}")
    seconds = f"{status.lag_seconds:.3f} s" if status.lag_seconds is not None else "unknown s"
    print(
        f"lag: {status.lag_bytes} bytes, {seconds} "
        f"(replayed to {status.replay_lsn}, primary at {status.primary_lsn})"
    )
    if status.retained_bytes is not None:
        print(f"slot keeps: {status.retained_bytes} bytes of WAL on the primary")
    return 0
