"""session_state and the usage views after an erasure (docs/erasure.md): the usage rollups keep
a session's tokens and cost by day, model and session, and its session_state row says erased,
keeps its counts, and holds nothing it copied from the content."""

from __future__ import annotations

from decimal import Decimal

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.projections import SessionState, rebuild
from app.projections.catch_up import catch_up
from app.projections.sql.projection_store import ProjectionConnection
from app.store import EventStore, erase_session
from tests.support.priced_recordings import record_and_replay


async def test_the_aggregates_outlive_an_erased_session(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """The usage rollups keep its tokens and cost by day and model, and session_state keeps
    its counts and says erased (a rebuild, with no events left to count, keeps a bare row)."""
    spent = await record_and_replay(store)
    events = await store.last_seq(spent.recorded)
    total = sum((Decimal(repr(cost)) for cost in spent.costs), Decimal(0))
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=50)
        await erase_session(
            store,
            spent.recorded,
            key=Ed25519PrivateKey.generate(),
            actor="ops",
            via="cli",
            policy="p",
        )
        position = (await connection.checkpoint("session_state")).position
        await catch_up(store, connection, SessionState(), position, batch_size=50)
        row = await superuser.fetchrow(
            "SELECT * FROM session_state WHERE session_id = $1", spent.recorded
        )
        assert (row["status"], row["title"], row["model_calls"]) == ("erased", None, 3)
        assert row["erased_at"] is not None and row["cost_usd"] == total
        await rebuild(store, connection, SessionState(), batch_size=50)
    row = await superuser.fetchrow(
        "SELECT * FROM session_state WHERE session_id = $1", spent.recorded
    )
    assert (row["status"], row["model_calls"], row["last_seq"]) == ("erased", 0, events)
    cost = await superuser.fetchval(
        "SELECT sum(cost_usd) FROM session_costs WHERE session_id = $1", spent.recorded
    )
    assert Decimal(repr(cost)) == total
    assert Decimal(repr(await superuser.fetchval("SELECT sum(cost_usd) FROM daily_usage"))) == total
