"""`chronicle run` and `chronicle resume`: a headless coding session from the terminal.

A run ends in the log whichever way it ends: SIGINT and SIGTERM stop the session (the runner
records an ``agent.state`` ``stopped`` with the signal, and a model call in flight as an
``llm.call`` with its error), close the sandbox, print how to resume, and exit 130 / 143. A
database that goes away mid-run ends it with one line saying so; the session resumes later.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import SecretStr

from app.cli.inline_projections import inline_projections
from app.cli.log import open_store
from app.cli.numbers import positive, seq_number
from app.cli.render import render_line
from app.cli.replay import OptionError, add_override_options, agent_config_from, overrides_given
from app.cli.session_ids import session_id
from app.cli.terminal import raw
from app.config import Settings
from app.errors import ChronicleError
from app.runtime.kinds import KINDS
from app.store import DATABASE_GONE_ERRORS, EventStore, RecordedEvent

#: After these, the next thing is usually the model thinking: show a spinner.
THINKING_AFTER = frozenset(
    {"message", "run.output", "file.read.output", "file.write.output", "file.edit.output"}
    | {"mcp.result", "error", "runtime.ready"}
)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: What a lost database looks like from here.
DATABASE_GONE = DATABASE_GONE_ERRORS


class Refusal(ChronicleError):
    """The command would do something the user did not mean; the message says what instead."""


class Ending(NamedTuple):
    """How the command ends: the session's outcome (None: it did not get to one), the exit
    code, and a problem to print as ``error: ...``."""

    outcome: str | None
    code: int
    problem: str | None = None
    database_gone: bool = False


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="litellm model name, e.g. openai/gpt-4o-mini")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (local or company model)")
    parser.add_argument(
        "--api-key",
        help="the model's API key; discouraged: other users see it in `ps`. Prefer "
        "--api-key-file, CHRONICLE_LLM_API_KEY or llm_api_key_file in the settings file",
    )
    parser.add_argument(
        "--api-key-file", type=Path, metavar="FILE", help="read the model's API key from FILE"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this host environment variable into the sandbox (repeatable); no other "
        "variable of yours reaches the sandbox",
    )
    parser.add_argument("--runtime", choices=list(KINDS), help="the sandbox (default: local)")
    parser.add_argument("--max-iterations", type=positive, help="model calls allowed (default 100)")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="spend allowed")
    parser.add_argument("--no-stuck-detection", action="store_true")
    parser.add_argument(
        "--create-workspace",
        action="store_true",
        help="make the workspace directory if it does not exist (otherwise that is an error)",
    )


def _agent_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help=f"{what} with this registered agent (codeact, the default, or shell-only); "
        "recorded, so resume and replay use it too",
    )


def add_parsers(commands: argparse._SubParsersAction) -> None:
    run_parser = commands.add_parser("run", help="run a coding session headless until it ends")
    run_parser.add_argument("task", help="what the agent should do")
    run_parser.add_argument(
        "--workspace", required=True, type=Path, help="the project directory (must exist)"
    )
    run_parser.add_argument("--session", type=session_id, help="the new session's id (a UUID)")
    _agent_option(run_parser, "run")
    _common(run_parser)
    resume = commands.add_parser("resume", help="continue a session from its log")
    resume.add_argument("session", type=session_id, metavar="SESSION")
    resume.add_argument("message", nargs="?", help="an answer or new instruction for the agent")
    resume.add_argument("--workspace", type=Path, help="default: the recorded one")
    _common(resume)
    fork = commands.add_parser(
        "fork",
        help="a new session copied from SESSION up to --at SEQ, its workspace restored and "
        "recorded actions run again, then continued live",
    )
    fork.add_argument("session", type=session_id, metavar="SESSION")
    fork.add_argument("message", nargs="?", help="a new instruction for the agent")
    fork.add_argument(
        "--at", type=seq_number, required=True, metavar="SEQ", help="copy the events up to this seq"
    )
    fork.add_argument(
        "--workspace",
        type=Path,
        help="an empty or new directory for the restored workspace (default: one under "
        "the data directory)",
    )
    _agent_option(fork, "continue the fork")
    add_override_options(fork)
    _common(fork)
    run_parser.set_defaults(handler=run)
    resume.set_defaults(handler=run)
    fork.set_defaults(handler=run)


async def _print_events(store: EventStore, session: uuid.UUID, after: int) -> None:
    spinner = itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
    tty = sys.stderr.isatty()
    async with store.subscribe(session, after_seq=after) as stream:
        last_kind = ""
        while True:
            try:
                async with asyncio.timeout(0.1 if tty and last_kind in THINKING_AFTER else None):
                    event = await anext(stream)
            except TimeoutError:
                print(f"\r{next(spinner)} thinking…", end="", file=raw(sys.stderr), flush=True)
                continue
            if tty:  # controls written on purpose: past the escaping of text from the log
                print("\r\033[K", end="", file=raw(sys.stderr), flush=True)
            print(render_line(event), flush=True)
            last_kind = event.kind


def session_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings with this command's key and sandbox variables, so that the store masks
    the key like any configured secret."""
    from app.llm.config import read_secret_file

    update: dict[str, object] = {}
    if args.api_key:
        update["llm"] = {"api_key": SecretStr(args.api_key)}
    elif args.api_key_file:
        update["llm"] = {"api_key": SecretStr(read_secret_file(args.api_key_file))}
    if args.env:
        update["sandbox_env"] = [*settings.sandbox_env, *args.env]
    return settings.model_copy(update=update) if update else settings


def checked_workspace(path: Path, create: bool) -> Path:
    """``path`` made absolute; a directory that does not exist is refused unless ``create``
    (a typo must not become a new, empty project the agent works in)."""
    path = Path(os.path.abspath(path.expanduser()))
    if path.is_dir():
        return path
    if path.exists():
        raise Refusal(f"the workspace {path} is not a directory")
    if not create:
        raise Refusal(
            f"the workspace {path} does not exist; create it, or pass --create-workspace "
            "to have it made"
        )
    path.mkdir(parents=True)
    return path


def _workspace(
    args: argparse.Namespace, session: uuid.UUID, existing: list[RecordedEvent]
) -> Path | None:
    """The workspace this command runs in (None: let the runner say what is missing)."""
    from app.sessions.runner import SessionError, recorded_config

    if args.command == "fork":
        return Path(args.workspace) if args.workspace is not None else None
    if args.command == "run":
        if existing:
            raise Refusal(
                f"session {session} already exists; continue it with: chronicle resume {session}"
            )
        return checked_workspace(args.workspace, args.create_workspace)
    if args.workspace is not None:
        return checked_workspace(args.workspace, args.create_workspace)
    try:
        recorded = recorded_config(existing).workspace
    except SessionError:
        return None
    return checked_workspace(Path(recorded), args.create_workspace) if recorded else None


class Interruption:
    """SIGINT / SIGTERM while a session runs: cancel its task with the signal's name (the
    runner records it and closes the sandbox); a second signal only says we are stopping."""

    def __init__(self, work: asyncio.Task[Any]) -> None:
        self.work = work
        self.signal: signal.Signals | None = None

    def arrived(self, received: signal.Signals) -> None:
        if self.signal is not None:
            print("still stopping: closing the sandbox…", file=sys.stderr, flush=True)
            return
        self.signal = received
        self.work.cancel(f"interrupted by {received.name}")


async def _drive(
    store: EventStore,
    settings: Settings,
    options: Any,
    task: str | None,
    session: uuid.UUID,
    fork_of: tuple[uuid.UUID, int] | None = None,
    agent_config: Any = None,
) -> Ending:
    from app.llm import LlmError
    from app.runtime import SandboxError
    from app.sessions.runner import DatabaseGoneError, SessionError, run_session

    if fork_of is not None:
        from app.sessions.fork import fork_session

        async def forking() -> tuple[uuid.UUID, Any]:
            source, at = fork_of
            fork, outcome, _ = await fork_session(
                store, settings, source, at, options,
                message=task, fork_id=session, agent_config=agent_config,
            )  # fmt: skip
            return fork, outcome

        work = asyncio.create_task(forking())
    else:
        work = asyncio.create_task(
            run_session(store, settings, options, task=task, session_id=session)
        )
    stop = Interruption(work)
    loop = asyncio.get_running_loop()
    for number in STOP_SIGNALS:
        loop.add_signal_handler(number, stop.arrived, number)
    try:
        _, outcome = await work
        return Ending(outcome, 0 if outcome == "finished" else 1)
    except asyncio.CancelledError:
        if stop.signal is None:
            raise
        return Ending("stopped", 128 + stop.signal)
    except (DatabaseGoneError, *DATABASE_GONE) as exc:
        detail = str(exc) if isinstance(exc, DatabaseGoneError) else f"{exc}".strip()
        return Ending(None, 1, _database_gone(session, detail), database_gone=True)
    except (SessionError, LlmError, SandboxError) as exc:
        return Ending(None, 1, getattr(exc, "message", None) or str(exc))
    finally:
        for number in STOP_SIGNALS:
            loop.remove_signal_handler(number)


def _database_gone(session: uuid.UUID, detail: str) -> str:
    if "database went away" not in detail:
        detail = f"the database went away ({detail or 'connection lost'})"
    return (
        f"{detail}; the session is kept as far as it was recorded. When PostgreSQL is back, "
        f"continue with: chronicle resume {session}"
    )


async def _summary(store: EventStore, session: uuid.UUID, outcome: str | None) -> str | None:
    """``session S: finished (why); 2 model calls, cost $0.0123`` from the log; None when
    nothing was recorded (a fork or run refused before its first event: its id exists
    nowhere, and the error said why)."""
    # here, not at the top: it brings the projections, which no other command loads
    from app.sessions.summary import format_cost

    events = await store.read(session)
    if not events:
        return None
    states = [e for e in events if e.kind == "agent.state" and e.source == "agent"]
    last = states[-1].payload if states else {}
    state = outcome or last.get("state") or "not started"
    reason = last.get("reason", "") if last.get("state") == state else ""
    calls = [e.payload for e in events if e.kind == "llm.call"]
    # as session_state counts them (what `chronicle sessions` and the page show): unknown
    # when a call that answered has no price and none has one
    priced = [c["cost_usd"] for c in calls if c.get("cost_usd") is not None]
    unpriced = sum(1 for c in calls if c.get("cost_usd") is None and not c.get("error"))
    cost = None if unpriced and not priced else sum(priced)
    return (
        f"session {session}: {state}"
        + (f" ({reason})" if reason else "")
        + f"; {len(calls)} model call{'' if len(calls) == 1 else 's'}, "
        + f"cost {format_cost(cost, unpriced, len(calls))}"
    )


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.sessions.runner import SessionOptions

    try:
        settings = session_settings(args, settings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "agent", None) is not None:
        from app.agent.registry import UnknownAgent, agent_class

        try:
            agent_class(args.agent)
        except UnknownAgent as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    forking = args.command == "fork"
    try:  # a fork's agent overrides, as `chronicle replay` takes them
        agent_config = agent_config_from(args) if forking and overrides_given(args) else None
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    session = uuid.uuid4() if forking else args.session or uuid.uuid4()
    fork_of = (args.session, args.at) if forking else None
    task = args.task if args.command == "run" else args.message
    async with await open_store(settings) as store:
        existing = await store.read(session, limit=5)
        if args.command == "resume" and not existing:
            print(f"error: session {session} has no events", file=sys.stderr)
            return 1
        if forking and not await store.read(args.session, limit=1):
            print(f"error: session {args.session} has no events", file=sys.stderr)
            return 1
        try:
            workspace = _workspace(args, session, existing)
        except Refusal as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        options = SessionOptions(
            workspace=workspace,
            runtime=args.runtime,
            model=args.model,
            base_url=args.base_url,
            api_key=settings.llm.api_key,
            max_iterations=args.max_iterations,
            max_cost_usd=args.max_cost,
            stuck_detection=not args.no_stuck_detection,
            agent=getattr(args, "agent", None),
        )
        after = await store.last_seq(session) if existing else 0
        printer = asyncio.create_task(_print_events(store, session, after))
        try:
            async with inline_projections(store, settings):
                ending = await _drive(
                    store, settings, options, task, session, fork_of, agent_config
                )
        finally:
            if not printer.done():
                await asyncio.sleep(0.2)  # let the last events print
            printer.cancel()
            with contextlib.suppress(asyncio.CancelledError, *DATABASE_GONE):
                await printer
        summary = None
        if not ending.database_gone:
            try:
                summary = await _summary(store, session, ending.outcome)
            except DATABASE_GONE as exc:
                ending = ending._replace(
                    code=ending.code or 1,
                    problem=_database_gone(session, str(exc)),
                    database_gone=True,
                )
    if ending.problem:
        print(f"error: {ending.problem}", file=sys.stderr)
    if summary:
        print(f"\n{summary}")
    if ending.outcome != "finished" and not ending.database_gone and summary:
        if not summary.endswith("not started"):
            print(f'continue with: chronicle resume {session} ["your answer"]', file=sys.stderr)
    return ending.code
