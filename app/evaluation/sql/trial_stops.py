"""The configuration error an evaluation trial ended on, read from its log in SQL.

A trial ended on one when its agent last said ``error`` and its last model call failed with
a configuration kind (a key refused, a model or provider unknown, an address where nothing
listens: ``app.llm.errors.CONFIGURATION_KINDS``, which the caller passes, as a ``text[]``
parameter, since the store does not know the model gateway). Its run stops there instead
of running every trial into the same error; the trial is not scored, and a resumed run
runs it again.
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from app.store import EventStore


def configuration_stop_sql(session: str, kinds: str) -> str:
    """An SQL expression: the error text of the configuration failure the session
    ``session`` (an SQL expression of its id) ended on, or NULL; ``kinds`` is the ``text[]``
    parameter holding the configuration kinds (e.g. ``$2``)."""
    return f"""(
    SELECT call.payload->>'error'
    FROM (SELECT e.payload FROM events e
          WHERE e.session_id = {session} AND e.kind = 'llm.call'
          ORDER BY e.seq DESC LIMIT 1) call
    WHERE call.payload->>'error_kind' = ANY({kinds}::text[])
      AND (SELECT e.payload->>'state' FROM events e
           WHERE e.session_id = {session} AND e.kind = 'agent.state'
           ORDER BY e.seq DESC LIMIT 1) = 'error'
      AND NOT EXISTS (SELECT 1 FROM events e
                      WHERE e.session_id = {session} AND e.kind = 'eval.score')
)"""


async def trial_stop(store: EventStore, session: UUID, kinds: Collection[str]) -> str | None:
    """The configuration error the session ended on (see the module), or None."""
    sql = f"SELECT {configuration_stop_sql('$1::uuid', '$2')}"
    stop: str | None = await store.pool.fetchval(sql, session, list(kinds))
    return stop
