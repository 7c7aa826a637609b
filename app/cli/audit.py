"""`chronicle verify | anchor`: prove the log was not rewritten, and sign heads to prove it later.

`anchor` verifies each session, then appends signed ``{session_id, last_seq, head,
anchored_at, key_id, signature}`` records (JSONL) to a file kept outside the database, signed
with the machine's key or one the operator brings (``--key``); `verify --anchors` checks a
session against them with the trusted public key (``--public-key``: nothing secret on the
verifying machine) and names every session the file does not cover.

Exit status of `verify`: 0 all checked out; 1 something is broken (or cannot be read); 3 with
``--anchors``, nothing is broken but some sessions have no anchor in the file (events a
superuser could rewrite unseen) — ``--allow-unanchored`` reports them and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path
from typing import TextIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.cli import archive as archive_cli
from app.cli import archive_dir as archive_dir_cli
from app.cli.log import open_store
from app.cli.session_ids import session_id
from app.config import Settings
from app.store import EventStore, VerifyReport
from app.store.integrity import (
    AnchorRecord,
    key_id,
    load_private_key,
    new_key_files,
    public_key_file,
    public_key_pem,
    read_anchors,
    session_ids,
    sign_anchor,
    signing_key,
    stored_blob_problem,
    stored_message_problem,
    trusted_public_key,
)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    verify_parser = commands.add_parser(
        "verify",
        help="check sessions: hash chain, sessions row, prompt messages, and signed anchors",
    )
    verify_parser.add_argument("session", type=session_id, nargs="?", metavar="SESSION")
    verify_parser.add_argument("--all", action="store_true", help="every session, and llm_messages")
    verify_parser.add_argument(
        "--anchors", type=Path, metavar="FILE", help="signed heads from `chronicle anchor`"
    )
    verify_parser.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="the trusted public key the anchors must be signed with (PEM, OpenSSH or raw; "
        "`anchor --new-key` writes one next to its key); default: this machine's anchor key",
    )
    verify_parser.add_argument(
        "--allow-unanchored",
        action="store_true",
        help="with --anchors, report sessions the file has no anchor of but exit 0 (default: 3)",
    )
    archive_cli.add_verify_arguments(verify_parser)

    anchor_parser = commands.add_parser(
        "anchor", help="verify sessions, then append their signed heads to a file (JSONL)"
    )
    anchor_parser.add_argument("sessions", type=session_id, nargs="*", metavar="SESSION")
    anchor_parser.add_argument("--all", action="store_true", help="every session")
    anchor_parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="append to FILE (default: standard output); its earlier anchors are checked first",
    )
    anchor_parser.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="sign with this Ed25519 private key (PEM, OpenSSH or raw), e.g. one the operator "
        "keeps off this machine; default: CHRONICLE_ANCHOR_KEY_FILE or data_dir/secrets",
    )
    anchor_parser.add_argument(
        "--new-key",
        type=Path,
        metavar="FILE",
        help="make a new signing key in FILE (0600) and its public half in FILE.pub, and exit",
    )
    anchor_parser.add_argument(
        "--print-public-key",
        action="store_true",
        help="print the anchor key's public half (for `verify --public-key`) and exit",
    )
    verify_parser.set_defaults(handler=verify)
    anchor_parser.set_defaults(handler=anchor)


def _describe(report: VerifyReport, anchored_up_to: int = 0) -> str:
    if not report.ok:
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        return f"BROKEN{where}: {report.reason}"
    if report.erased is not None:
        return f"ok: ERASED {report.erased.describe()}"
    mark = report.archived
    if mark is not None:
        archived = (
            f"ARCHIVED to {mark.archived_to} at {mark.archived_at:%Y-%m-%d %H:%M:%S} UTC by "
            f"{mark.archived_by} (manifest sha256 {mark.manifest})"
        )
        if mark.events_here < mark.events:
            return (
                f"ok: {archived}; {mark.events_here} of its {mark.events} events are still here "
                f"and agree with the archived head (prove the rest: chronicle verify --file "
                f"{mark.archived_to})"
            )
        return f"ok: {archived}; all {mark.events} events still here, hash chain intact"
    parts = [f"ok: {report.checked} events, hash chain intact, sessions row consistent"]
    if report.messages:
        parts.append(f"{report.messages} prompt messages match their hashes")
    if report.blobs:
        parts.append(f"{report.blobs} blobs match their hashes")
    if report.anchors:
        since = report.checked - anchored_up_to
        after = f" ({since} events after the last, not covered yet)" if since > 0 else ""
        parts.append(f"{report.anchors} anchors match{after}")
    parts.extend(f"{note.describe()} ({note.reason})" for note in report.redactions)
    return ", ".join(parts)


def _unanchored(report: VerifyReport) -> str:
    """A session the anchors file says nothing of, whose log otherwise checks out."""
    return (
        "NOT ANCHORED: the anchors file has no anchor of this session, so a rewrite of it "
        f"would go unseen (otherwise {_describe(report)})"
    )


def _anchored_up_to(records: list[AnchorRecord]) -> int:
    return max((record.last_seq for record in records), default=0)


def _uncovered_summary(sessions: list[uuid.UUID], shown: int = 20) -> str:
    listed = ", ".join(str(session) for session in sessions[:shown])
    more = f", and {len(sessions) - shown} more" if len(sessions) > shown else ""
    return f"not anchored: {len(sessions)} sessions ({listed}{more})"


def _anchors_by_session(records: list[AnchorRecord]) -> dict[uuid.UUID, list[AnchorRecord]]:
    grouped: dict[uuid.UUID, list[AnchorRecord]] = {}
    for record in records:
        grouped.setdefault(record.session_id, []).append(record)
    return grouped


async def verify(args: argparse.Namespace, settings: Settings) -> int:
    if args.file is not None:
        if args.session is not None or args.all or args.anchors:
            print(
                "error: --file checks the file alone: no SESSION, --all or --anchors",
                file=sys.stderr,
            )
            return 2
        if args.file.is_dir():  # an archive directory (`chronicle archive`)
            return await asyncio.to_thread(archive_dir_cli.verify_directory, args, settings)
        return await asyncio.to_thread(archive_cli.verify_file, args.file)
    if (args.session is None) == (not args.all):
        print("error: name one SESSION, or --all, or --file FILE", file=sys.stderr)
        return 2
    records = read_anchors(args.anchors) if args.anchors else []
    trusted = None
    if args.anchors or args.public_key:
        trusted = trusted_public_key(args.public_key, settings.anchor_key_file, settings.data_dir)
    anchored = _anchors_by_session(records)
    uncovered: list[uuid.UUID] = []
    async with await open_store(settings, long_running=True) as store:
        if not args.all:
            own = anchored.get(args.session, [])
            report = await store.verify(args.session, anchors=own, trusted=trusted)
            if report.ok and report.checked == 0 and not (report.archived or report.erased):
                print(f"session {args.session} has no events", file=sys.stderr)
                return 1
            if report.ok and args.anchors and not own:
                print(_unanchored(report))
                return _unanchored_status([args.session], args.allow_unanchored)
            print(_describe(report, _anchored_up_to(own)))
            return 0 if report.ok else 1
        broken = 0
        sessions = sorted(set(await session_ids(store)) | set(anchored))
        for session in sessions:
            own = anchored.get(session, [])
            report = await store.verify(session, anchors=own, trusted=trusted)
            broken += not report.ok
            if report.ok and args.anchors and not own:
                uncovered.append(session)
                print(f"{session}  {_unanchored(report)}", flush=True)
            else:
                print(f"{session}  {_describe(report, _anchored_up_to(own))}", flush=True)
        messages, problem = await stored_message_problem(store)
        broken += problem is not None
        print(f"llm_messages  BROKEN: {problem}" if problem else f"llm_messages  ok: {messages}")
        blobs, problem = await stored_blob_problem(store)
        broken += problem is not None
        print(f"blobs  BROKEN: {problem}" if problem else f"blobs  ok: {blobs}")
    if not sessions:
        print("no sessions", file=sys.stderr)
    if uncovered:
        print(_uncovered_summary(uncovered))
    if broken:
        return 1
    return _unanchored_status(uncovered, args.allow_unanchored) if uncovered else 0


#: `verify`'s exit status when nothing is broken but the anchors file misses sessions.
UNANCHORED_STATUS = 3


def _unanchored_status(sessions: list[uuid.UUID], allowed: bool) -> int:
    if allowed:
        print(
            f"warning: {len(sessions)} sessions are not anchored (accepted: --allow-unanchored); "
            "anchor them: chronicle anchor --all -o FILE",
            file=sys.stderr,
        )
        return 0
    print(
        f"{len(sessions)} sessions are not covered by the anchors file: anchor them "
        "(chronicle anchor --all -o FILE), or pass --allow-unanchored to accept that",
        file=sys.stderr,
    )
    return UNANCHORED_STATUS


async def anchor(args: argparse.Namespace, settings: Settings) -> int:
    if args.new_key is not None:
        made = new_key_files(args.new_key)
        print(
            f"made the anchor key {key_id(made.public_key())}: {args.new_key} (private: keep it "
            f"off this machine) and {public_key_file(args.new_key)} (for verify --public-key)"
        )
        return 0
    if args.key is not None:
        key, generated = load_private_key(args.key), False
    else:
        key, key_file, generated = signing_key(settings.anchor_key_file, settings.data_dir)
    if generated:
        print(
            f"generated the anchor key {key_file}; give auditors its public half "
            "(`chronicle anchor --print-public-key`) and keep the anchors off this machine",
            file=sys.stderr,
        )
    if args.print_public_key:
        print(f"# chronicle anchor key {key_id(key.public_key())}")
        print(public_key_pem(key.public_key()), end="")
        return 0
    if bool(args.sessions) == args.all:
        print("error: name the SESSIONs to anchor, or --all", file=sys.stderr)
        return 2
    earlier = _anchors_by_session(
        read_anchors(args.output) if args.output and args.output.exists() else []
    )
    async with await open_store(settings) as store:
        sessions = args.sessions or await session_ids(store)
        signed, failed = await _verified_heads(store, sessions, earlier, key)
    if signed:
        if args.output:
            with args.output.open("a", encoding="utf-8") as out:
                _write(out, signed)
        else:
            _write(sys.stdout, signed)
    where = f" to {args.output}" if args.output else ""
    print(
        f"anchored {len(signed)} sessions{where} (key {key_id(key.public_key())})"
        + (f"; {failed} not anchored" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0


async def _verified_heads(
    store: EventStore,
    sessions: list[uuid.UUID],
    earlier: dict[uuid.UUID, list[AnchorRecord]],
    key: Ed25519PrivateKey,
) -> tuple[list[AnchorRecord], int]:
    """Sign the head of every session that verifies (against its earlier anchors too)."""
    signed: list[AnchorRecord] = []
    failed = 0
    for session in sessions:
        report = await store.verify(
            session, anchors=earlier.get(session, []), trusted=key.public_key()
        )
        if report.ok and report.erased is not None:
            continue  # its tombstone is its signed record: there is no head to anchor
        if not report.ok or report.head is None:
            failed += 1
            problem = _describe(report) if not report.ok else "has no events"
            print(f"{session}  not anchored: {problem}", file=sys.stderr)
            continue
        # an archived session's head is the archived one, whatever is still here of it
        last_seq = report.archived.events if report.archived else report.checked
        signed.append(sign_anchor(key, session, last_seq, bytes.fromhex(report.head)))
    return signed, failed


def _write(out: TextIO, records: list[AnchorRecord]) -> None:
    for record in records:
        out.write(record.to_line() + "\n")
    out.flush()
