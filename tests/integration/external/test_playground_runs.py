"""The playground runs of a session's calls, read from PostgreSQL: by the session they came
from (and one call's only), a member's own, an admin's all; the query is one the partial index
of migration 0024 answers (so the list never reads every session's first event)."""

from __future__ import annotations

import re
import uuid

from app.events import SessionCreated
from app.events.session_config import CallLink
from app.external.playground import PLAYGROUND_CLIENT
from app.external.sessions import external_session
from app.external.sql.playground_runs import ALL_RUNS_SQL, OWN_RUNS_SQL, playground_runs
from app.sessions.sql.session_owners import record_owner
from app.sessions.sql.users import add_user
from app.store import EventStore


async def run_of(store: EventStore, owner: uuid.UUID, source: uuid.UUID, seq: int) -> uuid.UUID:
    session = uuid.uuid4()
    link = CallLink(session=str(source), seq=seq, changes=["message 0 (system) edited"])
    created = external_session(
        title="a run", user="x", user_agent=PLAYGROUND_CLIENT, extra={"from_call": link.stored()}
    )
    await record_owner(store, session, owner)
    await store.append(session, [created], expected_seq=0)
    return session


async def test_runs_by_source_call_and_owner(store: EventStore) -> None:
    ada, bob = (await add_user(store, "ada")).id, (await add_user(store, "bob")).id
    source, other = uuid.uuid4(), uuid.uuid4()
    first = await run_of(store, ada, source, 2)
    second = await run_of(store, ada, source, 4)
    bobs = await run_of(store, bob, source, 2)
    await run_of(store, ada, other, 2)
    # a session that is no run (no from_call) is never listed
    await store.append(uuid.uuid4(), [SessionCreated(title="plain")], expected_seq=0)

    def ids(rows: list) -> list[uuid.UUID]:
        return [row["session_id"] for row in rows]

    mine = await playground_runs(store, source, seq=None, owner=ada, limit=10)
    assert ids(mine) == [second, first]  # newest first
    assert mine[0]["from_call"] == {
        "session": str(source),
        "seq": 4,
        "changes": ["message 0 (system) edited"],
    }
    assert ids(await playground_runs(store, source, seq=2, owner=ada, limit=10)) == [first]
    everyone = await playground_runs(store, source, seq=None, owner=None, limit=10)
    assert set(ids(everyone)) == {first, second, bobs}
    assert ids(await playground_runs(store, source, seq=None, owner=None, limit=1)) == [bobs]
    assert await playground_runs(store, uuid.uuid4(), seq=None, owner=None, limit=10) == []


async def test_the_lists_are_read_through_the_playground_index(store: EventStore) -> None:
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL enable_seqscan = off")
        for sql, args in (
            (ALL_RUNS_SQL, (str(uuid.uuid4()), 10, None)),
            (OWN_RUNS_SQL, (str(uuid.uuid4()), 10, 2, uuid.uuid4())),
        ):
            plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {sql}", *args))
            # the index, or its part in a month of events (migration 0026)
            assert re.search(r"events_(\d{4}_\d{2}_)?playground_runs", plan), plan
