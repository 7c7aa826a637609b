"""The session list's trial and replay columns, its run, task and date-range filters, its
orders and its totals (``session_owners.list_visible_records`` and ``visible_totals``, what
``GET /api/sessions`` answers with), on real PostgreSQL: rows of ``session_state`` as the
projection writes them, the sessions' first events and replay results in the log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from app.events import SessionCreated
from app.events.replay import ReplayResultEvent
from app.sessions.sql.session_owners import SessionFilters, list_visible_records, visible_totals
from app.store import EventStore

START = datetime(2026, 3, 1, tzinfo=UTC)


async def session(
    store: EventStore,
    superuser: asyncpg.Connection,
    minute: int,
    *,
    config: dict[str, Any] | None = None,
    replay: dict[str, Any] | None = None,
    **state: Any,
) -> UUID:
    """A session started ``minute`` minutes after START: its first event (with ``config``),
    a replay's result, and its ``session_state`` row."""
    made = uuid4()
    events: list[Any] = [SessionCreated(config=config or {})]
    if replay is not None:
        events.append(ReplayResultEvent(
            replay_of=state["replay_of"], mode="strict", steps_recorded=2, steps_served=2,
            steps_matched=1, model_calls=0, seconds=0.1, **replay,
        ))  # fmt: skip
    await store.append(made, events, expected_seq=0)
    at = START + timedelta(minutes=minute)
    await superuser.execute(
        "INSERT INTO session_state (session_id, title, created_at, updated_at, status, "
        "model_calls, priced_calls, unpriced_calls, input_tokens, output_tokens, cost_usd, "
        "steps, last_seq, replay_of, evaluation_run) "
        "VALUES ($1, $2, $3, $3, 'finished', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        made, f"session {minute}", at, state.get("model_calls", 0), state.get("priced_calls", 0),
        state.get("unpriced_calls", 0), state.get("input_tokens", 0),
        state.get("output_tokens", 0), state.get("cost_usd"), state.get("steps", 0),
        len(events), state.get("replay_of"), state.get("run"),
    )  # fmt: skip
    return made


def trial(run: str, task: str, epoch: int) -> dict[str, Any]:
    return {"evaluation_run": run, "evaluation_task": {"id": task}, "evaluation_epoch": epoch}


async def test_trials_replays_orders_ranges_and_totals(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    a1 = await session(store, superuser, 1, config=trial("r1", "sort", 1), run="r1", steps=5,
                       model_calls=2, priced_calls=2, input_tokens=100, output_tokens=10,
                       cost_usd=Decimal("0.5"))  # fmt: skip
    a2 = await session(store, superuser, 2, config=trial("r1", "sort", 2), run="r1", steps=9,
                       model_calls=1, unpriced_calls=1, input_tokens=7)  # fmt: skip
    b1 = await session(store, superuser, 3, config=trial("r1", "parse", 1), run="r1", steps=1,
                       model_calls=3, priced_calls=3, output_tokens=900,
                       cost_usd=Decimal("2"))  # fmt: skip
    source = await session(store, superuser, 4)
    matched = await session(store, superuser, 5, replay_of=source,
                            replay={"matched": True})  # fmt: skip
    stopped = {"matched": False, "divergence": {"kind": "request"}}
    diverged = await session(store, superuser, 6, replay_of=source, replay=stopped)
    differed = await session(store, superuser, 7, replay_of=source,
                             replay={"matched": False, "differences": [{"step": 1}]})  # fmt: skip

    listed = await list_visible_records(store, owner=None, limit=50)
    by_id = {row["session_id"]: row for row in listed}
    assert [(by_id[s]["task"], by_id[s]["epoch"]) for s in (a1, a2, b1)] == [
        ("sort", 1), ("sort", 2), ("parse", 1)
    ]  # fmt: skip
    assert by_id[source]["task"] is None and by_id[source]["replay_outcome"] is None
    outcomes = [by_id[s]["replay_outcome"] for s in (matched, diverged, differed)]
    assert outcomes == ["matched", "diverged", "differed"]

    run = SessionFilters(run="r1")
    in_run = await list_visible_records(store, owner=None, limit=50, filters=run)
    assert [row["session_id"] for row in in_run] == [b1, a2, a1]  # newest first
    one_task = SessionFilters(run="r1", task="sort")
    assert {r["session_id"] for r in await list_visible_records(
        store, owner=None, limit=50, filters=one_task)} == {a1, a2}  # fmt: skip

    async def order(sort: Any) -> list[UUID]:
        rows = await list_visible_records(store, owner=None, limit=50, filters=run, sort=sort)
        return [row["session_id"] for row in rows]

    assert await order("oldest") == [a1, a2, b1]
    assert await order("cost") == [b1, a1, a2]  # no known cost last
    assert await order("tokens") == [b1, a1, a2]
    assert await order("steps") == [a2, a1, b1]

    window = SessionFilters(since=START + timedelta(minutes=2), until=START + timedelta(minutes=4))
    assert [r["session_id"] for r in await list_visible_records(
        store, owner=None, limit=50, filters=window)] == [b1, a2]  # fmt: skip

    totals = dict(await visible_totals(store, owner=None, filters=run))
    assert totals == {
        "sessions": 3, "model_calls": 6, "input_tokens": 107, "output_tokens": 910,
        "cost_usd": Decimal("2.5"), "unpriced_calls": 1,
    }  # fmt: skip
    unpriced = SessionFilters(run="r1", task="sort", since=START + timedelta(minutes=2))
    only_unpriced = dict(await visible_totals(store, owner=None, filters=unpriced))
    assert only_unpriced["sessions"] == 1 and only_unpriced["cost_usd"] is None
    assert only_unpriced["unpriced_calls"] == 1
    owned = await visible_totals(store, owner=uuid4(), filters=run)  # a member with none
    assert owned["sessions"] == 0 and owned["cost_usd"] is None
