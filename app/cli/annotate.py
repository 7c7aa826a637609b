"""`chronicle annotate SESSION [--seq N] --label L [--comment C] [--tag T]`: label a session or
one of its events from a terminal, as the page's Annotate does (an ``annotation`` event in the
session's log; app/events/annotation.py). Who wrote it is the login that runs the command,
``cli:<login>``, as the platform audit trail names it; ``--user`` names someone else."""

from __future__ import annotations

import argparse
import sys

from app.cli.numbers import seq_number
from app.cli.render import render_json, render_line
from app.cli.session_ids import session_id
from app.config import Settings
from app.events import InvalidEventError, parse_event
from app.events.annotation import SUGGESTED_LABELS
from app.events.platform_audit import PLATFORM_LOG_ID


def add_parsers(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "annotate",
        help="label a session or one of its events (unsafe command, wrong answer, reviewed, ...)",
    )
    parser.add_argument("session", type=session_id, metavar="SESSION")
    parser.add_argument(
        "--seq", type=seq_number, metavar="N", help="the event it is about (default: the session)"
    )
    parser.add_argument(
        "--label",
        required=True,
        metavar="L",
        help=f"free text; the page suggests: {', '.join(SUGGESTED_LABELS)}",
    )
    parser.add_argument("--comment", default="", metavar="C", help="why, in words")
    parser.add_argument(
        "--tag", action="append", default=[], metavar="T", help="a free tag (again for more)"
    )
    parser.add_argument("--user", metavar="NAME", help="who wrote it (default: cli:<your login>)")
    parser.add_argument("--json", action="store_true", help="print the recorded event as JSON")
    parser.set_defaults(handler=annotate)


async def annotate(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.sessions.platform_audit import terminal_actor

    user = args.user or terminal_actor().name
    try:
        event = parse_event(
            {"kind": "annotation", "label": args.label, "comment": args.comment,
             "tags": args.tag, "target_seq": args.seq, "user": user}
        )  # fmt: skip
    except InvalidEventError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    async with await open_store(settings) as store:
        last = await store.last_seq(args.session)
        if last == 0 or args.session == PLATFORM_LOG_ID:
            print(f"error: there is no session {args.session}", file=sys.stderr)
            return 1
        if args.seq is not None and args.seq > last:
            print(
                f"error: session {args.session} has no event {args.seq} (its last is {last})",
                file=sys.stderr,
            )
            return 1
        [recorded] = await store.append(args.session, [event])
    print(render_json(recorded) if args.json else render_line(recorded))
    return 0
