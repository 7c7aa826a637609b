"""How the event store contract (tests/contract/store/) opens stores of one implementation."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from app.store import EventStore, SessionLog


class StoreOpener(Protocol):
    """Opens a store on the test's one log. Each call gives another client of the same data,
    as another process would have (its own connections); ``config`` overrides fields of the
    store's ``StoreConfig`` (``max_event_bytes=10_000``)."""

    def __call__(self, **config: Any) -> AbstractAsyncContextManager[EventStore]: ...


class LogOpener(Protocol):
    """Opens a ``SessionLog`` on the test's one log (as ``StoreOpener``, for implementations
    of the session's part of the contract only, such as ``MemoryLog``)."""

    def __call__(self, **config: Any) -> AbstractAsyncContextManager[SessionLog]: ...
