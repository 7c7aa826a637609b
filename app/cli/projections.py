"""`chronicle projections run|status|rebuild`: keep the read models current, see how far they
are, and build one afresh from the log."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from datetime import datetime

from app.cli.log import open_store
from app.cli.terminal import raw
from app.config import Settings

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    projections = commands.add_parser(
        "projections", help="keep the read models (session_state) current; status; rebuild"
    )
    actions = projections.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_parser = actions.add_parser(
        "run",
        help="apply the log to the projections until stopped (SIGINT/SIGTERM); a second "
        "process of the same projection stands by and takes over when the first ends",
    )
    run_parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="only these (default: all, and otlp_export, the live OTLP exporter, when "
        "otlp_export_url is set)",
    )
    status = actions.add_parser(
        "status", help="each projection's position, lag (events and seconds) and runner"
    )
    status.add_argument("--json", action="store_true", help="one JSON object per line")
    rebuild = actions.add_parser(
        "rebuild", help="build a projection afresh from the start of the log and swap it in"
    )
    rebuild.add_argument("name", metavar="NAME")
    projections.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.projections import UnknownProjectionError

    try:
        return await {"run": _run, "status": _status, "rebuild": _rebuild}[args.action](
            args, settings
        )
    except UnknownProjectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from app.projections import all_projections, projection_named, running_projections
    from app.projections.otlp.exporter import NAME as OTLP_EXPORT
    from app.sessions.retention import retention_upkeep

    names = [name for name in args.names if name != OTLP_EXPORT]
    otlp = settings.otlp_export if not args.names or OTLP_EXPORT in args.names else None
    if args.names and otlp is not None and otlp.url is None:
        print(f"error: {OTLP_EXPORT} sends spans to otlp_export_url, which is not set",
              file=sys.stderr)  # fmt: skip
        return 2
    chosen = [projection_named(n) for n in names] if args.names else all_projections()
    runner_log = logging.getLogger("app.projections.runner")
    if runner_log.level > logging.WARNING:  # quiet inside `run`; here its news is the output
        runner_log.setLevel(logging.WARNING)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in STOP_SIGNALS:
        loop.add_signal_handler(number, stopped.set)
    try:
        async with await open_store(settings) as store:
            config = settings.projections
            upkeep = retention_upkeep(settings) if not args.names else []
            async with running_projections(
                store, chosen, config, otlp=otlp, upkeep=upkeep
            ) as runners:
                running = ", ".join(runner.name for runner in runners)
                print(f"running projections: {running} (stop with Ctrl-C)", file=sys.stderr)
                waits = [asyncio.ensure_future(stopped.wait())]
                waits += [asyncio.ensure_future(runner.ended.wait()) for runner in runners]
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiting in waits:
                        waiting.cancel()
                failed = [runner for runner in runners if runner.error is not None]
    finally:
        for number in STOP_SIGNALS:
            loop.remove_signal_handler(number)
    for runner in failed:
        print(
            f"error: projection {runner.name} stopped: {runner.error}; after fixing the cause, "
            f"`chronicle projections rebuild {runner.name}` or run again",
            file=sys.stderr,
        )
    if failed:
        return 1
    print("stopped", file=sys.stderr)
    return 0


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


async def _status(args: argparse.Namespace, settings: Settings) -> int:
    from app.projections import PROJECTIONS
    from app.projections.otlp.exporter import NAME as OTLP_EXPORT
    from app.projections.sql.projection_status import projection_status

    async with await open_store(settings) as store:
        found = await projection_status(store, [*(p.name for p in PROJECTIONS), OTLP_EXPORT])
    if settings.otlp_export.url is None:  # listed only while configured, or it has run
        found = [s for s in found if s.name != OTLP_EXPORT or s.version is not None]
    for status in found:
        if args.json:
            print(status.model_dump_json())
            continue
        runner = f"live ({status.runner})" if status.live else "no runner live"
        version = f"v{status.version}" if status.version is not None else "never run"
        print(
            f"{status.name}  {version}  behind {status.behind} events "
            f"({status.lag_seconds:.1f} s)  {runner}  "
            f"updated {_when(status.updated_at)}  rebuilt {_when(status.rebuilt_at)}"
        )
    return 0


async def _rebuild(args: argparse.Namespace, settings: Settings) -> int:
    from app.projections import projection_named, rebuild
    from app.projections.sql.projection_store import ProjectionConnection

    projection = projection_named(args.name)
    config = settings.projections
    shown = 0

    def progress(done: int) -> None:
        nonlocal shown
        if sys.stderr.isatty() and done - shown >= 10 * config.batch_size:
            shown = done
            print(f"\r{done} events applied…", end="", file=raw(sys.stderr), flush=True)

    async with await open_store(settings, long_running=True) as store:
        async with await ProjectionConnection.dedicated(store) as connection:
            position = await rebuild(
                store, connection, projection, batch_size=config.batch_size, progress=progress
            )
    with contextlib.suppress(OSError):
        if shown:
            print(file=sys.stderr)
    print(f"rebuilt {projection.name} up to global position {position.global_position}")
    return 0
