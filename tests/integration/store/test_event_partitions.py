"""Every invariant of the log holds across the monthly partitions of ``events`` (migration
0026): a session whose first events are in last month's partition (imported with their
times, tests/support/months.py) and whose next ones are appended into this month's."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.events import Message, Run, RunOutput, SessionCreated
from app.sessions.sql.annotations import ANNOTATIONS_SQL
from app.sessions.sql.steering_marks import MARKS_SQL
from app.sessions.sql.workspace_events import WORKSPACE_SEQS_SQL
from app.store import DuplicateEventError, EventStore, InvalidEventError
from app.store.event_store import READ_SESSION_SQL
from app.store.partitions import current_month, list_partitions
from tests.support.months import import_last_month

APPEND_ONE = "SELECT * FROM chronicle_append_one($1, NULL, $2, $3, $4, $5, $6, 1::smallint)"


async def _months_of(superuser: asyncpg.Connection, session: uuid.UUID) -> list[tuple[int, str]]:
    rows = await superuser.fetch(
        "SELECT seq, tableoid::regclass::text AS month FROM events WHERE session_id = $1 "
        "ORDER BY seq",
        session,
    )
    return [(row["seq"], row["month"]) for row in rows]


def _month_name(months_back: int = 0) -> str:
    start = current_month()
    index = start.year * 12 + start.month - 1 - months_back
    return f"events_{index // 12:04d}_{index % 12 + 1:02d}"


async def _across(superuser: asyncpg.Connection, store: EventStore) -> tuple[uuid.UUID, Run]:
    """A session: created and a command last month, its output and a message this month."""
    session, run = uuid.uuid4(), Run(command="ls")
    await import_last_month(superuser, session, [SessionCreated(title="old"), run])
    await store.append(
        session,
        [RunOutput(cause=2, output="a\n", exit_code=0), Message(content="hi")],
        expected_seq=2,
    )
    return session, run


async def test_a_session_in_two_months_is_gapless_chained_and_read_whole(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    session, _ = await _across(superuser, store)
    assert await _months_of(superuser, session) == [
        (1, _month_name(1)),
        (2, _month_name(1)),
        (3, _month_name()),
        (4, _month_name()),
    ]
    report = await store.verify(session)
    assert report.ok, report
    assert [e.seq for e in await store.read(session)] == [1, 2, 3, 4]
    assert [e.seq for e in await store.read(session, after_seq=1, limit=2)] == [2, 3]
    head = await superuser.fetchrow(
        "SELECT last_seq, first_event_at, last_event_at FROM sessions WHERE id = $1", session
    )
    times = await superuser.fetchrow(
        "SELECT min(created_at) AS lo, max(created_at) AS hi FROM events WHERE session_id = $1",
        session,
    )
    assert (head["last_seq"], head["first_event_at"], head["last_event_at"]) == (
        4,
        times["lo"],
        times["hi"],
    )


async def test_positions_are_unique_and_keep_growing_across_months(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    session, _ = await _across(superuser, store)
    await store.append(session, [Message(content="more")])
    positions = [
        row["global_position"]
        for row in await superuser.fetch(
            "SELECT global_position FROM events WHERE session_id = $1 ORDER BY seq", session
        )
    ]
    assert len(set(positions)) == 5
    assert positions[2:] == sorted(positions[2:])
    duplicates = await superuser.fetchval(
        "SELECT count(*) FROM (SELECT global_position FROM events GROUP BY 1 HAVING count(*) > 1) d"
    )
    assert duplicates == 0


async def test_a_second_observation_of_an_action_from_last_month_is_refused(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    session, run = uuid.uuid4(), Run(command="ls")
    # the action and its observation last month; this month another answer to it
    await import_last_month(
        superuser, session, [SessionCreated(title="t"), run, RunOutput(cause=2, output="x")]
    )
    with pytest.raises(DuplicateEventError, match="already has its observation"):
        await store.append(session, [RunOutput(cause=2, output="again")])
    # the database refuses it, whoever calls: the application's login, straight to the function
    with pytest.raises(asyncpg.UniqueViolationError) as raised:
        await app_login.fetch(
            APPEND_ONE,
            session,
            uuid.uuid4(),
            "run.output",
            "environment",
            2,
            '{"exit_code":null,"output":"again","still_running":false,"truncated":false}',
        )
    assert raised.value.constraint_name == "event_ids_one_observation_per_action"
    assert [seq for seq, _ in await _months_of(superuser, session)] == [1, 2, 3]
    # an observation of another action is fine
    await store.append(session, [Run(command="pwd"), RunOutput(cause=4, output="/")])
    assert (await store.verify(session)).ok


async def test_a_second_session_created_in_the_next_month_is_refused(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    session = uuid.uuid4()
    await import_last_month(superuser, session, [SessionCreated(title="first")])
    with pytest.raises(InvalidEventError, match=r"already has its session\.created"):
        await store.append(session, [SessionCreated(title="again")])
    assert len(await store.read(session)) == 1


async def test_an_event_id_from_last_month_is_still_its_key(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    session, message = uuid.uuid4(), Message(content="once")
    await import_last_month(superuser, session, [SessionCreated(title="t"), message])
    # a re-sent append of last month's event is recognised, and writes nothing
    again = await store.append(session, [message])
    assert [(e.seq, e.event_id) for e in again] == [(2, message.event_id)]
    assert len(await store.read(session)) == 2
    # in another session, the same id is refused, as in one table
    with pytest.raises(DuplicateEventError, match="already recorded in session"):
        await store.append(uuid.uuid4(), [message])
    # a batch of a new event and last month's is refused whole
    with pytest.raises(DuplicateEventError):
        await store.append(session, [Message(content="new"), message])
    assert len(await store.read(session)) == 2


async def test_every_month_is_append_only(superuser: asyncpg.Connection, store: EventStore) -> None:
    session, _ = await _across(superuser, store)
    old, new = _month_name(1), _month_name()
    for statement in (
        "UPDATE events SET payload = '{}' WHERE session_id = $1",
        "DELETE FROM events WHERE session_id = $1",
        f"UPDATE {old} SET payload = '{{}}' WHERE session_id = $1",
        f"DELETE FROM {new} WHERE session_id = $1",
    ):
        with pytest.raises(asyncpg.PostgresError, match="append-only"):
            await superuser.execute(statement, session)
    for table in ("events", old, new):
        with pytest.raises(asyncpg.PostgresError, match="append-only: TRUNCATE"):
            await superuser.execute(f"TRUNCATE {table}")
    assert len(await store.read(session)) == 4


async def test_the_application_cannot_remove_a_month(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    await _across(superuser, store)
    old = _month_name(1)
    for statement in (
        f"TRUNCATE {old}",
        f"DELETE FROM {old}",
        f"DROP TABLE {old}",
        f"ALTER TABLE events DETACH PARTITION {old}",
        f"SELECT chronicle_drop_event_partition('{old}')",
        f"SELECT chronicle_event_partition_keys('{old}')",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_login.execute(statement)
    assert old in {p.name for p in await list_partitions(superuser)}


#: Reads of one session's events, each with its arguments after the session's id.
ONE_SESSION_READS = {
    "read": (READ_SESSION_SQL, (0, None)),
    "steering marks": (MARKS_SQL, ()),
    "workspace seqs": (WORKSPACE_SEQS_SQL, ()),
    "annotations": (ANNOTATIONS_SQL, (10,)),
}


@pytest.mark.parametrize("read", ONE_SESSION_READS)
async def test_a_read_looks_only_at_the_months_of_its_session(
    superuser: asyncpg.Connection, store: EventStore, read: str
) -> None:
    """The head's first event time bounds created_at, and PostgreSQL skips the earlier
    months when the query runs (``never executed`` in EXPLAIN ANALYZE)."""
    await _across(superuser, store)  # last month holds events of another session
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="new"), Message(content="now")])
    sql, args = ONE_SESSION_READS[read]
    plan = "\n".join(
        row[0]
        for row in await superuser.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}", session, *args
        )
    )
    lines = plan.splitlines()
    old_scans = [line for line in lines if _month_name(1) in line]
    new_scans = [line for line in lines if f"on {_month_name()} " in line]
    assert old_scans and all("never executed" in line for line in old_scans), plan
    assert new_scans and not any("never executed" in line for line in new_scans), plan
