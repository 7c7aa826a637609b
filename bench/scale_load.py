"""Fill a database with a ``Shape``'s sessions fast, through the store's import path.

Appending ten million events one by one (``chronicle_append``) would take hours; an archive's
import is the bulk path the store already has. Each worker process makes its share of the
sessions (``scale_shape``), encodes their payloads with the store's own encoder
(``append.encode_batch``: blobs moved out as an append does), chains their hashes with the
project's canonical hashing (``app.events.chain.link``, the current chain, as the
in-memory log does), stores their prompt messages and blobs through the store
(``put_messages``, ``put_blobs``: the database re-hashes every one) and writes the events with
``chronicle_import``, which re-computes every hash in the database and refuses an event that
does not extend its session's chain. Owners are ``session_owners`` rows, as the API writes.

Then ``verify_all`` checks every session with the store's verification, in a process per
core: the data is a valid log, or the run stops.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from app.events.chain import link
from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.append import encode_batch
from app.store.archive.loader import EVENTS_PER_CALL, IMPORT_SQL
from app.store.config import StoreConfig
from app.store.integrity.verification import session_ids
from app.store.records import RecordedEvent
from bench.scale_shape import GeneratedSession, Shape, generate_session

#: Sessions written per transaction by one worker.
SESSIONS_PER_BATCH = 20
OWNERS_SQL = """
INSERT INTO session_owners (session_id, user_id, created_at)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[])
"""
ADD_USER_SQL = "SELECT id FROM chronicle_add_user($1, $2, $3)"


def user_ids(shape: Shape) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """The admin's id and each member's (fixed by the shape's seed)."""
    admin = uuid.UUID(int=shape.seed << 64 | 1, version=4)
    members = [uuid.UUID(int=shape.seed << 64 | 2 + n, version=4) for n in range(shape.members)]
    return admin, members


def import_rows(
    session: GeneratedSession, config: StoreConfig
) -> tuple[list[list[Any]], dict[str, str]]:
    """``chronicle_import``'s arguments for the session, a call per ``EVENTS_PER_CALL``
    events, and the blobs its payloads refer to."""
    batch = encode_batch(
        session.events, config.max_event_bytes, blob_threshold=config.blob_threshold_bytes
    )
    head = b""
    hashes: list[bytes] = []
    for index, event_id in enumerate(batch.event_ids):
        event = RecordedEvent(
            global_position=0,
            session_id=session.session_id,
            seq=index + 1,
            event_id=event_id,
            tx=0,
            kind=batch.kinds[index],
            source=batch.sources[index],
            cause=batch.causes[index],
            payload=batch.payloads[index],
            schema_version=batch.versions[index],
            created_at=session.times[index],
            hash=b"",
        )
        head = link(head, **event.hashed_fields())
        hashes.append(head)
    calls = []
    for start in range(0, len(hashes), EVENTS_PER_CALL):
        end = start + EVENTS_PER_CALL
        calls.append(
            [
                session.session_id,
                list(range(start + 1, min(end, len(hashes)) + 1)),
                batch.event_ids[start:end],
                batch.kinds[start:end],
                batch.sources[start:end],
                batch.causes[start:end],
                batch.payload_texts[start:end],
                batch.versions[start:end],
                session.times[start:end],
                hashes[start:end],
            ]
        )
    return calls, dict(batch.blobs)


async def _write(
    store: EventStore, shape: Shape, indices: Sequence[int], members: list[uuid.UUID]
) -> int:
    config = store.config
    calls: list[list[Any]] = []
    blobs: dict[str, str] = {}
    messages: dict[str, str] = {}
    owners: tuple[list[uuid.UUID], list[uuid.UUID], list[Any]] = ([], [], [])
    events = 0
    for index in indices:
        session = generate_session(shape, index)
        rows, found = import_rows(session, config)
        calls.extend(rows)
        blobs.update(found)
        messages.update(session.messages)
        owners[0].append(session.session_id)
        owners[1].append(members[session.owner])
        owners[2].append(session.times[0])
        events += len(session.events)
    await store.put_messages(list(messages), list(messages.values()))
    if blobs:
        await store.put_blobs(blobs)
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.executemany(IMPORT_SQL, calls)
        await connection.execute(OWNERS_SQL, *owners)
    return events


async def _load_share(
    owner_url: str, shape: Shape, worker: int, workers: int, done: Synchronized[int]
) -> None:
    _, members = user_ids(shape)
    config = StoreConfig(pool_max_size=2).long_running()
    async with await EventStore.open(owner_url, masker=SecretMasker(), config=config) as store:
        mine = range(worker, shape.sessions, workers)
        for start in range(0, len(mine), SESSIONS_PER_BATCH):
            written = await _write(store, shape, mine[start : start + SESSIONS_PER_BATCH], members)
            with done.get_lock():
                done.value += written


def _load_worker(
    owner_url: str, shape_json: str, worker: int, workers: int, done: Synchronized[int]
) -> None:
    asyncio.run(
        _load_share(owner_url, Shape.model_validate_json(shape_json), worker, workers, done)
    )


#: Present once ``events`` is partitioned by month (issue 28): it makes the months asked for.
ENSURE_PARTITIONS = "chronicle_ensure_event_partitions(date,integer)"


def months_spanned(first: date, last: date) -> int:
    """Calendar months from ``first``'s to ``last``'s, both included."""
    return (last.year * 12 + last.month) - (first.year * 12 + first.month) + 1


async def prepare_database(owner_url: str, shape: Shape) -> None:
    """The users who own the sessions and, where ``events`` is partitioned by month, the
    months the sessions span up to two months from now (the appends measured are now)."""
    admin, members = user_ids(shape)
    config = StoreConfig(pool_max_size=1)
    async with await EventStore.open(owner_url, masker=SecretMasker(), config=config) as store:
        if await store.pool.fetchval("SELECT to_regprocedure($1)", ENSURE_PARTITIONS):
            first = shape.start.date()
            last = max(shape.start + shape.span + timedelta(days=3), datetime.now(UTC)).date()
            await store.pool.fetch(
                "SELECT chronicle_ensure_event_partitions($1, $2)",
                first,
                months_spanned(first, last) + 2,
            )
        await store.pool.execute(ADD_USER_SQL, admin, "scale-admin", True)
        for number, member in enumerate(members):
            await store.pool.execute(ADD_USER_SQL, member, f"scale-member-{number}", False)


def in_processes(
    target: Callable[..., None],
    arguments: Callable[[int, Synchronized[int]], tuple[Any, ...]],
    workers: int,
    total: int,
    what: str,
    report: Callable[[str], None],
) -> float:
    """Run ``target(*arguments(worker, counter))`` in ``workers`` processes, printing the
    shared counter's progress against ``total``; the seconds it took."""
    context = multiprocessing.get_context("spawn")
    done: Synchronized[int] = context.Value("q", 0)  # type: ignore[assignment]
    processes = [
        context.Process(target=target, args=arguments(worker, done), daemon=True)
        for worker in range(workers)
    ]
    started = time.perf_counter()
    for process in processes:
        process.start()
    shown = 0.0
    while any(process.is_alive() for process in processes):
        time.sleep(0.2)
        elapsed = time.perf_counter() - started
        if elapsed - shown >= 5:
            shown = elapsed
            value = done.value
            rate = value / elapsed if elapsed else 0
            left = (total - value) / rate if rate else float("inf")
            report(f"{what}: {value:,}/{total:,} events, {rate:,.0f}/s, ~{left:,.0f} s left")
        if any(process.exitcode not in (None, 0) for process in processes):
            for process in processes:
                if process.is_alive():
                    process.terminate()
            raise RuntimeError(f"{what}: a worker process failed (see its traceback above)")
    return time.perf_counter() - started


def load(owner_url: str, shape: Shape, workers: int, report: Callable[[str], None]) -> float:
    """Write every session of ``shape`` (an empty migrated database); the seconds it took."""
    asyncio.run(prepare_database(owner_url, shape))
    shape_json = shape.model_dump_json()
    return in_processes(
        _load_worker,
        lambda worker, done: (owner_url, shape_json, worker, workers, done),
        workers,
        shape.events,
        "generating",
        report,
    )


# -- verification of everything --------------------------------------------------------------


async def _verify_share(app_url: str, worker: int, workers: int, done: Synchronized[int]) -> None:
    config = StoreConfig(pool_max_size=1).long_running()
    async with await EventStore.open(app_url, masker=SecretMasker(), config=config) as store:
        sessions = sorted(await session_ids(store))[worker::workers]
        for session in sessions:
            result = await store.verify(session)
            if not result.ok:
                print(
                    f"session {session}: {result.reason} (seq {result.first_bad_seq})",
                    file=sys.stderr,
                )
                raise SystemExit(1)
            with done.get_lock():
                done.value += result.checked


def _verify_worker(app_url: str, worker: int, workers: int, done: Synchronized[int]) -> None:
    asyncio.run(_verify_share(app_url, worker, workers, done))


def verify_all(app_url: str, events: int, workers: int, report: Callable[[str], None]) -> float:
    """Verify every session (``EventStore.verify``); the seconds it took. Raises if one
    does not verify."""
    return in_processes(
        _verify_worker,
        lambda worker, done: (app_url, worker, workers, done),
        workers,
        events,
        "verifying",
        report,
    )
