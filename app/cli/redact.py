"""`chronicle redact SESSION --seq N [--field PATH] --reason TEXT`: remove the content of one
event of a session, or one field of it, keeping the proof of everything else
(docs/erasure.md). The part becomes a marker holding its digest, the hash chain still
verifies, and a ``redaction`` event records who (``cli:<login>``, or ``--user``), when, why and
what by hash; ``chronicle verify`` lists it apart from tampering."""

from __future__ import annotations

import argparse
import sys

from app.cli.numbers import seq_number
from app.cli.render import render_json, render_line
from app.cli.session_ids import session_id
from app.config import Settings
from app.events.commitment import RedactionPathError
from app.events.platform_audit import PLATFORM_LOG_ID


def add_parsers(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "redact",
        help="remove an event's content (or one field of it) and record who, when and why",
    )
    parser.add_argument("session", type=session_id, metavar="SESSION")
    parser.add_argument("--seq", type=seq_number, required=True, metavar="N", help="the event")
    parser.add_argument(
        "--field",
        default="",
        metavar="PATH",
        help="a JSON Pointer into its payload, /output or /response/content "
        "(default: the whole payload)",
    )
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why, in words")
    parser.add_argument("--user", metavar="NAME", help="who did it (default: cli:<your login>)")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.set_defaults(handler=redact)


async def redact(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.sessions.platform_audit import terminal_actor
    from app.store import RedactionRefused

    if not args.reason.strip():
        print("error: --reason must say why", file=sys.stderr)
        return 2
    user = args.user or terminal_actor().name
    async with await open_store(settings) as store:
        last = await store.last_seq(args.session)
        if last == 0 or args.session == PLATFORM_LOG_ID:
            print(f"error: there is no session {args.session}", file=sys.stderr)
            return 1
        if args.seq > last:
            print(
                f"error: session {args.session} has no event {args.seq} (its last is {last})",
                file=sys.stderr,
            )
            return 1
        try:
            records = await store.redact(
                args.session, args.seq, args.field, reason=args.reason, user=user
            )
        except (RedactionPathError, RedactionRefused) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for recorded in records:  # this one, then where the content it named was named too
        print(render_json(recorded) if args.json else render_line(recorded))
    return 0
