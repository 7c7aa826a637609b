"""The event envelope shared by every kind.

An event is what a writer hands to the store: its kind, who produced it (``source``), which
earlier event it answers (``cause``), an idempotency key (``event_id``) and the kind's own
fields, which become the stored ``payload``. The store adds ``session_id``, ``seq``,
``created_at`` and ``hash`` when it records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.events.free_keys import free_fields, holds_surrogate_key, jsonable_keeping_keys
from app.events.ids import new_event_id
from app.events.origin import ImportOrigin

Source = Literal["user", "agent", "environment", "system"]

#: The services that answer actions: the sandbox's executor and the MCP tool service.
Service = Literal["sandbox", "mcp"]

ENVELOPE_FIELDS: frozenset[str] = frozenset({"kind", "source", "cause", "event_id"})
#: Fields an event leaves out of its payload when they are None, so that every payload
#: without them is as it always was (and hashes as it always did).
OMITTED_WHEN_NONE: tuple[str, ...] = ("replayed_from", "user")

#: The fields ``payload`` leaves out, by which of ``OMITTED_WHEN_NONE`` are None: built once,
#: not per event (a batch's payloads are dumped tens of thousands at a time).
_EXCLUDED: Mapping[tuple[bool, ...], frozenset[str]] = {
    nones: ENVELOPE_FIELDS
    | {name for name, none in zip(OMITTED_WHEN_NONE, nones, strict=True) if none}
    for nones in product((False, True), repeat=len(OMITTED_WHEN_NONE))
}


#: The largest seq (and so cause): the events table's ``seq`` is a PostgreSQL ``integer``.
MAX_SEQ = 2**31 - 1


class Event(BaseModel):
    """Base of every event kind. Subclasses set ``kind`` (a Literal) and a default ``source``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Version of this kind's payload schema; bump it and extend ``upcast`` when fields change.
    schema_version: ClassVar[int] = 1

    #: The service whose action worker answers this kind with one observation (an action the
    #: controller then waits for), or None: nothing runs it. Every set of kinds the services
    #: and the agent use is derived from this in ``registry``.
    handled_by: ClassVar[Service | None] = None
    #: A remark people write about the session (an annotation): recorded in its log, read by
    #: people and SQL, never by its agent. The controller neither wakes for one nor counts it
    #: among the events it decides on (``registry.REMARK_KINDS``).
    remark: ClassVar[bool] = False

    kind: str
    source: Source
    cause: int | None = Field(default=None, ge=1, le=MAX_SEQ)
    event_id: UUID = Field(default_factory=new_event_id)
    #: In a replay session only: the seq, in the recorded session, of the event this one was
    #: served from (a model call's response, an observation). Left out of the payload when
    #: None, so every other event's payload is as it always was.
    replayed_from: int | None = Field(default=None, ge=1)
    #: The signed-in user who sent it through the access service (app/server): a message,
    #: a pause, resume or stop, a session's creation. Left out of the payload when None.
    user: str | None = Field(default=None, min_length=1, max_length=64)
    #: Only on events imported from another agent's recording (app/interchange/importers):
    #: where in it the event came from. Not one of the kind's fields (a replay compares
    #: actions without it), so ``payload`` alone writes it, and leaves it out of a replayed
    #: copy's payload (whose ``replayed_from`` points at the imported event).
    imported: ImportOrigin | None = Field(default=None, exclude=True)

    #: This kind's fields whose values may hold object keys of any text (``free_fields``).
    _free_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # (``imported`` is no payload field: ``payload`` writes it apart, keys and all)
        cls._free_fields = free_fields(cls) - {"imported"}

    def payload(self) -> dict[str, Any]:
        """The kind-specific fields, as stored in the ``payload`` column."""
        # pydantic's serializer called directly: what ``model_dump(mode="json", exclude=...)``
        # calls with the same arguments, without its per-call Python wrapper (1 µs of 2).
        exclude = _EXCLUDED[self.replayed_from is None, self.user is None]  # OMITTED_WHEN_NONE
        exact = [name for name in self._free_fields if holds_surrogate_key(self.__dict__[name])]
        if exact:  # JSON mode would lose these fields' surrogate keys (app.events.free_keys)
            exclude = exclude | set(exact)
        # (pydantic-core takes any set for ``exclude``; its stub names only ``set``.)
        payload: dict[str, Any] = self.__pydantic_serializer__.to_python(
            self,
            mode="json",
            exclude=exclude,  # type: ignore[arg-type]
        )
        if exact:
            as_is = self.__pydantic_serializer__.to_python(self, include=set(exact))
            payload.update(jsonable_keeping_keys(as_is))
        if self.imported is not None and self.replayed_from is None:
            # (its ``kept`` holds the recording's own JSON, whose keys may be any text)
            origin = self.imported.model_dump(exclude_defaults=True)
            payload["imported"] = jsonable_keeping_keys(origin)
        return payload

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
