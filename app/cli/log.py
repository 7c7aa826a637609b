"""`chronicle events | append | demo | sessions`: reading and writing the log from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid
from datetime import UTC, datetime, timedelta

from app.cli.numbers import positive, seq_after, seq_number
from app.cli.render import render_json, render_line
from app.cli.session_ids import session_id
from app.config import Settings
from app.sessions.sql.session_rows import LISTED_STATES
from app.store import EventStore, admin_database_url, ensure_database_async

SPANS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_time(text: str) -> datetime:
    """A moment from ``--since``: ISO date or time (local time unless it has an offset), or a
    span back from now such as ``90s``, ``30m``, ``2h``, ``7d``, ``2w``."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if found:
        seconds = float(found.group(1)) * SPANS[found.group(2)]
        return datetime.now(UTC) - timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a date or time (2026-12-01, 2026-12-01T14:30) nor a span "
            "back from now (30m, 2h, 7d)"
        ) from None
    return moment if moment.tzinfo else moment.astimezone()


def add_parsers(commands: argparse._SubParsersAction) -> None:
    events_parser = commands.add_parser("events", help="print a session's events")
    events_parser.add_argument("session", type=session_id, metavar="SESSION")
    events_parser.add_argument(
        "--follow", "-f", action="store_true", help="keep printing new events"
    )
    events_parser.add_argument("--json", action="store_true", help="one JSON object per line")
    events_parser.add_argument(
        "--after", type=seq_after, default=0, metavar="SEQ", help="start after SEQ"
    )

    append_parser = commands.add_parser("append", help="append one event to a session")
    append_parser.add_argument("session", type=session_id, metavar="SESSION")
    append_parser.add_argument("kind", help="event kind, e.g. message")
    append_parser.add_argument(
        "payload", nargs="?", default="{}", help='the fields as JSON, e.g. \'{"content": "hi"}\''
    )
    append_parser.add_argument("--source", help="override the kind's default source")
    append_parser.add_argument(
        "--cause", type=seq_number, metavar="SEQ", help="seq of the event this one answers"
    )
    append_parser.add_argument(
        "--json", action="store_true", help="print the recorded event as JSON"
    )

    demo_parser = commands.add_parser("demo", help="record a short example session and print it")

    sessions_parser = commands.add_parser("sessions", help="the latest sessions, one line each")
    sessions_parser.add_argument(
        "--limit", type=positive, default=20, metavar="N", help="at most N (default 20)"
    )
    sessions_parser.add_argument(
        "--state",
        choices=LISTED_STATES,
        help="only sessions in this state (running and interrupted: the agent was working, "
        "and a process runs it still, or none does)",
    )
    sessions_parser.add_argument("--model", help="only sessions whose last model call used MODEL")
    sessions_parser.add_argument(
        "--since",
        type=since_time,
        metavar="WHEN",
        help="only sessions started since WHEN: a date or time (2026-12-01, "
        "2026-12-01T14:30, with an offset or local time) or a span back from now (30m, 2h, 7d)",
    )
    sessions_parser.add_argument("--json", action="store_true", help="one JSON object per line")
    events_parser.set_defaults(handler=events)
    append_parser.set_defaults(handler=append)
    demo_parser.set_defaults(handler=demo)
    sessions_parser.set_defaults(handler=sessions)


async def open_store(settings: Settings, *, long_running: bool = False) -> EventStore:
    """The store on the configured database, or on the embedded one (started if needed);
    ``long_running``: without a statement timeout (``StoreConfig.long_running``)."""
    database = settings.database_config()
    url = await ensure_database_async(database)
    config = settings.store.long_running() if long_running else settings.store
    return await EventStore.open(
        url, config=config, masker=settings.masker(), read_dsns=database.read_database_urls
    )


async def open_owner_store(settings: Settings) -> EventStore:
    """The store through the database owner's login: for what the application's login may not
    write (an admin, a token for an admin; migration 0014)."""
    config = settings.database_config()
    await ensure_database_async(config)  # the embedded server started and migrated
    url = await asyncio.to_thread(admin_database_url, config)
    return await EventStore.open(url, config=settings.store, masker=settings.masker())


async def events(args: argparse.Namespace, settings: Settings) -> int:
    render = render_json if args.json else render_line
    async with await open_store(settings) as store:
        if not args.follow:
            found = await store.read(args.session, after_seq=args.after)
            if not found and await store.last_seq(args.session) == 0:
                print(f"session {args.session} has no events", file=sys.stderr)
                return 1
            for event in found:
                print(render(event))
            return 0
        async with store.subscribe(args.session, after_seq=args.after) as stream:
            async for event in stream:
                print(render(event), flush=True)
    return 0


async def append(args: argparse.Namespace, settings: Settings) -> int:
    try:
        fields = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        print(f"error: the payload is not JSON ({exc})", file=sys.stderr)
        return 2
    if not isinstance(fields, dict):
        print("error: the payload must be a JSON object", file=sys.stderr)
        return 2
    event = {**fields, "kind": args.kind}
    if args.source:
        event["source"] = args.source
    if args.cause is not None:
        event["cause"] = args.cause
    async with await open_store(settings) as store:
        [recorded] = await store.append(args.session, [event])
    print(render_json(recorded) if args.json else render_line(recorded))
    return 0


async def demo(args: argparse.Namespace, settings: Settings) -> int:
    from app.events import AgentState, Finish, Message, Run, RunOutput, SessionCreated

    session = uuid.uuid4()
    async with await open_store(settings) as store:
        await store.append(
            session,
            [
                SessionCreated(title="demo: a recorded session", config={"agent": "demo"}),
                Message(content="How many files are in the workspace?"),
                AgentState(state="running"),
                Run(command="ls | wc -l", thought="count the files", cause=None),
            ],
            expected_seq=0,
        )
        await store.append(
            session,
            [
                RunOutput(output="3\n", exit_code=0, cause=4),
                Message(content="There are 3 files.", source="agent"),
                Finish(message="answered"),
                AgentState(state="finished"),
            ],
            expected_seq=4,
        )
        for event in await store.read(session):
            print(render_line(event))
    print(
        f"\nsession {session} recorded. Try:\n"
        f"  chronicle events {session} --json\n  chronicle verify {session}"
    )
    return 0


async def sessions(args: argparse.Namespace, settings: Settings) -> int:
    from app.sessions.summary import recent_sessions

    filtered = args.state or args.model or args.since
    async with await open_store(settings) as store:
        found = await recent_sessions(
            store,
            args.limit,
            state=args.state,
            model=args.model,
            since=args.since,
            config=settings.projections,
        )
    if not found:
        if filtered:
            print("no sessions match", file=sys.stderr)
        else:
            print("no sessions yet (`chronicle demo` records one)", file=sys.stderr)
        return 0
    for summary in found:
        if args.json:
            print(summary.model_dump_json())
            continue
        when = summary.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        state = summary.state or "-"
        print(
            f"{summary.id}  {when}  {state:<19} {summary.events:>6} events  "
            f"{summary.model_calls:>4} calls  {summary.cost_text():>10}  {summary.title or ''}"
        )
    return 0
