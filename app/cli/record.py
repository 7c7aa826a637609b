"""`chronicle record [--session NAME] [--workspace DIR] -- COMMAND ...`: run any agent's
command with its model calls going through a running `chronicle serve`'s gateway, recorded
as a session of agent kind ``external`` (app/external/record.py says what is recorded).

Like ``chronicle run``, the command works on the deployment's database itself (the same
settings as the server's): it holds the session's claim while the command runs, records the
workspace, and mints the command's token as ``chronicle tokens create`` does. The gateway is
the server at ``--url`` (``CHRONICLE_URL``, default the server's own default address); it
must answer before anything is recorded: this command starts no server.

Exit codes: the command's own; 127 when the command is not found, 126 when it cannot be run;
1 (with one sentence) when the recording cannot start.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.gateway_client import gateway_user
from app.cli.gateway_limits import add_limit_options, session_limits_config
from app.cli.session_ids import session_id
from app.cli.users import DEFAULT_SERVER_URL
from app.config import Settings

if TYPE_CHECKING:
    from app.external.record import Recording
    from app.store import EventStore


def add_parsers(commands: argparse._SubParsersAction) -> None:
    record = commands.add_parser(
        "record",
        help="run an agent's command with its model calls recorded through the gateway of a "
        "running chronicle serve",
        description="Run COMMAND with OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL and "
        "ANTHROPIC_API_KEY pointing at the gateway (a token of the session's, revoked when it "
        "ends); record the command line, the workspace at the start and its change at the end, "
        "the exit code and the wall time; exit with the command's exit code.",
    )
    record.add_argument(
        "--session",
        metavar="NAME",
        help="record into this session (a UUID, or a name: the user's session of that name, "
        "made on first use); default: a new session",
    )
    record.add_argument(
        "--workspace",
        type=Path,
        help="the directory the command works in and whose change is recorded (default: the "
        "current directory)",
    )
    record.add_argument(
        "--url",
        default=os.environ.get("CHRONICLE_URL") or DEFAULT_SERVER_URL,
        help=f"the running chronicle serve (default: CHRONICLE_URL, else {DEFAULT_SERVER_URL})",
    )
    record.add_argument(
        "--user",
        default=os.environ.get("CHRONICLE_USER"),
        help="whose session and token it is (default: CHRONICLE_USER, else your login name)",
    )
    record.add_argument(
        "--replay",
        type=session_id,
        metavar="SESSION",
        help="replay this recorded session: the gateway answers the command's model calls "
        "from it and calls no model; exit 0 when they matched, 3 when they diverged "
        "(see docs/gateway.md)",
    )
    record.add_argument(
        "--mode",
        choices=["strict", "positional"],
        default="strict",
        help="with --replay: strict stops at the first request that differs; positional "
        "serves the recorded answer anyway and reports the difference (default: strict)",
    )
    record.add_argument(
        "--on-divergence",
        choices=["stop", "live"],
        default="stop",
        help="with --replay: stop the command at a divergence, or go on with the real model "
        "from there, recorded in the replay session (default: stop)",
    )
    add_limit_options(record, clearable=False)  # a new session's own limits (docs/gateway.md)
    # not "command": the subcommand's own name is args.command
    record.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    record.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_owner_store, open_store
    from app.external.agent_command import RecordError, find_command
    from app.external.record import Recording, check_gateway, check_server, record

    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    workspace = Path(os.path.abspath(args.workspace or Path.cwd()))  # noqa: ASYNC240
    try:
        if not workspace.is_dir():  # noqa: ASYNC240 - one stat
            raise RecordError(f"the workspace {workspace} is not a directory")
        find_command(command, workspace, os.environ)
        await check_server(args.url)
        async with await open_store(settings) as store:
            recording = Recording(
                command=command,
                workspace=workspace,
                gateway_url=args.url,
                user=gateway_user(args),
                session=args.session,
                config=session_limits_config(args),
            )

            def started(session: uuid.UUID) -> None:
                print(f"chronicle: recording session {session}", file=sys.stderr, flush=True)

            if args.replay is not None:
                return await _replay(args, settings, store, recording, started)

            recorded = await record(
                store,
                settings,
                recording,
                check_gateway=lambda token: check_gateway(args.url, token),
                started=started,
                owner_store=lambda: open_owner_store(settings),
            )
    except RecordError as exc:
        print(f"chronicle record: {exc}", file=sys.stderr)
        return exc.exit_code
    print(
        f"chronicle: session {recorded.session_id} recorded: exit code {recorded.exit_code} "
        f"after {recorded.wall_seconds:g} s",
        file=sys.stderr,
    )
    return recorded.exit_code


async def _replay(
    args: argparse.Namespace,
    settings: Settings,
    store: EventStore,
    recording: Recording,
    started: Callable[[uuid.UUID], None],
) -> int:
    """``--replay SESSION``: ``app.external.replay_command`` with this command's options;
    the report on stderr (the command's stdout is the command's alone)."""
    from app.cli.log import open_owner_store
    from app.external.agent_command import RecordError
    from app.external.record import check_gateway
    from app.external.replay_command import replay_command

    try:
        if args.session is not None:
            raise RecordError("--replay records a session of its own; leave out --session")
        replayed = args.replay
        outcome = await replay_command(
            store,
            settings,
            recording=replayed,
            command=recording.command,
            workspace=recording.workspace,
            gateway_url=recording.gateway_url,
            user=recording.user,
            mode=args.mode,
            on_divergence=args.on_divergence,
            check_gateway=lambda token: check_gateway(args.url, token),
            started=started,
            owner_store=lambda: open_owner_store(settings),
        )
    except RecordError as exc:
        print(f"chronicle record: {exc}", file=sys.stderr)
        return exc.exit_code
    print(outcome.report(), file=sys.stderr)
    return outcome.exit_code
