"""`chronicle bench server`: the access service under load, through real HTTP.

A real `chronicle serve --role api` process on a throwaway database; this process is the
agent (it appends) and the clients.

1. Live streams: 200 WebSocket clients on 20 active sessions (10 each). A round connects
   them from the sessions' heads, appends one event to each session, ``WAVES`` times, paced,
   and closes them; each arrival at a client is timed from the start of its append. Baseline,
   in interleaved rounds: the store's own append -> subscriber latency, 200
   ``EventStore.subscribe`` tails on the same sessions in this process (a store of their own,
   so each learns of appends from PostgreSQL's notifications, as the server does), likewise
   opened for their round only. Target (issue 13): client p99 <= 50 ms.
2. ``GET /api/sessions`` at 200 requests/s (open loop: each request sent on schedule, its time
   counted from then) with 100,000 sessions in ``session_state``, as a user who owns 10,000 of
   them and as an admin. Baseline: the route's own query on the pool at the same rate.
   Target: p99 <= 20 ms.
3. The list's throughput ceiling (closed loop): ``CEILING_CLIENTS`` clients each sending the
   next request as soon as the last one is answered, for ``CEILING_SECONDS``; requests per
   second (as the member). Baseline: the route's query on the pool the same way. It must be
   well above the 200/s of the open-loop figure, or that figure measures a queue.
4. ``POST /api/sessions``: ``CREATIONS`` new sessions at once by one user (the API role: no
   worker starts them), the p99 of a round. Baseline: the store's own append of the same two
   events (the configuration, the task) to as many new sessions at once. Target (issue 28):
   p99 <= 250 ms.

    python -m bench.server [--rounds N] [--url POSTGRES_SUPERUSER_URL] [--json]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import orjson
import psycopg
from websockets.asyncio.client import connect

from app.events import Message, SessionCreated
from app.events.masking import SecretMasker
from app.sessions.sql.session_rows import list_sql
from app.store import EventStore
from bench.harness import (
    BenchDatabase,
    Interleaved,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    percentile,
    report,
)

SESSIONS = 20
CLIENTS = 200
WAVES = 5
WAVE_PAUSE = 0.05
LISTED_SESSIONS = 100_000
MEMBER_SHARE = 10  # the member owns one session in ten
RATE = 200.0
REQUESTS = 400  # two seconds at RATE per round
CEILING_CLIENTS = 16
CEILING_SECONDS = 2.0
STREAM_TARGET_MS = 50.0
LIST_TARGET_MS = 20.0
#: New sessions created at once, and the target for their p99 (issue 28).
CREATIONS = 50
CREATE_TARGET_MS = 250.0
LISTENING = re.compile(r"chronicle serving on (http://\S+)")


class Server:
    """A `chronicle serve --role api` process on the database, with an admin and a member."""

    def __init__(self, database: BenchDatabase, root: Path) -> None:
        config = root / "settings.toml"
        config.write_text("")
        self.env = {
            **os.environ,
            "CHRONICLE_DATABASE_URL": database.app,
            # only the owner's login makes an admin (``users add --admin``)
            "CHRONICLE_OWNER_DATABASE_URL": database.admin,
            "CHRONICLE_DATA_DIR": str(root / "data"),
            "CHRONICLE_CONFIG": str(config),
            # the load itself would trip the abuse limits
            "CHRONICLE_SERVER_RATE_LIMIT": "10000000",
            "CHRONICLE_SERVER_MAX_STREAMS_PER_USER": str(CLIENTS * 2),
            # sessions are created with the server's model, and many are working at once
            "CHRONICLE_LLM_MODEL": "openai/bench-model",
            "CHRONICLE_SERVER_MAX_ACTIVE_SESSIONS": "1000000",
        }
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        #: Its last lines of output (for a failure's report).
        self.output: list[str] = []

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            env=self.env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"chronicle {' '.join(args)}: {done.stderr}")
        return done.stdout.strip()

    def token(self, user: str, *, admin: bool = False) -> str:
        self.cli("users", "add", user, *(["--admin"] if admin else []))
        return self.cli("tokens", "create", user)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--role", "api", "--port", "0"],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        lines = []
        for line in self.process.stdout:
            lines.append(line)
            found = LISTENING.search(line)
            if found:
                self.url = found.group(1)
                # keep reading its output: a full pipe would stop the server at its next log line
                threading.Thread(target=self._drain, daemon=True).start()
                return
        raise RuntimeError("chronicle serve did not start:\n" + "".join(lines))

    def _drain(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            del self.output[:-200]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# -- streams --------------------------------------------------------------------------------


class Arrivals:
    """When each event reached each listener (monotonic ns), and when its append started."""

    def __init__(self) -> None:
        self.started: dict[str, int] = {}
        self.arrived: list[tuple[str, int]] = []
        self.expected: float = float("inf")
        self.complete = asyncio.Event()

    def arrive(self, event: str, at: int) -> None:
        self.arrived.append((event, at))
        if len(self.arrived) >= self.expected:
            self.complete.set()

    def latencies_ms(self) -> list[float]:
        return [
            (at - self.started[event]) / 1e6 for event, at in self.arrived if event in self.started
        ]


async def append_waves(store: EventStore, sessions: list[uuid.UUID], arrivals: Arrivals) -> None:
    """One event to each session per wave, ``WAVES`` waves ``WAVE_PAUSE`` apart."""

    async def one(session: uuid.UUID) -> None:
        event = Message(content="progress", source="agent")
        arrivals.started[str(event.event_id)] = time.monotonic_ns()
        await store.append(session, [event])

    for _ in range(WAVES):
        await asyncio.gather(*(one(session) for session in sessions))
        await asyncio.sleep(WAVE_PAUSE)


async def settle(arrivals: Arrivals, listeners: int) -> None:
    """Until every listener has every event of the round (at most 30 s: a lost arrival shows
    as fewer arrivals than expected in the results)."""
    arrivals.expected = len(arrivals.started) * listeners
    if len(arrivals.arrived) >= arrivals.expected:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(30):
            await arrivals.complete.wait()


async def stream_client(url: str, token: str, after: int, sink: Callable[[str, int], None],
                        ready: asyncio.Event) -> None:  # fmt: skip
    """A WebSocket client from ``after``: ready once the event at ``after`` came (the stream
    runs end to end), then every later event timed."""
    async with connect(
        f"{url}?after_seq={after - 1}", additional_headers={"Authorization": f"Bearer {token}"}
    ) as socket:
        await socket.recv()
        ready.set()
        async for message in socket:
            sink(str(orjson.loads(message)["event_id"]), time.monotonic_ns())


async def subscriber(store: EventStore, session: uuid.UUID, after: int,
                     sink: Callable[[str, int], None], ready: asyncio.Event) -> None:  # fmt: skip
    """A store subscription from ``after``, ready as ``stream_client`` is."""
    async with store.subscribe(session, after - 1) as tail:
        await anext(tail)
        ready.set()
        async for event in tail:
            sink(str(event.event_id), time.monotonic_ns())


async def measure_streams(server: Server, database: BenchDatabase, rounds: int) -> Measurement:
    """Each round opens its side's 200 listeners from the sessions' heads, appends, and closes
    them: the other side's listeners are not there to read (or be sent) the same events."""
    masker = SecretMasker()
    token = server.token("streamer", admin=True)
    async with (
        await EventStore.open(database.app, masker=masker) as agent,
        await EventStore.open(database.app, masker=masker) as watcher,
    ):
        sessions = [uuid.uuid4() for _ in range(SESSIONS)]
        for session in sessions:
            await agent.append(session, [Message(content="start", source="user")])
        base = server.url.replace("http://", "ws://")
        samples: dict[str, list[list[float]]] = {"ws": [], "store": []}

        def round_of(side: str) -> Callable[[], Awaitable[float]]:
            async def measure() -> float:
                arrivals = Arrivals()
                heads = {session: await agent.last_seq(session) for session in sessions}
                tasks: list[asyncio.Task[None]] = []
                readies: list[asyncio.Event] = []
                for index in range(CLIENTS):
                    session = sessions[index % SESSIONS]
                    ready = asyncio.Event()
                    readies.append(ready)
                    if side == "ws":
                        url = f"{base}/api/sessions/{session}/stream"
                        client = stream_client(url, token, heads[session], arrivals.arrive, ready)
                    else:
                        client = subscriber(
                            watcher, session, heads[session], arrivals.arrive, ready
                        )
                    tasks.append(asyncio.create_task(client))
                try:
                    async with asyncio.timeout(120):
                        await asyncio.gather(*(ready.wait() for ready in readies))
                    await append_waves(agent, sessions, arrivals)
                    await settle(arrivals, CLIENTS // SESSIONS)
                finally:
                    for task in tasks:
                        task.cancel()
                    for task in tasks:
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await task
                latencies = arrivals.latencies_ms()
                samples[side].append(latencies)
                return percentile(latencies, 99)

            return measure

        result = await interleave(round_of("store"), round_of("ws"), rounds=rounds)
    ws_all = [value for batch in samples["ws"][1:] for value in batch]
    return latency_row(
        f"append -> client p99, {CLIENTS} WebSocket clients on {SESSIONS} sessions",
        result,
        STREAM_TARGET_MS,
        detail={
            "client_p50_ms": percentile(ws_all, 50) if ws_all else None,
            "arrivals_per_round": len(samples["ws"][-1]) if samples["ws"] else 0,
            "expected_per_round": WAVES * CLIENTS,
        },
    )


# -- the session list -----------------------------------------------------------------------


def seed_sessions(database: BenchDatabase, member: uuid.UUID) -> None:
    """100,000 rows in session_state (as the projection writes them), one in ten the
    member's."""
    with psycopg.connect(database.admin, autocommit=True) as db:
        db.execute(
            """
            INSERT INTO session_state (session_id, title, created_at, updated_at, ended_at,
                status, agent_state, agent, model, runtime, steps, last_seq)
            SELECT gen_random_uuid(), 'bench session ' || i,
                   now() - i * interval '1 minute', now() - i * interval '1 minute',
                   now() - i * interval '1 minute', 'finished', 'finished', 'codeact',
                   'openai/bench', 'local', 10, 40
            FROM generate_series(1, %s) AS i
            """,
            (LISTED_SESSIONS,),
        )
        db.execute(
            """
            INSERT INTO session_owners (session_id, user_id, created_at)
            SELECT session_id, %s, created_at FROM (
                SELECT session_id, created_at, row_number() OVER (ORDER BY created_at) AS n
                FROM session_state) AS numbered
            WHERE n %% %s = 0
            """,
            (member, MEMBER_SHARE),
        )
        db.execute("ANALYZE session_state")
        db.execute("ANALYZE session_owners")


async def open_loop(call: Callable[[], Awaitable[None]]) -> float:
    """``REQUESTS`` calls at ``RATE`` per second, each timed from when it was due; the p99 (ms)."""
    latencies: list[float] = []
    start = time.monotonic()

    async def one(due: float) -> None:
        await call()
        latencies.append((time.monotonic() - due) * 1000)

    pending = []
    for index in range(REQUESTS):
        due = start + index / RATE
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(one(due)))
    await asyncio.gather(*pending)
    return percentile(latencies, 99)


async def closed_loop(call: Callable[[], Awaitable[None]]) -> float:
    """Requests per second of ``CEILING_CLIENTS`` back-to-back callers over ``CEILING_SECONDS``."""
    done = 0
    start = time.monotonic()
    end = start + CEILING_SECONDS

    async def caller() -> None:
        nonlocal done
        while time.monotonic() < end:
            await call()
            done += 1

    await asyncio.gather(*(caller() for _ in range(CEILING_CLIENTS)))
    return done / (time.monotonic() - start)


async def measure_list(
    server: Server, database: BenchDatabase, rounds: int, *, admin: bool
) -> list[Measurement]:
    who = "admin" if admin else "member"
    token = server.token(f"lister-{who}", admin=admin)
    owner: uuid.UUID | None = None
    with psycopg.connect(database.admin) as db:
        row = db.execute("SELECT id FROM users WHERE name = %s", (f"lister-{who}",)).fetchone()
        assert row is not None
        user = uuid.UUID(str(row[0]))
    if not admin:
        owner = user
        seed_sessions(database, user)
    sql, params = list_sql(owner=owner is not None, state=None, model=False, since=False,
                                   after=False)  # fmt: skip
    values = {"owner": owner, "limit": 51}
    arguments = [values.get(name) for name in params]
    # idle connections dropped before the server's keep-alive timeout (5 s) can close them under us
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100, keepalive_expiry=2)
    async with (
        httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, limits=limits,
            timeout=30,
        ) as client,
        await EventStore.open(database.app, masker=SecretMasker()) as store,
    ):  # fmt: skip

        async def http_call() -> None:
            response = await client.get("/api/sessions")
            if response.status_code != 200:
                raise RuntimeError(
                    f"GET /api/sessions: {response.status_code} {response.text}\n"
                    + "".join(server.output[-20:])
                )

        async def sql_call() -> None:
            await store.pool.fetch(sql, *arguments)

        async def http_round() -> float:
            return await open_loop(http_call)

        async def sql_round() -> float:
            return await open_loop(sql_call)

        result = await interleave(sql_round, http_round, rounds=rounds)
        rows = [
            latency_row(
                f"GET /api/sessions p99 at {RATE:.0f}/s, {LISTED_SESSIONS:,} sessions, as {who}"
                + ("" if admin else f" (owns {LISTED_SESSIONS // MEMBER_SHARE:,})"),
                result,
                LIST_TARGET_MS,
            )
        ]
        if not admin:

            async def http_ceiling() -> float:
                return await closed_loop(http_call)

            async def sql_ceiling() -> float:
                return await closed_loop(sql_call)

            ceiling = await interleave(sql_ceiling, http_ceiling, rounds=rounds)
            rows.append(ceiling_row(ceiling))
    return rows


async def measure_create(server: Server, database: BenchDatabase, rounds: int) -> Measurement:
    token = server.token("creator")
    limits = httpx.Limits(max_connections=CREATIONS, max_keepalive_connections=CREATIONS,
                          keepalive_expiry=2)  # fmt: skip
    async with (
        httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, limits=limits,
            timeout=60,
        ) as client,
        await EventStore.open(database.app, masker=SecretMasker()) as store,
    ):  # fmt: skip

        async def timed(call: Callable[[], Awaitable[None]]) -> float:
            started = time.perf_counter()
            await call()
            return (time.perf_counter() - started) * 1000

        async def http_one() -> None:
            response = await client.post("/api/sessions", json={"task": "bench: create me"})
            if response.status_code != 201:
                raise RuntimeError(f"POST /api/sessions: {response.status_code} {response.text}")

        async def append_one() -> None:
            await store.append(
                uuid.uuid4(),
                [SessionCreated(title="bench: create me", config={}), Message(content="task")],
                expected_seq=0,
            )

        async def p99_of(call: Callable[[], Awaitable[None]]) -> float:
            times = sorted(await asyncio.gather(*(timed(call) for _ in range(CREATIONS))))
            return times[min(len(times) - 1, int(len(times) * 0.99))]

        async def http_round() -> float:
            return await p99_of(http_one)

        async def append_round() -> float:
            return await p99_of(append_one)

        result = await interleave(append_round, http_round, rounds=rounds)
    return latency_row(
        f"POST /api/sessions p99, {CREATIONS} at once by one user", result, CREATE_TARGET_MS
    )


def ceiling_row(result: Interleaved) -> Measurement:
    return Measurement(
        name=f"GET /api/sessions closed-loop ceiling, {CEILING_CLIENTS} clients, as member",
        unit="requests/s",
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=f">= {RATE:.0f}/s (the open-loop rate)",
        met=result.chronicle.median >= RATE,
        baseline_spread=f"{result.baseline.low:.0f}-{result.baseline.high:.0f}",
        chronicle_spread=f"{result.chronicle.low:.0f}-{result.chronicle.high:.0f}",
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={
            "rounds": len(result.ratios),
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
        },
    )


def latency_row(
    name: str, result: Interleaved, target_ms: float, detail: dict[str, Any] | None = None
) -> Measurement:
    return Measurement(
        name=name,
        unit="ms",
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=f"<= {target_ms:.0f} ms",
        met=result.chronicle.median <= target_ms,
        baseline_spread=f"{result.baseline.low:.2f}-{result.baseline.high:.2f}",
        chronicle_spread=f"{result.chronicle.low:.2f}-{result.chronicle.high:.2f}",
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={
            "rounds": len(result.ratios),
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
            **(detail or {}),
        },
    )


@contextlib.asynccontextmanager
async def running(server: Server) -> AsyncIterator[Server]:
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, rounds=5, figures=["streams", "list", "create"])
    args = parser.parse_args(argv)
    only = set(args.only or ["streams", "list", "create"])

    async def run(database: BenchDatabase) -> list[Measurement]:
        rows: list[Measurement] = []
        with tempfile.TemporaryDirectory(prefix="chronicle-bench-server-") as root:
            async with running(Server(database, Path(root))) as server:
                if "streams" in only:
                    rows.append(await measure_streams(server, database, args.rounds))
                if "list" in only:
                    rows += await measure_list(server, database, args.rounds, admin=False)
                    rows += await measure_list(server, database, args.rounds, admin=True)
                if "create" in only:
                    rows.append(await measure_create(server, database, args.rounds))
        return rows

    machine, rows = measured_on_database(args.url, run)
    return report(
        "server",
        "Access service: live streams, the session list and creating sessions (ms, p99 of each "
        "round; median "
        "and range over the rounds)",
        rows,
        as_json=args.json,
        machine=machine,
        how=command_line("server", args),
        extra={"load": os.getloadavg()},
    )


if __name__ == "__main__":
    sys.exit(main())
