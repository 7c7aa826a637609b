"""`chronicle redact SESSION --seq N [--field PATH] --reason TEXT`: remove the content of one
event of a session, or one field of it, keeping the proof of everything else
(docs/erasure.md). The part becomes a marker holding its digest, the hash chain still
verifies, and a ``redaction`` event records who (``cli:<login>``, or ``--user``), when, why and
what by hash; ``chronicle verify`` lists it apart from tampering. The exports and archives
Chronicle wrote to this machine's disk that hold the event then take the same marker (and
the views and ATIF files lose the part's strings, read before it went).

`chronicle redact --value-file FILE (--all | SESSION...) --reason TEXT`: have the masker
replace a secret (the file's text, never the command line, which ``ps`` and shell histories
show) in whatever is recorded from now on, then find it everywhere the log holds it, redact
each place, and say where it was; then in the exports and archives Chronicle wrote to this
machine's disk (app/cli/on_disk.py, app/store/on_disk/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.numbers import seq_number
from app.cli.render import render_json, render_line
from app.cli.session_ids import session_id
from app.config import Settings
from app.events.commitment import RedactionPathError
from app.events.platform_audit import PLATFORM_LOG_ID

if TYPE_CHECKING:
    from app.store import EventStore


def add_parsers(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "redact",
        help="remove an event's content (or one field of it) and record who, when and why",
    )
    parser.add_argument("sessions", nargs="*", type=session_id, metavar="SESSION")
    parser.add_argument("--seq", type=seq_number, metavar="N", help="the event")
    parser.add_argument(
        "--field",
        default="",
        metavar="PATH",
        help="a JSON Pointer into its payload, /output or /response/content "
        "(default: the whole payload)",
    )
    parser.add_argument(
        "--value-file",
        type=Path,
        metavar="FILE",
        help="redact the secret this file holds wherever it is (its text, less one final "
        "newline), in the SESSIONs or with --all in every session",
    )
    parser.add_argument("--all", action="store_true", help="with --value-file: every session")
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why, in words")
    parser.add_argument("--user", metavar="NAME", help="who did it (default: cli:<your login>)")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.set_defaults(handler=redact)


async def redact(args: argparse.Namespace, settings: Settings) -> int:
    if not args.reason.strip():
        return _usage("--reason must say why")
    if args.value_file is not None:
        if args.seq is not None or args.field:
            return _usage("--value-file finds the places itself: no --seq or --field")
        if args.all == bool(args.sessions):
            return _usage("--value-file needs --all or the SESSIONs to search")
        return await _redact_value(args, settings)
    if len(args.sessions) != 1 or args.seq is None or args.all:
        return _usage("name one SESSION and its event (--seq N), or use --value-file")
    return await _redact_event(args, settings)


def _usage(problem: str) -> int:
    print(f"error: {problem}", file=sys.stderr)
    return 2


def _user(args: argparse.Namespace) -> str:
    from app.sessions.platform_audit import terminal_actor

    return str(args.user or terminal_actor().name)


async def _redact_event(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.cli.on_disk import report_disk_changes
    from app.store import (
        RedactedPart,
        RedactionRefused,
        existing_anchor_key,
        remove_parts_on_disk,
        texts_of_part,
    )

    [session] = args.sessions
    async with await open_store(settings) as store:
        last = await store.last_seq(session)
        if last == 0 or session == PLATFORM_LOG_ID:
            print(f"error: there is no session {session}", file=sys.stderr)
            return 1
        if args.seq > last:
            print(
                f"error: session {session} has no event {args.seq} (its last is {last})",
                file=sys.stderr,
            )
            return 1
        try:
            # first: once it is redacted, the log holds only its digest
            texts = await texts_of_part(store, session, args.seq, args.field)
            records = await store.redact(
                session, args.seq, args.field, reason=args.reason, user=_user(args)
            )
        except (RedactionPathError, RedactionRefused) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        for recorded in records:  # this one, then where the content it named was named too
            print(render_json(recorded) if args.json else render_line(recorded))
        on_disk = await remove_parts_on_disk(
            store,
            [RedactedPart.of(recorded) for recorded in records],
            texts,
            data_dir=settings.data_dir,
            key=existing_anchor_key(settings.anchor_key_file, settings.data_dir),
        )
    return report_disk_changes(on_disk, as_json=args.json)


async def _redact_value(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.events.masking import worth_masking
    from app.store import RedactionRefused, redact_value

    try:
        value = args.value_file.read_text(encoding="utf-8").removesuffix("\n")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.value_file}: {exc}", file=sys.stderr)
        return 1
    if not worth_masking(value):
        print(
            "error: the value is too short or too plain to search for (at least 8 characters, "
            "not only digits): it would match where it is not the secret",
            file=sys.stderr,
        )
        return 2
    async with await open_store(settings) as store:
        await _mask_from_now_on(store, value, args)  # first: no new copy while we search
        try:
            found = await redact_value(
                store,
                value,
                sessions=None if args.all else args.sessions,
                reason=args.reason,
                user=_user(args),
            )
        except (RedactionPathError, RedactionRefused) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for recorded in found.records:
        print(render_json(recorded) if args.json else render_line(recorded))
    for kept in found.kept:  # archived sessions: their archives are rewritten below
        print(kept.model_dump_json() if args.json else kept.describe())
    where = {str(record.session_id) for record in found.records}
    print(f"{len(found.records)} redactions in {len(where)} sessions", file=sys.stderr)
    on_disk = await _redact_on_disk(value, args, settings)
    if found.kept:
        print(
            f"error: the value is still in the database in {len(found.kept)} events of "
            "archived sessions (listed above)",
            file=sys.stderr,
        )
        return 1
    return on_disk


async def _mask_from_now_on(store: EventStore, value: str, args: argparse.Namespace) -> None:
    """Have the masker replace the value in whatever is recorded from now on, by every process
    (it keeps only a keyed hash: app/store/masked_secrets.py), and say so."""
    from app.events.found_secrets import NotMaskableError

    try:
        masked = await store.mask_found_secret(value, user=_user(args), reason=args.reason)
    except NotMaskableError as exc:
        print(f"warning: not added to the masker: {exc}", file=sys.stderr)
        return
    known = "added to the masker" if masked.added else "already known to the masker"
    print(f"{known}: recorded as {masked.name} from now on", file=sys.stderr)


async def _redact_on_disk(value: str, args: argparse.Namespace, settings: Settings) -> int:
    """The copies Chronicle wrote to this machine's disk (exports, archives), searched too."""
    from app.cli.log import open_store
    from app.cli.on_disk import report_on_disk
    from app.store import existing_anchor_key, redact_on_disk

    async with await open_store(settings) as store:
        report = await redact_on_disk(
            store,
            value,
            data_dir=settings.data_dir,
            sessions=None if args.all else args.sessions,
            key=existing_anchor_key(settings.anchor_key_file, settings.data_dir),
        )
    return report_on_disk(report, as_json=args.json)
