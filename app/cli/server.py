"""`chronicle serve`: the access service (HTTP API) under uvicorn, with its companions.

``--role all`` (the default) runs the API, the projections runner and a worker in one process
(on the embedded PostgreSQL unless ``CHRONICLE_DATABASE_URL`` is set, started again if its
postmaster dies: ``app.store.embedded.supervisor``); ``--role api`` runs the
API alone, for several API processes against one database (a projections runner, e.g.
`chronicle projections run`, keeps ``session_state`` current); ``--role worker`` runs a worker
alone, as `chronicle worker` does (``app.sessions.worker``). SIGTERM or SIGINT stops accepting
connections, ends the live streams at once (each client is told where to resume: a stream
never ends by itself, so waiting for it would hold the shutdown for uvicorn's whole graceful
timeout), lets the other requests in flight finish within ``server_shutdown_grace`` (then
cancels them: a client that never finishes sending its request must not hold the exit),
stops the companions and exits 0.

Connections are served by ``app.server.http_protocol``: uvicorn's HTTP protocol with
deadlines for a request's head and body and a cap on connections open at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

from app.config import Settings
from app.store import EventStore

ROLES = ("all", "api", "worker")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _quiet_server(config: Any) -> Any:
    """A uvicorn server that leaves signals to us: uvicorn's own handling re-raises the
    signal once it has shut down, which would end the process by the signal (exit -15)
    before the projections stop and the store closes."""
    import uvicorn

    class Server(uvicorn.Server):
        listening = asyncio.Event()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            self.listening.set()

    return Server(config)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="run the HTTP API (and, by default, its workers)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument(
        "--port", type=int, default=8000, help="port to listen on (0: any free port)"
    )
    serve.add_argument(
        "--role",
        choices=ROLES,
        default="all",
        help="all: API, projections and workers in one process; api: the API only; worker: "
        "the workers only",
    )
    serve.set_defaults(handler=run)


@contextlib.asynccontextmanager
async def _projections(store: EventStore, settings: Settings) -> AsyncIterator[None]:
    """The projections kept current beside the API (one runner per database applies; the
    others stand by, so several `serve --role all` processes are safe)."""
    from app.projections import all_projections, running_projections
    from app.sessions.retention import retention_upkeep

    async with running_projections(
        store,
        all_projections(),
        settings.projections,
        otlp=settings.otlp_export,
        upkeep=retention_upkeep(settings),
    ):
        yield


@contextlib.asynccontextmanager
async def _workers(
    store: EventStore, settings: Settings, stop: asyncio.Event, abort: asyncio.Event
) -> AsyncIterator[None]:
    """Sessions run beside the API (``app.sessions.worker``); at the end they drain: each
    finishes its step in flight and its lease is handed back (``abort``: at once)."""
    from app.evaluation.api_runs import trial_ended
    from app.evaluation.run_recovery import recover_runs
    from app.sessions.worker import run_worker

    scored = functools.partial(trial_ended, store, settings)  # API evaluation runs' trials
    recovered = functools.partial(recover_runs, store, settings)  # what a dead worker left
    working = asyncio.create_task(
        run_worker(store, settings, stop=stop, abort=abort, after_run=scored, sweep=recovered)
    )
    try:
        yield
    finally:
        stop.set()
        await working


async def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from app.cli.log import open_store
    from app.server import create_app
    from app.server.http_protocol import ConnectionLimits, ensure_descriptors, guarded_protocol
    from app.server.streams import close_streams
    from app.store import kept_running

    limits = ConnectionLimits(
        header_timeout=settings.server.header_timeout,
        body_timeout=settings.server.body_timeout,
        max_connections=settings.server.max_connections,
        write_timeout=settings.server.write_timeout,
        max_per_address=settings.server.max_connections_per_address
        or max(1, settings.server.max_connections // 2),
        forwarded_allow_ips=settings.server.forwarded_allow_ips,
    )
    short = ensure_descriptors(limits.max_connections)
    if short:
        print(short, file=sys.stderr, flush=True)

    async with (
        await open_store(settings) as store,
        kept_running(settings.database_config()),  # the embedded server, restarted if it dies
    ):
        app = create_app(store, settings)
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            # slow clients are cut, connections past the cap refused (app.server.http_protocol)
            http=guarded_protocol(limits),
            # X-Forwarded-For is believed only from the proxies the operator names: uvicorn's
            # default believes it from 127.0.0.1, so any local client could pick its address
            # (past the failure limit, into the audit trail)
            proxy_headers=bool(settings.server.forwarded_allow_ips.strip()),
            forwarded_allow_ips=settings.server.forwarded_allow_ips.strip() or None,
            timeout_graceful_shutdown=settings.server.shutdown_grace,
            # A compressed WebSocket compresses every message once per client (each connection
            # keeps its own compressor), so one event sent to 200 clients would be compressed
            # 200 times; uncompressed, the event encoded once is what every client is sent.
            ws_per_message_deflate=False,
        )
        server = _quiet_server(config)
        loop = asyncio.get_running_loop()
        workers_stop, workers_abort = asyncio.Event(), asyncio.Event()

        def stop(received: signal.Signals) -> None:
            if server.should_exit:  # a second signal: stop without waiting for requests
                server.force_exit = True
                workers_abort.set()
            server.should_exit = True
            close_streams(app)
            workers_stop.set()

        for number in STOP_SIGNALS:
            loop.add_signal_handler(number, stop, number)
        async with contextlib.AsyncExitStack() as companions:
            if args.role == "all":
                await companions.enter_async_context(_projections(store, settings))
                await companions.enter_async_context(
                    _workers(store, settings, workers_stop, workers_abort)
                )
            serving = asyncio.create_task(server.serve())
            listening = asyncio.create_task(server.listening.wait())
            await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
            listening.cancel()
            if server.started:
                host, port = server.servers[0].sockets[0].getsockname()[:2]
                print(f"chronicle serving on http://{host}:{port} (role {args.role})", flush=True)
                if settings.llm.model is None and args.role != "worker":
                    print(
                        "note: no model is configured, so a new session must name its own "
                        '("model"); set CHRONICLE_LLM_MODEL (and CHRONICLE_LLM_API_KEY) to give '
                        "one to every session",
                        flush=True,
                    )
            await serving
        if not server.started:
            print(f"error: could not listen on {args.host}:{args.port}", file=sys.stderr)
            return 1
    print("chronicle serve stopped", file=sys.stderr, flush=True)
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.role == "worker":  # no API: what `chronicle worker` runs
        from app.cli import worker as worker_cli

        args.max_sessions, args.worker_id = None, None
        return asyncio.run(worker_cli.run(args, settings))
    if not 0 <= args.port <= 65535:
        print(f"error: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return 2
    code = asyncio.run(_serve(args, settings))
    _exit_now(code)
    return code  # not reached


def _exit_now(code: int) -> None:
    """End the process without tearing its heap down. The server's work is done here (streams
    ended, requests answered or cancelled, the store closed, the companions stopped): what is
    left is the interpreter freeing every object of litellm, litestar and their kin, which took
    3.5 s of an 8 s SIGTERM budget on an idle machine (a supervisor's stop timeout counts it,
    and a deploy waits on it). Logs and the standard streams are flushed first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
