"""`chronicle run` and `chronicle resume`: a headless coding session from the terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import uuid
from pathlib import Path

from pydantic import SecretStr

from app.cli.log import session_id
from app.cli.render import render_line
from app.config import Settings
from app.store import EventStore
from app.store.database import ensure_database_async

#: After these, the next thing is usually the model thinking: show a spinner.
THINKING_AFTER = frozenset(
    {"message", "run.output", "file.read.output", "file.write.output", "file.edit.output"}
    | {"mcp.result", "error", "runtime.ready"}
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="litellm model name, e.g. openai/gpt-4o-mini")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (local or company model)")
    parser.add_argument(
        "--api-key",
        help="the model's API key; discouraged: other users see it in `ps`. Prefer "
        "--api-key-file, CHRONICLE_LLM_API_KEY or llm_api_key in the settings file",
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
    parser.add_argument(
        "--runtime", choices=["local", "docker"], help="the sandbox (default: local)"
    )
    parser.add_argument("--max-iterations", type=int, help="model calls allowed (default 100)")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="spend allowed")
    parser.add_argument("--no-stuck-detection", action="store_true")


def add_parsers(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="run a coding session headless until it ends")
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--workspace", required=True, type=Path, help="the project directory")
    run.add_argument("--session", type=session_id, help="use this session id")
    _common(run)
    resume = commands.add_parser("resume", help="continue a session from its log")
    resume.add_argument("session", type=session_id, metavar="SESSION")
    resume.add_argument("message", nargs="?", help="an answer or new instruction for the agent")
    resume.add_argument("--workspace", type=Path, help="default: the recorded one")
    _common(resume)


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
                print(f"\r{next(spinner)} thinking…", end="", file=sys.stderr, flush=True)
                continue
            if tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
            print(render_line(event), flush=True)
            last_kind = event.kind


def session_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings with this command's key and sandbox variables, so that the store masks
    the key like any configured secret."""
    from app.config import read_secret_file

    update: dict[str, object] = {}
    if args.api_key:
        update["llm_api_key"] = SecretStr(args.api_key)
    elif args.api_key_file:
        update["llm_api_key"] = SecretStr(read_secret_file(args.api_key_file))
    if args.env:
        update["sandbox_env"] = [*settings.sandbox_env, *args.env]
    return settings.model_copy(update=update) if update else settings


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.llm import LlmError
    from app.runtime import SandboxError
    from app.sessions.runner import SessionError, SessionOptions, run_session

    try:
        settings = session_settings(args, settings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options = SessionOptions(
        workspace=args.workspace,
        runtime=args.runtime,
        model=args.model,
        base_url=args.base_url,
        api_key=settings.llm_api_key,
        max_iterations=args.max_iterations,
        max_cost_usd=args.max_cost,
        stuck_detection=not args.no_stuck_detection,
    )
    session = args.session or uuid.uuid4()
    task = args.task if args.command == "run" else args.message
    async with await EventStore.open(
        await ensure_database_async(settings), settings=settings
    ) as store:
        after = await store.last_seq(session) if args.command == "resume" else 0
        if args.command == "resume" and after == 0:
            print(f"error: session {session} has no events", file=sys.stderr)
            return 1
        printer = asyncio.create_task(_print_events(store, session, after))
        try:
            _, outcome = await run_session(store, settings, options, task=task, session_id=session)
        except (SessionError, LlmError, SandboxError) as exc:
            outcome = None
            message = getattr(exc, "message", None) or str(exc)
            print(f"error: {message}", file=sys.stderr)
        finally:
            await asyncio.sleep(0.2)  # let the last events print
            printer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await printer
        state_event = next(
            (e for e in reversed(await store.read(session)) if e.kind == "agent.state"), None
        )
    reason = state_event.payload.get("reason", "") if state_event else ""
    print(f"\nsession {session}: {outcome or 'not started'}" + (f" ({reason})" if reason else ""))
    if outcome != "finished":
        print(f'continue with: chronicle resume {session} ["your answer"]', file=sys.stderr)
    return 0 if outcome == "finished" else 1
