"""The usage rollups: the sums behind ``daily_usage`` and ``session_costs``, extended from
where they stopped (migration 0028; docs/analytics.md, "How the usage views stay fast").

The views are always whole without a refresh (they add the calls after the rollups'
position as they are); a refresh only keeps what they add short, so reading them costs what
the calls since the last refresh cost, not the whole log. The projection runner refreshes
every ``rollups_interval`` seconds (app/projections/rollup_keeper.py); a refresh is one
function call per step of at most ``calls_per_step`` calls, each its own transaction, so a
first refresh over a large log makes progress that a crash does not lose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg
from pydantic import BaseModel

from app.store.errors import StoreError

if TYPE_CHECKING:
    from app.store.event_store import EventStore

REFRESH_SQL = "SELECT counted, caught_up FROM chronicle_refresh_usage_rollups($1::integer)"
#: Calls counted in one transaction: large enough that a step's fixed cost is nothing, small
#: enough that a first refresh of a large log commits every few seconds.
CALLS_PER_STEP = 50_000


class RollupError(StoreError):
    """The rollups could not be refreshed; the message says why."""


class RollupRefresh(BaseModel):
    """What one refresh did: the calls it counted, in how many steps."""

    counted: int
    steps: int


async def refresh_usage_rollups(
    target: EventStore | asyncpg.Pool | asyncpg.Connection,
    *,
    calls_per_step: int = CALLS_PER_STEP,
) -> RollupRefresh:
    """Count every call committed since the last refresh into the rollups, a step at a time
    until the head of the log."""
    if calls_per_step < 1:
        raise RollupError(f"calls_per_step must be 1 or more, not {calls_per_step}")
    from app.store.event_store import EventStore

    conn = target.pool if isinstance(target, EventStore) else target
    counted = steps = 0
    while True:
        try:
            row = await conn.fetchrow(REFRESH_SQL, calls_per_step)
        except asyncpg.UndefinedFunctionError:
            raise RollupError(
                "this database has no usage rollups: run `chronicle db migrate`"
            ) from None
        except asyncpg.InsufficientPrivilegeError as exc:
            raise RollupError(f"this login may not refresh the usage rollups ({exc})") from None
        assert row is not None
        steps += 1
        counted += row["counted"]
        if row["caught_up"]:
            return RollupRefresh(counted=counted, steps=steps)
