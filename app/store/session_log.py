"""``SessionLog``: what the loop of one session needs of the log, and nothing more.

The controller (app/agent/controller.py), the action workers (app/store/action_worker.py)
and replay (app/replay/) append to one session, read it by seq, follow it live and keep a
checkpoint; they never ask for SQL, other sessions' order, blobs or verification. Typed
against this protocol they run on any implementation: ``EventStore`` (PostgreSQL),
``MemoryLog`` (pure Python, for tests and for trying the loop without a database), and the
wrappers that keep a session in memory (``BufferedSession``, a replay's ``AnsweringLog``).
The store contract (tests/contract/store/) holds every implementation to the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, Self
from uuid import UUID

from app.store.append import EventLike
from app.store.records import Position, RecordedEvent


class SessionStream(Protocol):
    """A live tail of one session: every event after a seq, once and in order, forever.
    Cancelling a pending ``__anext__`` loses nothing; ``aclose`` (or leaving ``async with``)
    ends it."""

    def __aiter__(self) -> Self: ...

    async def __anext__(self) -> RecordedEvent: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def aclose(self) -> None: ...


class SessionLog(Protocol):
    """Append to, read, follow and checkpoint one session's log (see the module)."""

    async def append(
        self,
        session_id: UUID,
        events: Iterable[EventLike],
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        """Record ``events`` atomically at the end of the session (``EventStore.append``):
        gapless seqs, ``ConcurrencyError`` when ``expected_seq`` is not the last seq, a
        re-sent batch returns what was recorded, invalid events refuse the whole batch.
        ``messages`` are the prompt messages the events name, recorded with them."""
        ...

    async def read(
        self, session_id: UUID, after_seq: int = 0, limit: int | None = None
    ) -> list[RecordedEvent]:
        """The session's events with ``seq > after_seq`` (at most ``limit``), in order."""
        ...

    def subscribe(self, session_id: UUID, after_seq: int = 0) -> SessionStream:
        """Follow the session from ``after_seq`` on."""
        ...

    async def load_checkpoint(self, name: str) -> Position | None:
        """A consumer's saved position (None if it never saved one)."""
        ...

    async def save_checkpoint(self, name: str, position: Position) -> None:
        """Save a consumer's position (an action worker's "started up to here")."""
        ...
