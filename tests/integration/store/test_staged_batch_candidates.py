"""The staged batch candidates of bench/append_staged.py keep the log's promises.

Issue 9's batch candidates (binary COPY into a staging table, then one function; the chain
computed in the function, verified set-based, or a window aggregate) are measured against
``chronicle_append`` by ``python -m bench.append_candidates``. A candidate that stored a
chain ``verify`` refuses, accepted a forged one, or read a table the caller controls would
make its figure meaningless, so each is checked here on a small batch.
"""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.events.canonical import canonical_json, format_timestamp
from app.events.ids import new_event_id
from app.store import EventStore
from bench.append_staged import client_chain, create_staged_functions, stage

EVENTS = 25


def batch() -> tuple[uuid.UUID, list[uuid.UUID], list[str]]:
    ids = [new_event_id() for _ in range(EVENTS)]
    texts = [canonical_json({"content": f'event {i} \u00e9 "quoted" \\ \n'}) for i in range(EVENTS)]
    return uuid.uuid4(), ids, texts


@pytest.fixture
async def candidates(superuser: asyncpg.Connection) -> None:
    await create_staged_functions(superuser)


async def append_staged(
    app: asyncpg.Connection, function: str, *, client_hashes: bool, forge_at: int | None = None
) -> uuid.UUID:
    """Two batches into one session through ``function`` (the second extends the chain)."""
    session = uuid.uuid4()
    for expected in (0, EVENTS):
        _, ids, payloads = batch()
        async with app.transaction():
            last_seq, head, at = await app.fetchrow("SELECT * FROM bench_stage_batch($1)", session)
            assert last_seq == expected
            hashes = None
            if client_hashes:
                hashes = client_chain(session, last_seq, head, format_timestamp(at), ids, payloads)
                if forge_at is not None:
                    hashes[forge_at] = bytes(32)
            await stage(app, session, ids, payloads, hashes)
            rows = await app.fetch(f"SELECT * FROM {function}($1, $2)", session, expected)
        assert [row["seq"] for row in sorted(rows, key=lambda r: r["seq"])] == list(
            range(expected + 1, expected + EVENTS + 1)
        )
    return session


@pytest.mark.parametrize(
    ("function", "client_hashes"),
    [
        ("bench_append_staged", False),
        ("bench_append_staged_verified", True),
        ("bench_append_staged_window", False),
    ],
)
async def test_a_staged_batch_stores_the_chain_verify_accepts(
    candidates: None,
    app_login: asyncpg.Connection,
    store: EventStore,
    function: str,
    client_hashes: bool,
) -> None:
    session = await append_staged(app_login, function, client_hashes=client_hashes)
    report = await store.verify(session)
    assert report.ok, report.reason
    assert report.checked == 2 * EVENTS


async def test_the_array_candidates_store_the_chain_verify_accepts(
    candidates: None, app_login: asyncpg.Connection, store: EventStore
) -> None:
    window, verified = uuid.uuid4(), uuid.uuid4()
    _, ids, payloads = batch()
    columns = (["message"] * EVENTS, ["user"] * EVENTS, [None] * EVENTS, payloads, [1] * EVENTS)
    await app_login.fetch(
        "SELECT * FROM bench_append_arrays_window($1, 0, $2, $3, $4, $5, $6, $7)",
        window,
        ids,
        *columns,
    )
    _, ids, payloads = batch()
    columns = (["message"] * EVENTS, ["user"] * EVENTS, [None] * EVENTS, payloads, [1] * EVENTS)
    async with app_login.transaction():
        last_seq, head, at = await app_login.fetchrow(
            "SELECT * FROM bench_stage_batch($1)", verified
        )
        hashes = client_chain(verified, last_seq, head, format_timestamp(at), ids, payloads)
        await app_login.fetch(
            "SELECT * FROM bench_append_arrays_verified($1, 0, $2, $3, $4, $5, $6, $7, $8)",
            verified,
            ids,
            *columns,
            hashes,
        )
    for session in (window, verified):
        assert (await store.verify(session)).ok


@pytest.mark.parametrize("forged", [0, EVENTS // 2, EVENTS - 1])
async def test_a_forged_hash_in_a_staged_batch_is_refused_and_nothing_is_written(
    candidates: None, app_login: asyncpg.Connection, forged: int
) -> None:
    """Each row is checked against the row before it (the first against the head): a forged
    hash anywhere, including the last one that no later row would check, is refused."""
    with pytest.raises(asyncpg.PostgresError) as refused:
        await append_staged(
            app_login, "bench_append_staged_verified", client_hashes=True, forge_at=forged
        )
    assert refused.value.sqlstate == "CR004"
    assert await app_login.fetchval("SELECT count(*) FROM events") == 0


async def test_a_staging_table_the_caller_made_is_refused(
    candidates: None, app_login: asyncpg.Connection
) -> None:
    """A table the caller owns could carry a policy or be a view whose expressions would run
    as the definer when the append reads it: the stage function refuses to use it."""
    await app_login.execute(
        "CREATE TEMP TABLE bench_staged (ord integer, event_id uuid, kind text, source text,"
        " cause integer, payload text, version smallint, hash bytea)"
    )
    with pytest.raises(asyncpg.PostgresError) as refused:
        await app_login.fetchrow("SELECT * FROM bench_stage_batch($1)", uuid.uuid4())
    assert refused.value.sqlstate == "CR005"


async def test_the_caller_may_only_insert_into_the_staging_table(
    candidates: None, app_login: asyncpg.Connection
) -> None:
    async with app_login.transaction():
        await app_login.fetchrow("SELECT * FROM bench_stage_batch($1)", uuid.uuid4())
        for statement in (
            "ALTER TABLE pg_temp.bench_staged ENABLE ROW LEVEL SECURITY",
            "CREATE RULE r AS ON SELECT TO pg_temp.bench_staged DO INSTEAD NOTHING",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with app_login.transaction():
                    await app_login.execute(statement)
