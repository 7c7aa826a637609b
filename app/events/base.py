"""The event envelope shared by every kind.

An event is what a writer hands to the store: its kind, who produced it (``source``), which
earlier event it answers (``cause``), an idempotency key (``event_id``) and the kind's own
fields, which become the stored ``payload``. The store adds ``session_id``, ``seq``,
``created_at`` and ``hash`` when it records it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.events.ids import new_event_id

Source = Literal["user", "agent", "environment", "system"]

#: The services that answer actions: the sandbox's executor and the MCP tool service.
Service = Literal["sandbox", "mcp"]

ENVELOPE_FIELDS: frozenset[str] = frozenset({"kind", "source", "cause", "event_id"})
#: What an event that was not served from a recording leaves out of its payload.
NOT_REPLAYED: frozenset[str] = ENVELOPE_FIELDS | {"replayed_from"}


class Event(BaseModel):
    """Base of every event kind. Subclasses set ``kind`` (a Literal) and a default ``source``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Version of this kind's payload schema; bump it and extend ``upcast`` when fields change.
    schema_version: ClassVar[int] = 1

    #: The service whose action worker answers this kind with one observation (an action the
    #: controller then waits for), or None: nothing runs it. Every set of kinds the services
    #: and the agent use is derived from this in ``registry``.
    handled_by: ClassVar[Service | None] = None

    kind: str
    source: Source
    cause: int | None = Field(default=None, ge=1)
    event_id: UUID = Field(default_factory=new_event_id)
    #: In a replay session only: the seq, in the recorded session, of the event this one was
    #: served from (a model call's response, an observation). Left out of the payload when
    #: None, so every other event's payload is as it always was.
    replayed_from: int | None = Field(default=None, ge=1)

    def payload(self) -> dict[str, Any]:
        """The kind-specific fields, as stored in the ``payload`` column."""
        exclude = ENVELOPE_FIELDS if self.replayed_from is not None else NOT_REPLAYED
        return self.model_dump(mode="json", exclude=exclude)  # type: ignore[arg-type]

    @classmethod
    def upcast(cls, version: int, payload: dict[str, Any]) -> dict[str, Any]:
        """Turn a payload stored under an older ``schema_version`` into the current shape.

        The default knows only the current version; a kind that changes its fields overrides
        this and migrates old payloads step by step.
        """
        if version == cls.schema_version:
            return payload
        raise ValueError(
            f"{cls.__name__} has no upcaster from schema_version {version} to {cls.schema_version}"
        )


class Action(Event):
    """Something the agent asks the environment to do; answered by one observation."""

    source: Source = "agent"
    thought: str = ""
    tool_call_id: str | None = None


class Observation(Event):
    """The environment's answer to an action; ``cause`` is the action's seq."""

    source: Source = "environment"
