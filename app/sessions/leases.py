"""Asking for a session to run: what the API calls after it records what the agent must see.

The API never runs an agent. It appends the user's event (a message, a resume) and then asks
for a run; a worker (``app.sessions.worker``) claims the session's lease and runs it from the
log. Asking twice is harmless: a session that waits for a worker is not queued again, and one
that runs is run once more only if its current run ends before it got to the new event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

from app.sessions.sql import session_leases
from app.sessions.sql.capped_runs import request_run_within_cap
from app.store import EventStore

T = TypeVar("T")

log = logging.getLogger(__name__)


async def request_run(store: EventStore, session_id: UUID, *, reason: str) -> None:
    """Have a worker run the session (``reason``: why, e.g. "message", kept on the lease row).
    Raises ``session_leases.UnknownSessionError`` for a session with no events."""
    outcome = await session_leases.request_run(store, session_id, reason)
    log.info("run of session %s requested (%s): %s", session_id, reason, outcome)


async def record_and_request_run(
    store: EventStore,
    session_id: UUID,
    *,
    reason: str,
    cap: int,
    record: Callable[[], Awaitable[T]],
) -> T:
    """``record()`` the user's event and have a worker run the session, within the cap of
    working sessions of the session's owner (``app.sessions.sql.capped_runs``); raises
    ``capped_runs.RunCapReached``, with nothing recorded, when the owner has no place left."""
    recorded = await request_run_within_cap(
        store, session_id, cap=cap, reason=reason, record=record
    )
    log.info("run of session %s requested (%s)", session_id, reason)
    return recorded
