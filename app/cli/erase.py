"""`chronicle erase SESSION...` and `chronicle retention show|run`: sessions erased under a
signed tombstone, by hand or by the retention policies (docs/erasure.md).

An erasure cannot be undone: `chronicle erase` asks for `--reason` and prints each tombstone;
`chronicle retention show` says what a round would erase now without erasing anything. The
erased sessions then go from the exports and archives Chronicle wrote to this machine's disk
(app/cli/on_disk.py), but for the archive a retention policy wrote before erasing: that is
the record the policy keeps.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.progress import StderrProgress
from app.cli.session_ids import session_id
from app.config import Settings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from app.sessions.retention import ErasureOutcome
    from app.store import EventStore

#: A manual erasure's policy: the reason, after this.
MANUAL = "manual: "
#: What a tombstone's policy holds at most.
POLICY_CHARS = 200


def add_parsers(commands: argparse._SubParsersAction) -> None:
    erase = commands.add_parser(
        "erase",
        help="erase whole sessions: their events, blobs and prompt messages go, a signed "
        "tombstone stays (cannot be undone)",
    )
    erase.add_argument("sessions", nargs="+", type=session_id, metavar="SESSION")
    erase.add_argument("--reason", required=True, metavar="TEXT", help="why, in words")
    erase.add_argument("--json", action="store_true", help="one JSON object per session")
    erase.set_defaults(handler=erase_command)

    retention = commands.add_parser(
        "retention", help="the retention policies: what they erase now, or apply them once"
    )
    sub = retention.add_subparsers(dest="retention_command", required=True)
    show = sub.add_parser("show", help="each policy and the sessions it would erase now")
    show.add_argument("--json", action="store_true", help="one JSON object per policy")
    run = sub.add_parser("run", help="apply every policy once (archive first where it says)")
    run.add_argument("--json", action="store_true", help="one JSON object per policy")
    retention.set_defaults(handler=retention_command)


def _key(settings: Settings) -> Ed25519PrivateKey:
    from app.store.integrity import signing_key

    key, _, _ = signing_key(settings.anchor_key_file, settings.data_dir)
    return key


def _print(outcome: ErasureOutcome, as_json: bool) -> None:
    if as_json:
        print(outcome.model_dump_json())
        return
    for done in outcome.erased:
        stone = done.tombstone
        print(
            f"erased {stone.session_id}: {stone.last_seq} events (last hash "
            f"{stone.last_hash[:16]}...), {done.blobs_deleted} blobs and "
            f"{done.messages_deleted} prompt messages deleted; tombstone signed by key "
            f"{stone.key_id}"
        )
    for skipped in outcome.skipped:
        print(f"not erased {skipped.session_id}: {skipped.reason}", file=sys.stderr)
    if outcome.archived_to is not None:
        print(f"archived first to {outcome.archived_to}")


async def erased_on_disk(
    store: EventStore,
    outcomes: Sequence[ErasureOutcome],
    settings: Settings,
    *,
    as_json: bool,
) -> int:
    """The sessions erased removed from the copies on this machine's disk, and said so; the
    archives the policies wrote before erasing stay (their record). 1 while a copy holds one."""
    from app.cli.on_disk import report_disk_changes
    from app.store import existing_anchor_key, remove_sessions_on_disk

    erased = [done.tombstone.session_id for outcome in outcomes for done in outcome.erased]
    keep: list[Path] = [o.archived_to for o in outcomes if o.archived_to is not None]
    report = await remove_sessions_on_disk(
        store,
        erased,
        data_dir=settings.data_dir,
        key=existing_anchor_key(settings.anchor_key_file, settings.data_dir),
        keep=keep,
    )
    return report_disk_changes(report, as_json=as_json)


async def erase_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.sessions.platform_audit import terminal_actor
    from app.sessions.retention import erase_sessions

    reason = " ".join(args.reason.split())
    if not reason:
        print("error: --reason must say why", file=sys.stderr)
        return 2
    key = _key(settings)
    async with await open_store(settings) as store:
        outcome = await erase_sessions(
            store,
            list(dict.fromkeys(args.sessions)),
            key=key,
            actor=terminal_actor(),
            policy=(MANUAL + reason)[:POLICY_CHARS],
            progress=StderrProgress("erase"),
        )
        _print(outcome, args.json)
        on_disk = await erased_on_disk(store, [outcome], settings, as_json=args.json)
    return 1 if outcome.skipped or on_disk else 0


async def retention_command(args: argparse.Namespace, settings: Settings) -> int:
    from pydantic_core import to_json

    from app.sessions.platform_audit import terminal_actor
    from app.sessions.retention import apply_retention, due, owner_store

    policies = settings.retention.policies
    if not policies:
        print(
            "no retention policies: set retention_policies (docs/erasure.md#retention)",
            file=sys.stderr,
        )
        return 0
    async with await owner_store(settings) as store:
        if args.retention_command == "show":
            for policy in policies:
                chosen = await due(store, policy)
                if args.json:
                    print(to_json({"policy": policy, "sessions": chosen}).decode())
                    continue
                then = f", archived first to {policy.archive_to}" if policy.archive_to else ""
                print(f"{policy.name}: {len(chosen)} sessions would be erased now{then}")
                for session in chosen:
                    print(f"  {session}")
            return 0
        outcomes = await apply_retention(
            store,
            settings.retention,
            key=_key(settings),
            actor=terminal_actor(),
            progress=StderrProgress("erase"),
        )
        if outcomes is None:
            print("error: another process is applying the policies now", file=sys.stderr)
            return 1
        for outcome in outcomes:
            if not args.json:
                print(f"policy {outcome.policy}: {len(outcome.erased)} sessions erased")
            _print(outcome, args.json)
        on_disk = await erased_on_disk(store, outcomes, settings, as_json=args.json)
    return 1 if any(outcome.skipped for outcome in outcomes) or on_disk else 0
