"""The discriminated union over ``kind``: turning untrusted dicts and stored rows into events.

Every set of kinds the rest of the code needs (actions, observations, what each service
answers, what the controller waits for) is derived here from the classes themselves, so a
new kind is declared in one place: its class, listed in its module's ``KIND_CLASSES``
(tests/unit/events/test_kinds.py fails on a class of a kind that is not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args

from pydantic import Field, TypeAdapter, ValidationError

from app.errors import ChronicleError
from app.events import (
    actions,
    annotation,
    conversation,
    evaluation,
    imported,
    lifecycle,
    llm,
    observations,
    platform_audit,
    redaction,
    replay,
    traces,
    workspace,
)
from app.events.base import Action, Event, Observation, Service

#: Every kind's class. A kind is registered where it is declared: its class joins its
#: module's ``KIND_CLASSES``; a new module of kinds adds its tuple here.
EVENT_CLASSES: tuple[type[Event], ...] = (
    *conversation.KIND_CLASSES,
    *actions.KIND_CLASSES,
    *observations.KIND_CLASSES,
    *llm.KIND_CLASSES,
    *evaluation.KIND_CLASSES,
    *lifecycle.KIND_CLASSES,
    *replay.KIND_CLASSES,
    *workspace.KIND_CLASSES,
    *imported.KIND_CLASSES,
    *platform_audit.KIND_CLASSES,
    *traces.KIND_CLASSES,
    *annotation.KIND_CLASSES,
    *redaction.KIND_CLASSES,
)


def _kinds_of(cls: type[Event]) -> tuple[str, ...]:
    return get_args(cls.model_fields["kind"].annotation)


#: kind -> class; one class may serve several kinds (``RuntimeStatus``).
EVENT_TYPES: dict[str, type[Event]] = {
    kind: cls for cls in EVENT_CLASSES for kind in _kinds_of(cls)
}

#: Kinds that answer an action; at most one per action (a unique index in the database).
OBSERVATION_KINDS: frozenset[str] = frozenset(
    kind for kind, cls in EVENT_TYPES.items() if issubclass(cls, Observation)
)

#: What the agent asks for (runnable or not: ``think`` and ``finish`` are actions too).
ACTION_KINDS: frozenset[str] = frozenset(
    kind for kind, cls in EVENT_TYPES.items() if issubclass(cls, Action)
)

SERVICES: tuple[Service, ...] = get_args(Service)

#: service -> the action kinds its worker answers (``handled_by``).
HANDLED_KINDS: dict[Service, frozenset[str]] = {
    service: frozenset(kind for kind, cls in EVENT_TYPES.items() if cls.handled_by == service)
    for service in SERVICES
}

#: Actions some service answers: the controller waits for their observation.
AWAITED_KINDS: frozenset[str] = frozenset().union(*HANDLED_KINDS.values())

#: People's remarks on a session (``Event.remark``): the agent's loop takes no notice of them.
REMARK_KINDS: frozenset[str] = frozenset(kind for kind, cls in EVENT_TYPES.items() if cls.remark)

AnyEvent = Annotated[Union[EVENT_CLASSES], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007
_adapter: TypeAdapter[Event] = TypeAdapter(AnyEvent)


class InvalidEventError(ChronicleError, ValueError):
    """An event was refused: unknown kind or a payload that does not match its schema."""

    def __init__(self, message: str, *, kind: str | None = None, field: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.field = field


def _describe(kind: str, exc: ValidationError) -> InvalidEventError:
    """One message naming every bad field (the first one is also kept as ``field``)."""
    problems: list[str] = []
    fields: list[str | None] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"] if part != kind) or None
        fields.append(field)
        problems.append(f"field {field!r} {error['msg']}" if field else error["msg"])
    return InvalidEventError(
        f"invalid {kind!r} event: {'; '.join(problems)}", kind=kind, field=fields[0]
    )


def parse_event(data: Mapping[str, Any] | Event) -> Event:
    """Validate an event given as a model or as a dict with a ``kind`` key."""
    if isinstance(data, Event):
        return data
    kind = data.get("kind") if isinstance(data, Mapping) else None
    if not isinstance(kind, str):
        raise InvalidEventError("an event needs a 'kind' string", field="kind")
    if kind not in EVENT_TYPES:
        raise InvalidEventError(
            f"unknown event kind {kind!r}; known kinds: {', '.join(sorted(EVENT_TYPES))}",
            kind=kind,
            field="kind",
        )
    try:
        return _adapter.validate_python(dict(data))
    except ValidationError as exc:
        raise _describe(kind, exc) from None


def event_from_stored(
    *,
    kind: str,
    source: str,
    cause: int | None,
    event_id: Any,
    payload: dict[str, Any],
    schema_version: int,
) -> Event:
    """Rebuild the typed event from a stored row, upcasting old payload versions."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise InvalidEventError(f"unknown event kind {kind!r} in the log", kind=kind)
    current = cls.upcast(schema_version, payload)
    try:
        return cls.model_validate(
            {**current, "kind": kind, "source": source, "cause": cause, "event_id": event_id}
        )
    except ValidationError as exc:
        raise _describe(kind, exc) from None
