"""session_state counts spend once: a replay's calls are served from the recording (they carry
its usage and cost) and call no model, so the replay row spends 0 and says what it served.

Version 1 of the projection counted the served calls as model calls: the replay's row had
the recording's tokens and cost, and the sum of cost_usd over sessions doubled with it.
"""

from __future__ import annotations

from decimal import Decimal

import asyncpg

from app.projections import SessionState, rebuild
from app.projections.sql.projection_store import ProjectionConnection
from app.store import EventStore
from tests.support.priced_recordings import record_and_replay


async def test_a_replay_spends_nothing_and_keeps_the_recorded_cost_apart(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    spent = await record_and_replay(store)
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=50)
    rows = {
        row["session_id"]: row
        for row in await superuser.fetch(
            "SELECT * FROM session_state WHERE session_id = ANY($1::uuid[])",
            [spent.recorded, spent.replayed],
        )
    }
    total = sum((Decimal(repr(cost)) for cost in spent.costs), Decimal(0))
    recorded, replayed = rows[spent.recorded], rows[spent.replayed]

    assert (recorded["model_calls"], recorded["cost_usd"], recorded["input_tokens"]) == (
        3, total, spent.input_tokens
    )  # fmt: skip
    assert (recorded["served_calls"], recorded["served_cost_usd"]) == (0, None)

    assert replayed["replay_of"] == spent.recorded
    assert (replayed["model_calls"], replayed["priced_calls"], replayed["cost_usd"]) == (0, 0, 0)
    assert replayed["input_tokens"] == replayed["output_tokens"] == 0
    assert (replayed["served_calls"], replayed["served_cost_usd"]) == (3, total)
    # What the replay did itself is still its own: its actions and how it ended.
    assert replayed["steps"] == recorded["steps"] == 3
    assert replayed["status"] == "finished"

    total_spent = await superuser.fetchval("SELECT sum(cost_usd) FROM session_state")
    assert total_spent == total
