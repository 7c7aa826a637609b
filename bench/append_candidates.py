"""The ways of sending one single-event append, each interleaved with raw INSERT + COMMIT.

    python -m bench.append_candidates [--url URL] [--rounds N]

What issue 9 asked to measure before choosing (its results are in the git history of README.md,
"What made append fast"): the array function ``chronicle_append`` against the scalar
``chronicle_append_one``, the NOTIFY inside the append's transaction against one sent after the
commit on a second connection (the listening one, as the store's announcer does), at 1 and 8
concurrent writers. Every candidate runs as the application's login on its own connection per
writer, at the SQL level, so the figures are the database's and the protocol's cost, not the
store's Python.

Floors, not candidates, measured the same way: a raw INSERT with a ``pg_notify`` in the same
statement (PostgreSQL's notify lock, no Chronicle code), ``chronicle_append_one`` without any
NOTIFY; and for a 10,000-event batch against COPY into the raw table: COPY into ``events``
itself (its indexes and checks, no function), an INSERT ... SELECT from arrays into ``events``
without the hash chain, and ``chronicle_append`` (the chain, as the store sends a batch).

The chain computed client-side (issue 9's fourth pass): the writer keeps its session's head
hash and seq from its own last append, builds the hashed text and its sha256 itself and sends
the previous hash, the new hash and the time; the database (``bench_append_client_chain``,
created for the run beside ``chronicle_append_one``, with its lock, expected-seq check and
sessions row) refuses a link that is not its stored head, and either recomputes the hash to
validate it (``validate``) or stores it as sent (link checked only). The client's hashing is
inside the timing. The same for a 10,000-event batch (``bench_append_batch_client_chain``).
Each is measured against raw INSERT + COMMIT (or COPY) and, directly, against the function the
store uses today.

Issue 9's sixth batch candidates (``bench/append_staged.py``, rows "staged COPY" and "arrays,
..."): binary COPY into a staging table made by a SECURITY DEFINER function, then one function
that appends from it with the chain computed row by row, a client's chain verified set-based
(``lag()``), or the chain as a window aggregate in the INSERT; and the last two with array
arguments instead of COPY. Each against ``chronicle_append`` and the staged ones against COPY;
and the staged path through the store's own encoding and result, against ``store.append`` (row
"store: staged COPY prototype").
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.events.canonical import format_timestamp
from app.events.ids import new_event_id
from app.events.masking import SecretMasker
from app.store import EventStore
from bench.append_staged import (
    append_arrays_verified,
    append_arrays_window,
    append_staged,
    append_staged_verified,
    append_staged_window,
    array_arguments,
    chain_only,
    create_staged_functions,
    store_batch_staged,
)
from bench.eventstore import (
    BATCH,
    RAW_INSERT,
    RAW_TABLE,
    SINGLE_APPENDS,
    _payload,
    chronicle_batch,
)
from bench.harness import (
    Measurement,
    Stopwatch,
    bench_database,
    interleave,
    ratio_row,
    report,
    this_machine,
)

ARRAYS = (
    "SELECT * FROM chronicle_append($1, $2, $3, '{message}', '{user}', '{NULL}', $4, '{1}', $5)"
)
SCALAR = (
    "SELECT * FROM chronicle_append_one($1, $2, $3, 'message', 'user', NULL, $4, 1::smallint, $5)"
)

RAW_INSERT_NOTIFY = (
    "WITH inserted AS (" + RAW_INSERT + " RETURNING seq) "
    "SELECT pg_notify('chronicle_events', $6) FROM inserted"
)
BATCH_COLUMNS = ["session_id", "seq", "event_id", "kind", "source", "payload", "hash"]
#: The batch as the store sends it (the chain computed in the function).
BATCH_APPEND = "SELECT count(*) FROM chronicle_append($1, 0, $2, $3, $4, $5, $6, $7, false)"
#: The same rows into events without the chain (a placeholder hash): the table's own cost.
BATCH_INSERT_NO_CHAIN = """
INSERT INTO events (session_id, seq, event_id, kind, source, cause, payload, schema_version,
                    created_at, hash)
SELECT $1, t.ord::integer, t.event_id, 'message', 'user', NULL, t.payload::jsonb, 1, now(),
       sha256(t.event_id::text::bytea)
FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS t(event_id, payload, ord)
"""

#: The chain computed client-side, one event: the database checks the link (and, with
#: p_validate, recomputes the hash over the same text as chronicle_append_one) and stores it.
CLIENT_CHAIN_FUNCTION = r"""
CREATE FUNCTION bench_append_client_chain(
    p_session uuid, p_expected integer, p_event_id uuid, p_kind text, p_source text,
    p_cause integer, p_payload text, p_version smallint, p_created_at timestamptz,
    p_prev bytea, p_hash bytea, p_validate boolean,
    OUT seq integer, OUT global_position bigint, OUT tx xid8
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_last     integer;
    v_prev     bytea;
    v_answered text;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash INTO v_last, v_prev FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_prev := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'session % is at seq %, the writer expected %',
            p_session, v_last, p_expected USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;
    IF p_prev IS DISTINCT FROM v_prev THEN
        RAISE EXCEPTION 'broken link: the previous hash sent is not the head of session %',
            p_session
            USING ERRCODE = 'CR004';
    END IF;
    IF p_cause IS NOT NULL AND p_cause <= v_last
       AND p_kind = ANY (chronicle_observation_kinds()) THEN
        SELECT e.kind INTO v_answered
        FROM events e WHERE e.session_id = p_session AND e.seq = p_cause;
        IF FOUND AND NOT (
            v_answered = ANY (chronicle_action_kinds())
            OR (p_kind = 'error' AND v_answered = 'llm.call')
        ) THEN
            RAISE EXCEPTION 'observation answers no action' USING ERRCODE = 'CR003';
        END IF;
    END IF;
    seq := v_last + 1;
    IF p_validate AND p_hash IS DISTINCT FROM sha256(v_prev || convert_to(
        '{"cause":' || coalesce(p_cause::text, 'null')
        || ',"created_at":"'
        || to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","event_id":"' || p_event_id::text
        || '","kind":' || to_json(p_kind)::text
        || ',"payload":' || p_payload
        || ',"schema_version":' || p_version::text
        || ',"seq":' || seq::text
        || ',"session_id":"' || p_session::text
        || '","source":' || to_json(p_source)::text
        || '}', 'UTF8')) THEN
        RAISE EXCEPTION 'the hash sent does not match the event' USING ERRCODE = 'CR004';
    END IF;
    INSERT INTO events AS e
        (session_id, seq, event_id, kind, source, cause, payload, schema_version, created_at, hash)
    VALUES (p_session, seq, p_event_id, p_kind, p_source, p_cause, p_payload::jsonb, p_version,
            p_created_at, p_hash)
    RETURNING e.global_position, e.tx INTO global_position, tx;
    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, p_created_at, 1, p_hash);
    ELSE
        UPDATE sessions s SET last_seq = seq, last_hash = p_hash WHERE s.id = p_session;
    END IF;
END
$$;
"""
#: The same for a batch ('message' events from 'user', no causes, as the batch floors).
CLIENT_CHAIN_BATCH_FUNCTION = r"""
CREATE FUNCTION bench_append_batch_client_chain(
    p_session uuid, p_expected integer, p_event_ids uuid[], p_payloads text[],
    p_created_at timestamptz, p_prev bytea, p_hashes bytea[], p_validate boolean
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    n      integer := cardinality(p_event_ids);
    v_ts   text := to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_last integer;
    v_hash bytea;
BEGIN
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash INTO v_last, v_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_hash := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'stale expected seq' USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;
    IF p_prev IS DISTINCT FROM v_hash THEN
        RAISE EXCEPTION 'broken link' USING ERRCODE = 'CR004';
    END IF;
    IF p_validate THEN
        FOR i IN 1 .. n LOOP
            v_hash := sha256(v_hash || convert_to(
                '{"cause":null,"created_at":"' || v_ts
                || '","event_id":"' || p_event_ids[i]::text
                || '","kind":"message","payload":' || p_payloads[i]
                || ',"schema_version":1,"seq":' || (v_last + i)::text
                || ',"session_id":"' || p_session::text
                || '","source":"user"}', 'UTF8'));
            IF v_hash IS DISTINCT FROM p_hashes[i] THEN
                RAISE EXCEPTION 'hash % does not match', i USING ERRCODE = 'CR004';
            END IF;
        END LOOP;
    END IF;
    INSERT INTO events (session_id, seq, event_id, kind, source, cause, payload,
                        schema_version, created_at, hash)
    SELECT p_session, v_last + t.ord::integer, t.event_id, 'message', 'user', NULL,
           t.payload::jsonb, 1, p_created_at, t.hash
    FROM unnest(p_event_ids, p_payloads, p_hashes)
         WITH ORDINALITY AS t(event_id, payload, hash, ord);
    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, p_created_at, n, p_hashes[n]);
    ELSE
        UPDATE sessions s SET last_seq = v_last + n, last_hash = p_hashes[n] WHERE s.id = p_session;
    END IF;
    RETURN n;
END
$$;
"""
CLIENT_CHAIN_SIGNATURES = (
    "bench_append_client_chain(uuid, integer, uuid, text, text, integer, text, smallint,"
    " timestamptz, bytea, bytea, boolean)",
    "bench_append_batch_client_chain(uuid, integer, uuid[], text[], timestamptz, bytea,"
    " bytea[], boolean)",
)
CLIENT_CHAIN_SQL = (
    "SELECT seq FROM bench_append_client_chain($1, $2, $3, 'message', 'user', NULL, $4,"
    " 1::smallint, $5, $6, $7, $8)"
)
CLIENT_CHAIN_BATCH_SQL = "SELECT bench_append_batch_client_chain($1, 0, $2, $3, $4, $5, $6, $7)"


async def create_client_chain_functions(admin: asyncpg.Connection) -> None:
    """The candidates, owned and granted like the store's writers (migrations 0003, 0007)."""
    schema = await admin.fetchval("SELECT quote_ident(current_schema())")
    search_path = f"pg_catalog, {schema}, pg_temp"
    for sql in (CLIENT_CHAIN_FUNCTION, CLIENT_CHAIN_BATCH_FUNCTION):
        await admin.execute(sql.replace("{search_path}", search_path))
    for signature in CLIENT_CHAIN_SIGNATURES:
        await admin.execute(f"ALTER FUNCTION {signature} OWNER TO chronicle_owner")
        await admin.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        await admin.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO chronicle_app")


def hashed_text(session: uuid.UUID, seq: int, event_id: uuid.UUID, payload: str, at: str) -> str:
    """What chronicle_append_one hashes for a 'message' from 'user' without a cause: built
    as a writer holding the payload's canonical text would (the same bytes, checked by the
    validating candidate, which refuses any other)."""
    return (
        f'{{"cause":null,"created_at":"{at}","event_id":"{event_id}","kind":"message",'
        f'"payload":{payload},"schema_version":1,"seq":{seq},"session_id":"{session}",'
        '"source":"user"}'
    )


class ClientChain:
    """A writer that keeps each session's head hash after its own last append."""

    def __init__(self, validate: bool) -> None:
        self.validate = validate
        self.heads: dict[uuid.UUID, bytes] = {}

    async def __call__(
        self, c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
    ) -> None:
        prev = self.heads.get(s, b"")
        event_id, payload = new_event_id(), _payload(seq)
        at = datetime.now(UTC)
        text = hashed_text(s, seq, event_id, payload, format_timestamp(at))
        digest = hashlib.sha256(prev + text.encode()).digest()
        await c.fetchval(
            CLIENT_CHAIN_SQL, s, seq - 1, event_id, payload, at, prev, digest, self.validate
        )
        self.heads[s] = digest


async def append_batch_client_chain(app: asyncpg.Connection, validate: bool) -> float:
    """A 10,000-event batch with its chain computed here (inside the timing)."""
    with Stopwatch() as watch:
        session = uuid.uuid4()
        ids = [new_event_id() for _ in range(BATCH)]
        payloads = [_payload(seq) for seq in range(1, BATCH + 1)]
        at = datetime.now(UTC)
        stamp = format_timestamp(at)
        hashes, head = [], b""
        for seq, (event_id, payload) in enumerate(zip(ids, payloads, strict=True), 1):
            head = hashlib.sha256(
                head + hashed_text(session, seq, event_id, payload, stamp).encode()
            ).digest()
            hashes.append(head)
        await app.fetchval(
            CLIENT_CHAIN_BATCH_SQL, session, ids, payloads, at, b"", hashes, validate
        )
    return BATCH / watch.seconds


#: One append: (connection, the listening connection, session, seq) → awaited.
Append = Callable[[asyncpg.Connection, asyncpg.Connection, uuid.UUID, int], Awaitable[None]]


async def _raw(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.execute(RAW_INSERT, s, seq, new_event_id(), _payload(seq), b"\0" * 32)


async def _arrays_after(
    c: asyncpg.Connection, listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetch(ARRAYS, s, seq - 1, [new_event_id()], [_payload(seq)], False)
    await listening.execute("SELECT pg_notify('chronicle_events', $1)", f"{s}:{seq}")


async def _arrays_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetch(ARRAYS, s, seq - 1, [new_event_id()], [_payload(seq)], True)


async def _scalar_after(
    c: asyncpg.Connection, listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), False)
    await listening.execute("SELECT pg_notify('chronicle_events', $1)", f"{s}:{seq}")


async def _scalar_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), True)


async def _scalar_no_notify(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), False)


async def _raw_notify_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.execute(
        RAW_INSERT_NOTIFY, s, seq, new_event_id(), _payload(seq), b"\0" * 32, f"{s}:{seq}"
    )


CANDIDATES: dict[str, Append] = {
    "chronicle_append (arrays), NOTIFY after the commit (2 round trips)": _arrays_after,
    "chronicle_append (arrays), NOTIFY in its transaction": _arrays_in_tx,
    "chronicle_append_one (scalars), NOTIFY after the commit (2 round trips)": _scalar_after,
    "chronicle_append_one (scalars), NOTIFY in its transaction": _scalar_in_tx,
    "chronicle_append_one (scalars), no NOTIFY (floor, not a candidate)": _scalar_no_notify,
    "raw INSERT + pg_notify in the same statement (floor: the notify lock)": _raw_notify_in_tx,
}


def _batch_rows(session: uuid.UUID) -> list[tuple[object, ...]]:
    return [
        (session, seq, new_event_id(), "message", "user", _payload(seq), b"\0" * 32)
        for seq in range(1, BATCH + 1)
    ]


async def copy_raw(admin: asyncpg.Connection) -> float:
    """events/s of COPY into the raw table (the batch baseline of bench/eventstore.py)."""
    with Stopwatch() as watch:
        await admin.copy_records_to_table(
            "raw_events", records=_batch_rows(uuid.uuid4()), columns=BATCH_COLUMNS
        )
    return BATCH / watch.seconds


async def copy_events(admin: asyncpg.Connection) -> float:
    """COPY straight into ``events`` (as the superuser): its indexes and checks, no function."""
    with Stopwatch() as watch:
        rows = [(*row[:6], bytes(32)) for row in _batch_rows(uuid.uuid4())]
        await admin.copy_records_to_table("events", records=rows, columns=BATCH_COLUMNS)
    return BATCH / watch.seconds


async def insert_no_chain(admin: asyncpg.Connection) -> float:
    with Stopwatch() as watch:
        ids = [new_event_id() for _ in range(BATCH)]
        payloads = [_payload(seq) for seq in range(1, BATCH + 1)]
        await admin.execute(BATCH_INSERT_NO_CHAIN, uuid.uuid4(), ids, payloads)
    return BATCH / watch.seconds


async def append_batch(app: asyncpg.Connection) -> float:
    with Stopwatch() as watch:
        ids = [new_event_id() for _ in range(BATCH)]
        payloads = [_payload(seq) for seq in range(1, BATCH + 1)]
        await app.fetchval(
            BATCH_APPEND,
            *array_arguments(uuid.uuid4(), ids, payloads),
        )
    return BATCH / watch.seconds


BATCH_FLOORS: dict[str, Callable[[asyncpg.Connection, asyncpg.Connection], Awaitable[float]]] = {
    "COPY into events itself (floor: the table)": lambda admin, _app: copy_events(admin),
    "INSERT ... SELECT into events, no chain (floor)": lambda admin, _app: insert_no_chain(admin),
    "chronicle_append, 10,000 events (the chain)": lambda _admin, app: append_batch(app),
    "chronicle_append's chain loop alone, nothing written (floor)": lambda _admin, app: chain_only(
        app
    ),
}


#: The client-side chain against the function the store uses today (no NOTIFY on either
#: side: the chain, not the doorbell, is what differs) and against raw INSERT + COMMIT.
CLIENT_CHAIN: dict[str, tuple[Append, Callable[[], Append]]] = {
    "client-side chain, database validates the hash, vs chronicle_append_one (no NOTIFY)": (
        _scalar_no_notify,
        lambda: ClientChain(validate=True),
    ),
    "client-side chain, database checks the link only, vs chronicle_append_one (no NOTIFY)": (
        _scalar_no_notify,
        lambda: ClientChain(validate=False),
    ),
    "client-side chain, database validates the hash, vs raw INSERT + COMMIT": (
        _raw,
        lambda: ClientChain(validate=True),
    ),
    "client-side chain, database checks the link only, vs raw INSERT + COMMIT": (
        _raw,
        lambda: ClientChain(validate=False),
    ),
}

BATCH_CLIENT_CHAIN: dict[
    str, tuple[Callable[[asyncpg.Connection, asyncpg.Connection], Awaitable[float]], bool]
] = {
    "client-side chain batch, database validates, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        True,
    ),
    "client-side chain batch, link only, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        False,
    ),
    "client-side chain batch, database validates, vs COPY": (
        lambda admin, _app: copy_raw(admin),
        True,
    ),
    "client-side chain batch, link only, vs COPY": (lambda admin, _app: copy_raw(admin), False),
}

Batch = Callable[[asyncpg.Connection, asyncpg.Connection], Awaitable[float]]

#: Binary COPY into a staging table the definer made, then one function (bench/append_staged.py),
#: each against the function the store uses today and against COPY; and the set-based
#: verification with array arguments, to tell the transport from the verification.
STAGED: dict[str, tuple[Batch, Batch]] = {
    "staged COPY, chain in the function, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        lambda _admin, app: append_staged(app),
    ),
    "staged COPY, client chain verified set-based, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        lambda _admin, app: append_staged_verified(app),
    ),
    "arrays, client chain verified set-based, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        lambda _admin, app: append_arrays_verified(app),
    ),
    "staged COPY, chain a window aggregate in the INSERT, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        lambda _admin, app: append_staged_window(app),
    ),
    "arrays, chain a window aggregate in the INSERT, vs chronicle_append": (
        lambda _admin, app: append_batch(app),
        lambda _admin, app: append_arrays_window(app),
    ),
    "staged COPY, chain in the function, vs COPY": (
        lambda admin, _app: copy_raw(admin),
        lambda _admin, app: append_staged(app),
    ),
    "staged COPY, client chain verified set-based, vs COPY": (
        lambda admin, _app: copy_raw(admin),
        lambda _admin, app: append_staged_verified(app),
    ),
}


class Writers:
    """One connection per writer and one shared listening connection, opened once."""

    def __init__(self, connections: list[asyncpg.Connection], listening: asyncpg.Connection):
        self.connections = connections
        self.listening = listening
        self._lock = asyncio.Lock()  # one statement at a time on the listening connection

    async def rate(self, append: Append, writers: int, total: int) -> float:
        listening = _Locked(self.listening, self._lock)

        async def writer(connection: asyncpg.Connection) -> None:
            session = uuid.uuid4()
            for seq in range(1, total // writers + 1):
                await append(connection, listening, session, seq)  # type: ignore[arg-type]

        with Stopwatch() as watch:
            await asyncio.gather(*(writer(c) for c in self.connections[:writers]))
        return total / watch.seconds


class _Locked:
    """The listening connection, one statement at a time (asyncpg allows no overlap)."""

    def __init__(self, connection: asyncpg.Connection, lock: asyncio.Lock) -> None:
        self._connection = connection
        self._lock = lock

    async def execute(self, query: str, *args: object) -> str:
        async with self._lock:
            result: str = await self._connection.execute(query, *args)
            return result


async def run(
    admin_url: str, app_url: str, rounds: int, only: str | None = None
) -> list[Measurement]:
    setup = await asyncpg.connect(admin_url)
    await setup.execute(RAW_TABLE)
    await setup.execute("GRANT INSERT, SELECT ON raw_events TO chronicle_app")
    postgres = await setup.fetchval("SHOW server_version")
    connections = [await asyncpg.connect(app_url) for _ in range(8)]
    writers = Writers(connections, await asyncpg.connect(app_url))
    await create_client_chain_functions(setup)
    await create_staged_functions(setup)
    rows = []
    try:
        for name, (staged_baseline, staged) in STAGED.items():
            if only and only not in name:
                continue
            print(f"  ... {name}", file=sys.stderr, flush=True)
            result = await interleave(
                partial(staged_baseline, setup, connections[0]),
                partial(staged, setup, connections[0]),
                rounds=rounds,
            )
            rows.append(ratio_row(name, "events/s", result, 0.5))
        name = "store: staged COPY prototype, vs store.append (arrays)"
        if not only or only in name:
            print(f"  ... {name}", file=sys.stderr, flush=True)
            async with await EventStore.open(app_url, masker=SecretMasker()) as store:
                result = await interleave(
                    partial(chronicle_batch, store, BATCH),
                    partial(store_batch_staged, store, connections[0]),
                    rounds=rounds,
                )
            rows.append(ratio_row(name, "events/s", result, 0.5))
        for name, (batch_baseline, validate) in BATCH_CLIENT_CHAIN.items():
            if only and only not in name:
                continue
            print(f"  ... {name}", file=sys.stderr, flush=True)
            result = await interleave(
                partial(batch_baseline, setup, connections[0]),
                partial(append_batch_client_chain, connections[0], validate),
                rounds=rounds,
            )
            rows.append(ratio_row(name, "events/s", result, 0.5))
        for name, (baseline, candidate) in CLIENT_CHAIN.items():
            if only and only not in name:
                continue
            for count in (1, 8):
                print(f"  ... {name}, {count} writer(s)", file=sys.stderr, flush=True)
                total = SINGLE_APPENDS[count]
                result = await interleave(
                    partial(writers.rate, baseline, count, total),
                    partial(writers.rate, candidate(), count, total),
                    rounds=rounds,
                )
                rows.append(ratio_row(f"{name}, {count} writer(s)", "events/s", result, 0.7))
        for name, floor in BATCH_FLOORS.items():
            if only and only not in name:
                continue
            print(f"  ... {name}", file=sys.stderr, flush=True)
            result = await interleave(
                partial(copy_raw, setup),
                partial(floor, setup, connections[0]),
                rounds=rounds,
            )
            rows.append(ratio_row(f"{name}, vs COPY", "events/s", result, 0.5))
        for name, append in CANDIDATES.items():
            if only and only not in name:
                continue
            for count in (1, 8):
                print(f"  ... {name}, {count} writer(s)", file=sys.stderr, flush=True)
                total = SINGLE_APPENDS[count]
                result = await interleave(
                    partial(writers.rate, _raw, count, total),
                    partial(writers.rate, append, count, total),
                    rounds=rounds,
                )
                rows.append(ratio_row(f"{name}, {count} writer(s)", "events/s", result, 0.7))
    finally:
        for connection in [*connections, writers.listening, setup]:
            await connection.close()
    rows[0].detail["postgres"] = postgres
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per candidate")
    parser.add_argument("--only", help="only the candidates and floors whose name has this text")
    args = parser.parse_args(argv)
    with bench_database(args.url) as database:
        rows = asyncio.run(run(database.admin, database.app, args.rounds, args.only))
    machine = this_machine(str(rows[0].detail.get("postgres")))
    how = (
        f"python -m bench.append_candidates --rounds {args.rounds}; each candidate interleaved"
        " with raw INSERT + COMMIT or COPY (1 warm-up round discarded), one connection per writer"
    )
    title = (
        "Append candidates and floors (SQL level; baseline raw INSERT + COMMIT, COPY for batches)"
    )
    report("append_candidates", title, rows, as_json=False, machine=machine, how=how)
    return 0


if __name__ == "__main__":
    sys.exit(main())
