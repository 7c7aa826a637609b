"""`chronicle worker`: run the sessions that must run, until SIGTERM or SIGINT.

The first signal drains (each session finishes its step in flight, its lease is handed back
for another worker, exit 0); a second one stops the sessions at once (what was in flight is
reported interrupted when another worker resumes them). An embedded PostgreSQL whose
postmaster dies meanwhile is started again (``app.store.embedded.supervisor``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
import sys

from app.cli.inline_projections import inline_projections
from app.config import Settings

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    worker = commands.add_parser(
        "worker",
        help="run requested sessions (leases in PostgreSQL) until SIGTERM; several may run "
        "against one database",
    )
    worker.add_argument(
        "--max-sessions", type=int, metavar="N", help="sessions at once (worker_max_sessions)"
    )
    worker.add_argument("--id", dest="worker_id", help="this worker's id (default: host/pid/…)")
    worker.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_store
    from app.evaluation.api_runs import trial_ended
    from app.evaluation.run_recovery import recover_runs
    from app.sessions.worker import new_worker_id, run_worker
    from app.store import kept_running

    if args.max_sessions is not None and args.max_sessions < 1:
        print("error: --max-sessions must be 1 or more", file=sys.stderr)
        return 2
    stop, abort = asyncio.Event(), asyncio.Event()

    def arrived(received: signal.Signals) -> None:
        if stop.is_set():
            print(f"{received.name}: stopping the sessions now", file=sys.stderr, flush=True)
            abort.set()
            return
        print(
            f"{received.name}: draining (the steps in flight finish; again to stop at once)",
            file=sys.stderr,
            flush=True,
        )
        stop.set()

    loop = asyncio.get_running_loop()
    for number in STOP_SIGNALS:
        loop.add_signal_handler(number, arrived, number)
    worker_id = args.worker_id or new_worker_id()
    try:
        async with (
            await open_store(settings) as store,
            kept_running(settings.database_config()),  # the embedded server, restarted if it dies
            inline_projections(store, settings),
        ):
            print(f"worker {worker_id} running", file=sys.stderr, flush=True)
            await run_worker(
                store,
                settings,
                stop=stop,
                abort=abort,
                worker_id=worker_id,
                max_sessions=args.max_sessions,
                after_run=functools.partial(trial_ended, store, settings),
                sweep=functools.partial(recover_runs, store, settings),
            )
    finally:
        for number in STOP_SIGNALS:
            loop.remove_signal_handler(number)
    print(f"worker {worker_id} stopped", file=sys.stderr, flush=True)
    return 0
