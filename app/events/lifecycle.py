"""Session and sandbox lifecycle events."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from app.events.base import Event, Source
from app.events.session_config import SessionConfig


class SessionCreated(Event):
    """First event of a session: its configuration, without secrets."""

    kind: Literal["session.created"] = "session.created"
    source: Source = "system"
    title: str = ""
    config: SessionConfig = Field(default_factory=SessionConfig)
    replay_of: UUID | None = None
    #: A fork's source session and the seq its copy ends at (left out of other payloads).
    forked_from: UUID | None = None
    forked_at: int | None = Field(default=None, ge=1)

    def payload(self) -> dict[str, Any]:
        payload = super().payload()
        if self.forked_from is None:
            payload.pop("forked_from", None)
            payload.pop("forked_at", None)
        return payload


class SessionClosed(Event):
    kind: Literal["session.closed"] = "session.closed"
    source: Source = "system"
    reason: str = ""


class RuntimeStatus(Event):
    """The sandbox is starting, ready (with its image digest) or failed."""

    kind: Literal["runtime.starting", "runtime.ready", "runtime.failed"]
    source: Source = "environment"
    runtime: str = ""
    sandbox_id: str = ""
    image_digest: str | None = None
    message: str = ""


class RuntimeRestarted(Event):
    """The session's sandbox died (a failed liveness check) and a fresh one took its place.

    Every process that ran in it is gone; ``message`` tells the agent so (the model reads it
    at this point of the conversation). ``restart`` counts the restarts of this run, up to
    ``max_restarts``; past that the run ends in ``error`` instead.
    """

    kind: Literal["runtime.restarted"] = "runtime.restarted"
    source: Source = "environment"
    runtime: str = ""
    sandbox_id: str = ""
    image_digest: str | None = None
    reason: str = ""
    restart: int = Field(default=1, ge=1)
    max_restarts: int = Field(default=1, ge=0)
    message: str = ""


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    SessionCreated,
    SessionClosed,
    RuntimeStatus,
    RuntimeRestarted,
)
