"""The ``llm.call`` appends of a replay session's served calls, written behind the answers.

A served call's answer is not new information: it comes from the recording, which is
durable already, and the replay's own log is made again by running the replay again. So the
gateway answers a served call first and appends its ``llm.call`` in the background
(``ReplayAppends``): in the order the calls were served, the calls of the last ``LINGER``
seconds (and those that came in while an append was in flight) joined into one append (one
transaction, one round trip, one NOTIFY for them all, so one read by each follower of the
session, such as ``chronicle record --replay``'s watch). A commit per call before its answer
held a replay to the commit rate. What the log promises holds all the same:

- order and completeness: one writer per replay session and a queue; each append is one
  transaction, written whole or not at all;
- the end: ``settled()`` returns once every call served so far is durable;
  ``chronicle record --replay`` waits for it (the gateway's ``replay/settled`` route) before
  it records the command's end and the replay's result;
- a failure is loud: once an append failed, nothing more is written (no gap, no call out of
  order) and every later request of the replay, and ``settled()``, fail with it;
- what is new information, or stops the replay (a call gone live on a divergence, a
  refusal), is appended only after ``settled()``, and committed before it is answered.
"""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

from app.events import LlmCall
from app.external.errors import GatewayError
from app.store import EventStore

log = logging.getLogger(__name__)

#: The gateway's route that answers once a replay session's served calls are all written
#: (``chronicle record --replay`` asks it when the command has ended).
SETTLED_PATH = "/v1/chronicle/replay/settled"
#: Calls written in one append at most.
BATCH = 500
#: Seconds the writer waits for more calls before an append of fewer than ``BATCH``.
LINGER = 0.02
#: Calls waiting unwritten at most: past it, the next served call waits for the writer.
MOST_WAITING = 2 * BATCH


def unrecorded(count: int) -> str:
    """``1 call`` / ``2 calls``."""
    return f"{count} call" if count == 1 else f"{count} calls"


class ReplayAppends:
    """The served calls of one replay session not written yet, and their one writer."""

    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        *,
        batch: int = BATCH,
        most_waiting: int = MOST_WAITING,
        linger: float = LINGER,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.batch = batch
        self.most_waiting = most_waiting
        self.linger = linger
        #: served calls and the prompt messages to store with them, in the order served
        self._waiting: list[tuple[LlmCall, dict[str, str]]] = []
        self._writer: asyncio.Task[None] | None = None
        #: why the replay's log could not be written (then nothing more is)
        self.failure: GatewayError | None = None

    @property
    def idle(self) -> bool:
        """Nothing waits to be written and nothing failed: this state may be dropped."""
        return self._writer is None and not self._waiting and self.failure is None

    def check(self) -> None:
        """``GatewayError`` when an earlier append failed: the replay cannot go on."""
        if self.failure is not None:
            raise self.failure

    async def add(self, call: LlmCall, messages: dict[str, str]) -> None:
        """Write ``call`` (with ``messages``) after the calls added before it; returns at
        once unless ``most_waiting`` calls wait already."""
        self.check()
        if len(self._waiting) >= self.most_waiting:
            await self.settled()
        self._waiting.append((call, messages))
        if self._writer is None:
            self._writer = asyncio.create_task(self._write())

    async def settled(self) -> None:
        """Once every call added so far is durable; ``GatewayError`` if one could not be."""
        while self._writer is not None:
            await asyncio.shield(self._writer)
        self.check()

    async def _write(self) -> None:
        try:
            while self._waiting and self.failure is None:
                if len(self._waiting) < self.batch:
                    await asyncio.sleep(self.linger)
                taken = self._waiting[: self.batch]
                messages: dict[str, str] = {}
                for _, stored in taken:
                    messages.update(stored)
                try:
                    await self.store.append(
                        self.session_id, [call for call, _ in taken], messages=messages
                    )
                except Exception as exc:
                    self._failed(exc)
                    return
                del self._waiting[: len(taken)]
        except asyncio.CancelledError:
            self._failed(RuntimeError("the gateway stopped before it could write them"))
            raise
        finally:
            self._writer = None

    def _failed(self, exc: BaseException) -> None:
        log.error(
            "the llm.call of %d served calls of replay %s could not be appended; the replay stops",
            len(self._waiting),
            self.session_id,
            exc_info=exc,
        )
        self.failure = GatewayError(
            500,
            "server",
            f"chronicle record --replay: the replay's log could not be written ({exc}); "
            f"{unrecorded(len(self._waiting))} the gateway answered not recorded, so the "
            "replay stopped: run it again",
            code="replay_log_failed",
        )
