"""Batch candidates: binary COPY into a staging table, then one function appends from it.

Issue 9's last untried batch candidate, at the SQL level (``bench/append_candidates.py``
runs them against ``chronicle_append`` and against COPY). The staging table is created by a
SECURITY DEFINER function (``bench_stage_batch``), so it is owned by ``chronicle_owner``:
a table the caller created could carry a row-level security policy or be a view whose
expressions would run as the definer when the append function reads it. The caller only
gets INSERT on it (COPY), and its rows are deleted at commit. ``bench_stage_batch`` also
takes the session's lock and returns the head (last seq and hash) and the transaction's
time, which is everything a client needs to compute the chain itself.

Two appends from the staged rows:

- ``bench_append_staged``: the chain computed in the function, row by row, as
  ``chronicle_append`` does (only the transport differs: COPY instead of array arguments).
- ``bench_append_staged_verified``: the client sends the chain; the function verifies it in
  one set-based statement (each row's hash against sha256 of the previous row's hash, by
  ``lag()``, and the row's canonical text; the first row against the session's head).

And the set-based verification without COPY (``bench_append_arrays_verified``, array
arguments as today), to tell the transport and the verification apart.

    python -m bench.append_staged [--url URL] [--rounds N]

times the server's side alone: a 10,000-event batch's arrays built in the server (no client
encoding, no transfer), then the chain loop of ``chronicle_append`` alone, the whole
function, the window-aggregate candidate, and a chain-less INSERT ... SELECT into the raw
table, each alternated in rounds; what is left after the arrays is the piece's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.events import Message
from app.events.canonical import format_timestamp
from app.events.ids import new_event_id
from app.store import EventStore
from app.store.append import encode_batch, recorded_from_result
from bench.eventstore import BATCH, RAW_TABLE, _payload, _text
from bench.harness import Stopwatch, bench_database

STAGE_FUNCTION = r"""
CREATE FUNCTION bench_stage_batch(p_session uuid, OUT last_seq integer, OUT last_hash bytea,
                                  OUT created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_owner name;
BEGIN
    SELECT pg_get_userbyid(c.relowner) INTO v_owner
    FROM pg_class c WHERE c.oid = to_regclass('pg_temp.bench_staged');
    IF NOT FOUND THEN
        CREATE TEMP TABLE bench_staged (
            ord integer NOT NULL, event_id uuid NOT NULL, kind text NOT NULL,
            source text NOT NULL, cause integer, payload text NOT NULL,
            version smallint NOT NULL, hash bytea
        ) ON COMMIT DELETE ROWS;
        GRANT INSERT ON pg_temp.bench_staged TO chronicle_app;
    ELSIF v_owner <> current_user THEN
        RAISE EXCEPTION 'pg_temp.bench_staged belongs to %, not to the append functions', v_owner
            USING ERRCODE = 'CR005';
    ELSIF EXISTS (SELECT FROM pg_temp.bench_staged) THEN
        DELETE FROM pg_temp.bench_staged;
    END IF;
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash INTO last_seq, last_hash FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        last_seq := 0;
        last_hash := '\x'::bytea;
    END IF;
    created_at := now();
END
$$;
"""

#: The chain computed in the function from the staged rows, row by row.
APPEND_STAGED_FUNCTION = r"""
CREATE FUNCTION bench_append_staged(p_session uuid, p_expected integer)
RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
               hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := now();
    v_ts     text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_last   integer;
    v_hash   bytea;
    v_hashes bytea[] := '{}';
    i        integer := 0;
    r        record;
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
    FOR r IN SELECT s.ord, s.event_id, s.kind, s.source, s.cause, s.payload, s.version
             FROM pg_temp.bench_staged s ORDER BY s.ord LOOP
        i := i + 1;
        IF r.ord <> i THEN
            RAISE EXCEPTION 'staged rows are not numbered 1..n' USING ERRCODE = 'CR005';
        END IF;
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(r.cause::text, 'null')
            || ',"created_at":"' || v_ts
            || '","event_id":"' || r.event_id::text
            || '","kind":' || to_json(r.kind)::text
            || ',"payload":' || r.payload
            || ',"schema_version":' || r.version::text
            || ',"seq":' || (v_last + i)::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(r.source)::text
            || '}', 'UTF8'));
        v_hashes[i] := v_hash;
    END LOOP;
    IF i = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
        INSERT INTO events AS e
            (session_id, seq, event_id, kind, source, cause, payload, schema_version,
             created_at, hash)
        SELECT p_session, v_last + s.ord, s.event_id, s.kind, s.source, s.cause,
               s.payload::jsonb, s.version, v_now, h.hash
        FROM pg_temp.bench_staged s
        JOIN unnest(v_hashes) WITH ORDINALITY AS h(hash, ord) ON h.ord = s.ord
        RETURNING e.seq, e.global_position, e.tx, e.created_at, e.hash;
    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, v_now, i, v_hash);
    ELSE
        UPDATE sessions s SET last_seq = v_last + i, last_hash = v_hash WHERE s.id = p_session;
    END IF;
END
$$;
"""

#: The text each row's hash is taken over (app.events.canonical.hashed_document), in SQL,
#: for a row ``s`` of seq ``v_last + s.ord``; shared by the two verifying functions.
HASHED_TEXT = r"""convert_to(
    '{"cause":' || coalesce(s.cause::text, 'null')
    || ',"created_at":"' || v_ts
    || '","event_id":"' || s.event_id::text
    || '","kind":' || to_json(s.kind)::text
    || ',"payload":' || s.payload
    || ',"schema_version":' || s.version::text
    || ',"seq":' || (v_last + s.ord)::text
    || ',"session_id":"' || p_session::text
    || '","source":' || to_json(s.source)::text
    || '}', 'UTF8')"""

#: The client's chain verified set-based: every row against the previous row's hash.
VERIFY_AND_INSERT = r"""
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash INTO v_last, v_head FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_head := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'stale expected seq' USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;
    SELECT count(*), count(*) FILTER (WHERE c.bad)
    INTO n, v_bad
    FROM (SELECT s.ord <> row_number() OVER w
                 OR s.hash IS DISTINCT FROM sha256(lag(s.hash, 1, v_head) OVER w || {hashed_text})
                 AS bad
          FROM {staged} s WINDOW w AS (ORDER BY s.ord)) c;
    IF v_bad > 0 THEN
        RAISE EXCEPTION '% of % hashes do not extend the chain of session %', v_bad, n, p_session
            USING ERRCODE = 'CR004';
    END IF;
    IF n = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
        INSERT INTO events AS e
            (session_id, seq, event_id, kind, source, cause, payload, schema_version,
             created_at, hash)
        SELECT p_session, v_last + s.ord, s.event_id, s.kind, s.source, s.cause,
               s.payload::jsonb, s.version, v_now, s.hash
        FROM {staged} s
        RETURNING e.seq, e.global_position, e.tx, e.created_at, e.hash;
    SELECT s.hash INTO v_hash FROM {staged} s WHERE s.ord = n;
    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, v_now, n, v_hash);
    ELSE
        UPDATE sessions s SET last_seq = v_last + n, last_hash = v_hash WHERE s.id = p_session;
    END IF;
"""

VERIFIED_DECLARE = r"""
#variable_conflict use_column
DECLARE
    v_now  timestamptz := now();
    v_ts   text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_last integer;
    v_head bytea;
    v_hash bytea;
    v_bad  bigint;
    n      integer;
"""

APPEND_STAGED_VERIFIED_FUNCTION = (
    r"""
CREATE FUNCTION bench_append_staged_verified(p_session uuid, p_expected integer)
RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
               hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
"""
    + VERIFIED_DECLARE
    + "BEGIN"
    + VERIFY_AND_INSERT.replace("{staged}", "pg_temp.bench_staged")
    + "END\n$$;\n"
).replace("{hashed_text}", HASHED_TEXT)

#: The same verification over array arguments (no COPY, no staging table).
ARRAYS_AS_STAGED = (
    "unnest(p_event_ids, p_kinds, p_sources, p_causes, p_payloads, p_versions, p_hashes)"
    " WITH ORDINALITY AS t(event_id, kind, source, cause, payload, version, hash, ord)"
)
APPEND_ARRAYS_VERIFIED_FUNCTION = (
    r"""
CREATE FUNCTION bench_append_arrays_verified(
    p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[],
    p_causes integer[], p_payloads text[], p_versions smallint[], p_hashes bytea[])
RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
               hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
"""
    + VERIFIED_DECLARE
    + "BEGIN"
    + VERIFY_AND_INSERT.replace(
        "{staged}",
        "(SELECT t.ord::integer AS ord, t.event_id, t.kind, t.source, t.cause, t.payload,"
        f" t.version, t.hash FROM {ARRAYS_AS_STAGED})",
    )
    + "END\n$$;\n"
).replace("{hashed_text}", HASHED_TEXT)

#: The chain computed set-based in the database: a window aggregate whose running state is
#: the chain (sha256 of the state, or of the head for the first row, and the row's text).
CHAIN_AGGREGATE = r"""
CREATE FUNCTION bench_chain_step(p_state bytea, p_head bytea, p_text bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT sha256(coalesce(p_state, p_head) || p_text) $$;
CREATE AGGREGATE bench_chain(bytea, bytea) (SFUNC = bench_chain_step, STYPE = bytea);
"""

WINDOW_CHAIN_INSERT = r"""
    PERFORM pg_advisory_xact_lock(1129, hashtext(p_session::text));
    SELECT s.last_seq, s.last_hash INTO v_last, v_head FROM sessions s WHERE s.id = p_session;
    IF NOT FOUND THEN
        v_last := 0;
        v_head := '\x'::bytea;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> v_last THEN
        RAISE EXCEPTION 'stale expected seq' USING ERRCODE = 'CR001', DETAIL = v_last::text;
    END IF;
    RETURN QUERY
        INSERT INTO events AS e
            (session_id, seq, event_id, kind, source, cause, payload, schema_version,
             created_at, hash)
        SELECT p_session, v_last + s.ord, s.event_id, s.kind, s.source, s.cause,
               s.payload::jsonb, s.version, v_now,
               bench_chain(v_head, {hashed_text}) OVER (ORDER BY s.ord ROWS UNBOUNDED PRECEDING)
        FROM {staged} s
        RETURNING e.seq, e.global_position, e.tx, e.created_at, e.hash;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RETURN;
    END IF;
    SELECT e.hash INTO v_hash FROM events e WHERE e.session_id = p_session AND e.seq = v_last + n;
    IF v_last = 0 THEN
        INSERT INTO sessions (id, created_at, last_seq, last_hash)
        VALUES (p_session, v_now, n, v_hash);
    ELSE
        UPDATE sessions s SET last_seq = v_last + n, last_hash = v_hash WHERE s.id = p_session;
    END IF;
"""

APPEND_ARRAYS_WINDOW_FUNCTION = (
    r"""
CREATE FUNCTION bench_append_arrays_window(
    p_session uuid, p_expected integer, p_event_ids uuid[], p_kinds text[], p_sources text[],
    p_causes integer[], p_payloads text[], p_versions smallint[])
RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
               hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
"""
    + VERIFIED_DECLARE
    + "BEGIN"
    + WINDOW_CHAIN_INSERT.replace(
        "{staged}",
        "(SELECT t.ord::integer AS ord, t.event_id, t.kind, t.source, t.cause, t.payload,"
        " t.version FROM unnest(p_event_ids, p_kinds, p_sources, p_causes, p_payloads,"
        " p_versions) WITH ORDINALITY AS t(event_id, kind, source, cause, payload, version,"
        " ord))",
    )
    + "END\n$$;\n"
).replace("{hashed_text}", HASHED_TEXT)

APPEND_STAGED_WINDOW_FUNCTION = (
    r"""
CREATE FUNCTION bench_append_staged_window(p_session uuid, p_expected integer)
RETURNS TABLE (seq integer, global_position bigint, tx xid8, created_at timestamptz,
               hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
"""
    + VERIFIED_DECLARE
    + "BEGIN"
    + WINDOW_CHAIN_INSERT.replace(
        "{staged}",
        "(SELECT row_number() OVER (ORDER BY b.ord)::integer AS ord, b.event_id, b.kind,"
        " b.source, b.cause, b.payload, b.version FROM pg_temp.bench_staged b)",
    )
    + "END\n$$;\n"
).replace("{hashed_text}", HASHED_TEXT)

#: A floor: chronicle_append's chain loop alone, over the same arrays, nothing inserted.
CHAIN_ONLY_FUNCTION = r"""
CREATE FUNCTION bench_chain_only(
    p_session uuid, p_event_ids uuid[], p_kinds text[], p_sources text[], p_causes integer[],
    p_payloads text[], p_versions smallint[]
) RETURNS bytea
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
DECLARE
    v_ts     text := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_hash   bytea := '\x'::bytea;
    v_hashes bytea[] := '{}';
BEGIN
    FOR i IN 1 .. cardinality(p_event_ids) LOOP
        v_hash := sha256(v_hash || convert_to(
            '{"cause":' || coalesce(p_causes[i]::text, 'null')
            || ',"created_at":"' || v_ts
            || '","event_id":"' || p_event_ids[i]::text
            || '","kind":' || to_json(p_kinds[i])::text
            || ',"payload":' || p_payloads[i]
            || ',"schema_version":' || p_versions[i]::text
            || ',"seq":' || i::text
            || ',"session_id":"' || p_session::text
            || '","source":' || to_json(p_sources[i])::text
            || '}', 'UTF8'));
        v_hashes[i] := v_hash;
    END LOOP;
    RETURN v_hash;
END
$$;
"""

STAGED_SIGNATURES = (
    "bench_chain_only(uuid, uuid[], text[], text[], integer[], text[], smallint[])",
    "bench_chain_step(bytea, bytea, bytea)",
    "bench_append_arrays_window(uuid, integer, uuid[], text[], text[], integer[], text[],"
    " smallint[])",
    "bench_append_staged_window(uuid, integer)",
    "bench_stage_batch(uuid)",
    "bench_append_staged(uuid, integer)",
    "bench_append_staged_verified(uuid, integer)",
    "bench_append_arrays_verified(uuid, integer, uuid[], text[], text[], integer[], text[],"
    " smallint[], bytea[])",
)
STAGED_COLUMNS = ["ord", "event_id", "kind", "source", "cause", "payload", "version", "hash"]


async def create_staged_functions(admin: asyncpg.Connection) -> None:
    """The candidates, owned and granted like the store's writers (migrations 0003, 0007)."""
    schema = await admin.fetchval("SELECT quote_ident(current_schema())")
    search_path = f"pg_catalog, {schema}, pg_temp"
    for sql in (
        CHAIN_ONLY_FUNCTION,
        CHAIN_AGGREGATE,
        APPEND_ARRAYS_WINDOW_FUNCTION,
        APPEND_STAGED_WINDOW_FUNCTION,
        STAGE_FUNCTION,
        APPEND_STAGED_FUNCTION,
        APPEND_STAGED_VERIFIED_FUNCTION,
        APPEND_ARRAYS_VERIFIED_FUNCTION,
    ):
        await admin.execute(sql.replace("{search_path}", search_path))
    await admin.execute("ALTER AGGREGATE bench_chain(bytea, bytea) OWNER TO chronicle_owner")
    for signature in STAGED_SIGNATURES:
        await admin.execute(f"ALTER FUNCTION {signature} OWNER TO chronicle_owner")
        await admin.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        await admin.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO chronicle_app")


def hashed_text(session: uuid.UUID, seq: int, event_id: uuid.UUID, payload: str, at: str) -> str:
    """What the functions hash for a 'message' from 'user' without a cause."""
    return (
        f'{{"cause":null,"created_at":"{at}","event_id":"{event_id}","kind":"message",'
        f'"payload":{payload},"schema_version":1,"seq":{seq},"session_id":"{session}",'
        '"source":"user"}'
    )


def client_chain(
    session: uuid.UUID,
    last_seq: int,
    head: bytes,
    at: str,
    ids: list[uuid.UUID],
    payloads: list[str],
) -> list[bytes]:
    """The chain over a batch from the session's head, as the database would compute it."""
    hashes = []
    for seq, (event_id, payload) in enumerate(zip(ids, payloads, strict=True), last_seq + 1):
        text = hashed_text(session, seq, event_id, payload, at)
        head = hashlib.sha256(head + text.encode()).digest()
        hashes.append(head)
    return hashes


def _batch() -> tuple[uuid.UUID, list[uuid.UUID], list[str]]:
    return (
        uuid.uuid4(),
        [new_event_id() for _ in range(BATCH)],
        [_payload(seq) for seq in range(1, BATCH + 1)],
    )


def array_arguments(session: uuid.UUID, ids: list[uuid.UUID], payloads: list[str]) -> list[object]:
    """``chronicle_append``'s arguments for a batch of user messages: the session, then one
    array a column (ids, kinds, sources, causes, payloads, schema versions)."""
    count = len(ids)
    return [session, ids, ["message"] * count, ["user"] * count, [None] * count, payloads,
            [1] * count]  # fmt: skip


async def stage(
    app: asyncpg.Connection,
    session: uuid.UUID,
    ids: list[uuid.UUID],
    payloads: list[str],
    hashes: list[bytes] | None,
) -> None:
    chain: list[bytes | None] = [*hashes] if hashes is not None else [None] * len(ids)
    await app.copy_records_to_table(
        "bench_staged",
        schema_name="pg_temp",
        columns=STAGED_COLUMNS,
        records=[
            (ord, event_id, "message", "user", None, payload, 1, digest)
            for ord, (event_id, payload, digest) in enumerate(
                zip(ids, payloads, chain, strict=True), 1
            )
        ],
    )


async def _staged_then(app: asyncpg.Connection, function: str) -> float:
    """COPY into the staging table, then ``function`` appends what was staged (events/s)."""
    with Stopwatch() as watch:
        session, ids, payloads = _batch()
        async with app.transaction():
            await app.fetchrow("SELECT * FROM bench_stage_batch($1)", session)
            await stage(app, session, ids, payloads, None)
            await app.fetchval(f"SELECT count(*) FROM {function}($1, 0)", session)
    return BATCH / watch.seconds


async def append_staged(app: asyncpg.Connection) -> float:
    """COPY into the staging table, the chain computed in the function (events/s)."""
    return await _staged_then(app, "bench_append_staged")


async def append_staged_verified(app: asyncpg.Connection) -> float:
    """COPY of the client's chain into the staging table, verified set-based (events/s)."""
    with Stopwatch() as watch:
        session, ids, payloads = _batch()
        async with app.transaction():
            last_seq, head, at = await app.fetchrow("SELECT * FROM bench_stage_batch($1)", session)
            hashes = client_chain(session, last_seq, head, format_timestamp(at), ids, payloads)
            await stage(app, session, ids, payloads, hashes)
            await app.fetchval("SELECT count(*) FROM bench_append_staged_verified($1, 0)", session)
    return BATCH / watch.seconds


async def append_arrays_verified(app: asyncpg.Connection) -> float:
    """Array arguments as today, the client's chain verified set-based (events/s).

    The head and the time come from ``bench_stage_batch`` in the same transaction (the lock
    taken there is held to the commit), as the staged candidate gets them."""
    with Stopwatch() as watch:
        session, ids, payloads = _batch()
        async with app.transaction():
            last_seq, head, at = await app.fetchrow("SELECT * FROM bench_stage_batch($1)", session)
            hashes = client_chain(session, last_seq, head, format_timestamp(at), ids, payloads)
            await app.fetchval(
                "SELECT count(*) FROM bench_append_arrays_verified($1, 0, $2, $3, $4, $5, $6,"
                " $7, $8)",
                *array_arguments(session, ids, payloads),
                hashes,
            )
    return BATCH / watch.seconds


async def append_staged_window(app: asyncpg.Connection) -> float:
    """COPY into the staging table, the chain a window aggregate in the INSERT (events/s)."""
    return await _staged_then(app, "bench_append_staged_window")


async def append_arrays_window(app: asyncpg.Connection) -> float:
    """Array arguments as today, the chain a window aggregate in the INSERT (events/s)."""
    with Stopwatch() as watch:
        session, ids, payloads = _batch()
        await app.fetchval(
            "SELECT count(*) FROM bench_append_arrays_window($1, 0, $2, $3, $4, $5, $6, $7)",
            *array_arguments(session, ids, payloads),
        )
    return BATCH / watch.seconds


async def chain_only(app: asyncpg.Connection) -> float:
    """A floor: the chain loop of ``chronicle_append`` alone, nothing written (events/s)."""
    with Stopwatch() as watch:
        session, ids, payloads = _batch()
        await app.fetchval(
            "SELECT bench_chain_only($1, $2, $3, $4, $5, $6, $7)",
            *array_arguments(session, ids, payloads),
        )
    return BATCH / watch.seconds


async def store_batch_staged(store: EventStore, app: asyncpg.Connection) -> float:
    """What the staged path would cost through the store (events/s): the caller's models,
    ``encode_batch`` with the store's settings, binary COPY into the staging table,
    ``bench_append_staged`` and the recorded events, as ``bench.eventstore``'s batch row
    times ``store.append`` (its counterpart here)."""
    session = uuid.uuid4()
    with Stopwatch() as watch:
        events = [Message(content=_text(i)) for i in range(BATCH)]
        batch = encode_batch(
            events,
            store.config.max_event_bytes,
            store.masker,
            blob_threshold=store.config.blob_threshold_bytes,
        )
        async with app.transaction():
            await app.fetchrow("SELECT * FROM bench_stage_batch($1)", session)
            await app.copy_records_to_table(
                "bench_staged",
                schema_name="pg_temp",
                columns=STAGED_COLUMNS,
                records=zip(
                    range(1, BATCH + 1),
                    batch.event_ids,
                    batch.kinds,
                    batch.sources,
                    batch.causes,
                    batch.payload_texts,
                    batch.versions,
                    [None] * BATCH,
                    strict=True,
                ),
            )
            rows = await app.fetch("SELECT * FROM bench_append_staged($1, 0)", session)
        recorded_from_result(session, batch, rows)
    return BATCH / watch.seconds


#: A 10,000-event batch's column arrays, built in the server.
SERVER_ARRAYS = f"""(SELECT array_agg(gen_random_uuid()) AS ids,
    array_agg('message'::text) AS kinds,
    array_agg('user'::text) AS sources, array_agg(NULL::integer) AS causes,
    array_agg('{{"content":"message number ' || g || ' ' || repeat('x', 80) || '"}}') AS payloads,
    array_agg(1::smallint) AS versions FROM generate_series(1, {BATCH}) g) a"""
COLUMNS = "ids, kinds, sources, causes, payloads, versions"
#: (name, as the superuser?, statement): the server's side of each piece.
SERVER_PIECES = (
    ("the arrays built", False, f"SELECT cardinality(ids) FROM {SERVER_ARRAYS}"),
    (
        "+ chronicle_append's chain loop alone",
        False,
        f"SELECT bench_chain_only(gen_random_uuid(), {COLUMNS}) FROM {SERVER_ARRAYS}",
    ),
    (
        "+ chronicle_append (chain and INSERT into events)",
        False,
        "SELECT (SELECT count(*) FROM chronicle_append(gen_random_uuid(), 0,"
        f" {COLUMNS}, false)) FROM {SERVER_ARRAYS}",
    ),
    (
        "+ the chain as a window aggregate in the INSERT",
        False,
        "SELECT (SELECT count(*) FROM bench_append_arrays_window(gen_random_uuid(), 0,"
        f" {COLUMNS})) FROM {SERVER_ARRAYS}",
    ),
    (
        "+ INSERT ... SELECT into the raw table, no chain",
        True,
        "INSERT INTO raw_events (session_id, seq, event_id, kind, source, payload, hash)"
        " SELECT x.s, t.ord, t.id, 'message', 'user', t.p::jsonb, sha256(''::bytea)"
        f" FROM (SELECT gen_random_uuid() AS s) x, {SERVER_ARRAYS},"
        " unnest(ids, payloads) WITH ORDINALITY AS t(id, p, ord)",
    ),
)


async def server_side(admin_url: str, app_url: str, rounds: int) -> dict[str, list[float]]:
    """Milliseconds per call of each piece, alternated (order reversed every other round),
    the first round discarded."""
    admin = await asyncpg.connect(admin_url)
    app = await asyncpg.connect(app_url)
    try:
        await admin.execute(RAW_TABLE)
        await create_staged_functions(admin)
        times: dict[str, list[float]] = {name: [] for name, _, _ in SERVER_PIECES}
        for round_ in range(rounds + 1):
            pieces = SERVER_PIECES if round_ % 2 == 0 else SERVER_PIECES[::-1]
            for name, as_admin, sql in pieces:
                started = time.perf_counter()
                await (admin if as_admin else app).execute(sql)
                if round_:
                    times[name].append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await app.close()
        await admin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The server's side of a 10,000-event batch")
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    parser.add_argument("--rounds", type=int, default=9, help="measured rounds")
    args = parser.parse_args(argv)
    with bench_database(args.url) as database:
        times = asyncio.run(server_side(database.admin, database.app, args.rounds))
    for name, samples in times.items():
        print(
            f"{name}: median {statistics.median(samples):.0f} ms"
            f" ({min(samples):.0f}-{max(samples):.0f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
