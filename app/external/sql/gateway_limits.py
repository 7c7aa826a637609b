"""The gateway's limits in the database (migration 0019): a user's limits an admin set, and
what each limited scope (a user, a session) has used.

``reserve`` is the one place a call is counted: it locks the scopes' usage rows (made on
first use), always the session's before the user's so two calls never wait on each other in
a cycle, hands them to the caller's decision (pure code: app/external/limits.py) with the
database's clock, and writes what the decision returns, all in one transaction. Concurrent
calls of one scope, from any number of processes, are thereby decided one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from app.store import EventStore


@dataclass(frozen=True)
class UserLimits:
    """A user's own limits (None: the deployment's default)."""

    max_cost_usd: float | None = None
    max_calls: int | None = None
    models: tuple[str, ...] | None = None
    rate_per_minute: float | None = None


@dataclass(frozen=True)
class Usage:
    """What one scope has used: calls made (refused ones not), their recorded cost, and its
    rate bucket (``tokens`` at ``refilled_at``, seconds of the database's clock; ``tokens``
    None: full)."""

    calls: int = 0
    cost_usd: float = 0.0
    tokens: float | None = None
    refilled_at: float = 0.0


#: (scope, subject): ``("session", session_id)`` or ``("user", user_id)``.
Key = tuple[str, UUID]
#: The decision: given each scope's usage (in the order asked) and the clock, the new usage
#: of each, or None (refused: the refusal counted, nothing else written).
Decision = Callable[[list[Usage], float], list[Usage] | None]

_USAGE_COLUMNS = "calls, cost_usd, tokens, refilled_at"


async def user_limits(store: EventStore, user_id: UUID) -> UserLimits | None:
    row = await store.pool.fetchrow(
        "SELECT max_cost_usd, max_calls, models, rate_per_minute FROM gateway_user_limits "
        "WHERE user_id = $1",
        user_id,
    )
    if row is None:
        return None
    models = row["models"]
    return UserLimits(
        max_cost_usd=row["max_cost_usd"],
        max_calls=row["max_calls"],
        models=None if models is None else tuple(models),
        rate_per_minute=row["rate_per_minute"],
    )


async def set_user_limits(store: EventStore, user_id: UUID, limits: UserLimits) -> None:
    """Replace the user's limits (the database owner's login only: migration 0019)."""
    await store.pool.execute(
        "INSERT INTO gateway_user_limits (user_id, max_cost_usd, max_calls, models, "
        "rate_per_minute) VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT (user_id) DO UPDATE SET max_cost_usd = EXCLUDED.max_cost_usd, "
        "max_calls = EXCLUDED.max_calls, models = EXCLUDED.models, "
        "rate_per_minute = EXCLUDED.rate_per_minute, updated_at = now()",
        user_id,
        limits.max_cost_usd,
        limits.max_calls,
        None if limits.models is None else list(limits.models),
        limits.rate_per_minute,
    )


async def usage_of(store: EventStore, key: Key) -> Usage | None:
    row = await store.pool.fetchrow(
        f"SELECT {_USAGE_COLUMNS} FROM gateway_usage WHERE scope = $1 AND subject = $2", *key
    )
    return None if row is None else _usage(row)


async def reset_usage(store: EventStore, key: Key) -> bool:
    """Start the scope's counting again (a new budget; the database owner's login only)."""
    done = await store.pool.execute(
        "DELETE FROM gateway_usage WHERE scope = $1 AND subject = $2", *key
    )
    return bool(done.endswith(" 1"))


def _usage(row: object) -> Usage:
    return Usage(
        calls=row["calls"],  # type: ignore[index]
        cost_usd=row["cost_usd"],  # type: ignore[index]
        tokens=row["tokens"],  # type: ignore[index]
        refilled_at=row["refilled_at"],  # type: ignore[index]
    )


#: Makes each scope's row on first use and locks it, in one statement (an upsert that
#: changes nothing takes the row's lock and returns it): the session's row before the
#: user's, always, so two calls never wait on each other in a cycle.
_LOCK = f"""
INSERT INTO gateway_usage (scope, subject)
SELECT k.scope, k.subject FROM unnest($1::text[], $2::uuid[]) AS k (scope, subject)
ORDER BY k.scope, k.subject
ON CONFLICT (scope, subject) DO UPDATE SET calls = gateway_usage.calls
RETURNING scope, subject, {_USAGE_COLUMNS},
          extract(epoch FROM clock_timestamp())::float8 AS now
"""
_COUNT = """
UPDATE gateway_usage u SET calls = k.calls, tokens = k.tokens, refilled_at = k.refilled_at
FROM unnest($1::text[], $2::uuid[], $3::bigint[], $4::float8[], $5::float8[])
     AS k (scope, subject, calls, tokens, refilled_at)
WHERE u.scope = k.scope AND u.subject = k.subject
"""
_REFUSED = """
UPDATE gateway_usage SET refused = refused + 1
WHERE (scope, subject) IN (SELECT * FROM unnest($1::text[], $2::uuid[]))
"""


async def reserve(store: EventStore, keys: Sequence[Key], decide: Decision) -> bool:
    """Decide a call over ``keys``' usage rows, locked (see the module's docstring); whether
    it was admitted (its new usage written) or refused (each scope's ``refused`` counted).

    The transaction commits without waiting for its WAL to reach the disk
    (``synchronous_commit = off``): the lock is released, and the count seen by the next
    call, at once all the same, and the admitted call's ``llm.call``, appended with a
    durable commit, makes it durable too. Only a database crash between the two could lose
    a count, of a call whose record it loses as well."""
    scopes = [scope for scope, _ in keys]
    subjects = [subject for _, subject in keys]
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL synchronous_commit = off")
        rows = await connection.fetch(_LOCK, scopes, subjects)
        found = {(row["scope"], row["subject"]): row for row in rows}
        now = float(rows[0]["now"])
        decided = decide([_usage(found[key]) for key in keys], now)
        if decided is None:
            await connection.execute(_REFUSED, scopes, subjects)
            return False
        await connection.execute(
            _COUNT,
            scopes,
            subjects,
            [usage.calls for usage in decided],
            [usage.tokens for usage in decided],
            [usage.refilled_at for usage in decided],
        )
        return True


async def add_cost(store: EventStore, keys: Sequence[Key], cost_usd: float) -> None:
    """Add a finished call's recorded cost to its scopes."""
    if cost_usd <= 0 or not keys:
        return
    await store.pool.execute(
        "UPDATE gateway_usage SET cost_usd = cost_usd + $3 "
        "WHERE (scope, subject) IN (SELECT * FROM unnest($1::text[], $2::uuid[]))",
        [scope for scope, _ in keys],
        [subject for _, subject in keys],
        cost_usd,
    )
