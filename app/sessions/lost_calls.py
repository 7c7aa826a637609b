"""Recording, at a takeover, the model call a dead worker had in flight.

A worker that takes a session over from one whose lease expired reads the log as that worker
left it (``app.agent.in_flight``) and, when its next step was a model call that no
``llm.call`` followed, appends one with ``error_kind`` ``lost``: an auditor and the analytics
views see a call that may have been paid, its answer, usage and cost unknown. It costs a read
of the log per takeover and nothing per step.

It is written under the session's claim, so the old holder is known to be gone: a worker
that only stalled past its lease still holds the claim, and records its call itself (or, when
it finds its lease lost and stops, the call as ``interrupted``).
"""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

from app.agent.in_flight import lost_call
from app.store import ConcurrencyError, EventStore, RecordedEvent, SessionBusyError, claim_session

log = logging.getLogger(__name__)

#: Seconds the whole recording may take: a takeover is not held up for longer.
TIMEOUT = 10.0


async def record_lost_call(
    store: EventStore, session_id: UUID, holder: str
) -> RecordedEvent | None:
    """Append the ``lost`` call of ``holder``'s run of the session, if it had one in flight
    (see the module); None when it had none or the log cannot say so now. Never raises: the
    takeover goes on either way."""
    try:
        async with asyncio.timeout(TIMEOUT):
            async with claim_session(store, session_id, on_lost=lambda: None):
                return await _record(store, session_id, holder)
    except SessionBusyError:
        log.info("session %s is still claimed; %s records its own model call", session_id, holder)
    except Exception as exc:
        log.warning("cannot tell whether %s left a model call in flight: %s", holder, exc)
    return None


async def _record(store: EventStore, session_id: UUID, holder: str) -> RecordedEvent | None:
    while True:
        events = await store.read(session_id)
        call = lost_call(events, holder)
        if call is None:
            return None
        try:
            [recorded] = await store.append(session_id, [call], expected_seq=events[-1].seq)
        except ConcurrencyError:
            continue  # the user wrote meanwhile: read again
        log.warning(
            "session %s: %s left a model call in flight; recorded as lost at seq %d",
            session_id, holder, recorded.seq,
        )  # fmt: skip
        return recorded
