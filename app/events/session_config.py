"""The configuration a session was created with: ``session.created``'s ``config``, typed.

Every way a session starts records one: ``chronicle run`` and ``POST /api/sessions``
(``app.sessions.run_config``), an evaluation trial (its ``evaluation_*`` keys), a replay and a
fork (the recording's configuration with the replay's own keys), an external agent's session
(``app.external``), an imported recording (``app.interchange.importers``), a playground run of
one model call (``from_call``) and the platform's audit log. Recorded events are hash-chained,
so a configuration must dump to exactly the keys it was given, no more (a default is never
added), no fewer (a key this model does not know is kept as it was), each value as it was
(``strict``: nothing is coerced). The evaluation trial and the replay origin are nested here
but stored flat, as they always were, under the key each field's alias names
(``evaluation.run`` is ``evaluation_run``); ``json_path`` renders the SQL that reads a stored
key from the fields, so a query and the model cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

Number = int | float


class RecordedKeys(BaseModel):
    """A part of a recorded configuration: frozen, values as given, unknown keys kept, and
    dumped with exactly the keys it was given (a field left out stays out)."""

    model_config = ConfigDict(
        frozen=True,
        strict=True,
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    #: Parts stored flat (their keys beside this model's own), by the field holding them.
    NESTED: ClassVar[Mapping[str, type[RecordedKeys]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _gather_nested(cls, data: Any) -> Any:
        """Stored flat, read nested: a stored key of a nested part moves into it."""
        if not cls.NESTED or not isinstance(data, Mapping):
            return data
        gathered = dict(data)
        for name, part in cls.NESTED.items():
            keys = {key: gathered.pop(key) for key in part.stored_keys() if key in gathered}
            if keys and name in gathered:  # both ways at once: nothing says which wins
                raise ValueError(f"{name} given both nested and as {', '.join(keys)}")
            if keys:
                gathered[name] = keys
        return gathered

    @model_serializer(mode="wrap")
    def _given_keys_only(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, field in type(self).model_fields.items():
            if name not in self.model_fields_set:
                data.pop(field.alias or name, None)
        for name in self.NESTED:
            part = data.pop(name, None)
            if part is not None:
                data.update(part)
        return data

    def given(self, field: str, default: Any) -> Any:
        """The field's value if it was recorded (None included), else ``default``: what
        ``config.get(key, default)`` read of the stored dict."""
        return getattr(self, field) if field in self.model_fields_set else default

    def stored(self) -> dict[str, Any]:
        """The keys and values as ``session.created``'s config holds them."""
        return self.model_dump(mode="json")

    @classmethod
    def stored_key(cls, field: str) -> str:
        """The key ``field`` is stored under; a field this model does not have is refused."""
        info = cls.model_fields.get(field)
        if info is None:
            raise KeyError(f"{cls.__name__} has no field {field!r}")
        return info.alias or field

    @classmethod
    def stored_keys(cls) -> tuple[str, ...]:
        return tuple(cls.stored_key(name) for name in cls.model_fields)


class ModelSettings(RecordedKeys):
    """The model's settings as ``LlmConfig.public()`` records them: never the key."""

    model: str | None = None
    base_url: str | None = None
    api_version: str | None = None
    temperature: Number | None = None
    max_output_tokens: int | None = None
    timeout: Number | None = None
    retries: int | None = None


class EvaluationTrial(RecordedKeys):
    """What an evaluation run records about one of its trials (``chronicle eval run``, the
    API's runs, an evaluated external agent): the run, the task (``app.evaluation.suite.Task``
    as JSON), the epoch, which attempt and resume of the trial, the run's plan and request."""

    run: str | None = Field(default=None, alias="evaluation_run")
    task: dict[str, Any] | None = Field(default=None, alias="evaluation_task")
    epoch: int | None = Field(default=None, alias="evaluation_epoch")
    attempt: int | None = Field(default=None, alias="evaluation_attempt")
    resume: int | None = Field(default=None, alias="evaluation_resume")
    plan: dict[str, Any] | None = Field(default=None, alias="evaluation_plan")
    request: dict[str, Any] | None = Field(default=None, alias="evaluation_request")


class ReplayOrigin(RecordedKeys):
    """What a replay session records of how it replays: the mode (``strict``,
    ``positional``), what to do on a divergence (``fork``; ``live`` for an external agent's)
    and, for an external agent's replay, the recording it replays (a native replay names it in
    ``session.created``'s own ``replay_of``)."""

    of: str | None = Field(default=None, alias="replay_of")
    mode: str | None = Field(default=None, alias="replay_mode")
    on_divergence: str | None = None


class CallLink(RecordedKeys):
    """A playground session's origin (``app.external.playground``): the model call it sent
    again, named by its session and seq, and what the user changed before sending it."""

    session: str | None = None
    seq: int | None = None
    #: the user's edit, one line per change ("message 0 (system) edited", "temperature: 0 →
    #: 0.7"); empty when the call was sent again as recorded
    changes: list[str] | None = None


class SessionConfig(RecordedKeys):
    """``session.created``'s ``config``. Every field is optional: which are present says
    who made the session (see the module's docstring)."""

    # what runs it
    agent: str | None = None
    workspace: str | None = None
    runtime: str | None = None
    image: str | None = None
    # the model
    model: str | None = None
    base_url: str | None = None
    llm: ModelSettings | None = None
    # the tools it offers
    tools: list[str] | None = None
    mcp_servers: list[dict[str, Any]] | None = None
    # its limits
    max_iterations: int | None = None
    max_cost_usd: Number | None = None
    stuck_detection: bool | None = None
    #: a replay's or a fork's agent overrides (``app.agent.AgentConfig`` as JSON)
    agent_config: dict[str, Any] | None = None
    evaluation: EvaluationTrial | None = None
    replay: ReplayOrigin | None = None
    # an external agent's session (app/external)
    client: str | None = None
    user_agent: str | None = None
    command: list[str] | None = None
    #: its own gateway limits (``app.config.GatewayLimits`` as JSON)
    limits: dict[str, Any] | None = None
    #: an imported recording's origin: its format, file, sha256 and what the file said
    imported: dict[str, Any] | None = None
    #: marks the platform's audit log (``app.events.platform_audit``)
    platform_log: bool | None = None
    #: a playground session's origin: the model call it sent again, with the user's edit
    from_call: CallLink | None = None

    def with_keys(self, **changes: Any) -> SessionConfig:
        """This configuration with stored keys added or replaced (a replay's, a fork's)."""
        return type(self).model_validate({**self.stored(), **changes})

    @classmethod
    def of_payload(cls, payload: Mapping[str, Any]) -> SessionConfig:
        """The configuration in a stored ``session.created`` payload."""
        return cls.model_validate(payload.get("config") or {})

    @classmethod
    def read(cls, events: Sequence[Any]) -> SessionConfig | None:
        """The config of ``events``' first if it is a ``session.created`` whose config
        parses; None otherwise (for readers that go on either way: the gateway's checks)."""
        if not events or events[0].kind != "session.created":
            return None
        try:
            return cls.of_payload(events[0].payload)
        except ValidationError:
            return None

    @classmethod
    def stored_path(cls, *fields: str) -> tuple[str, ...]:
        """The stored keys of a field (``"model"``), of a nested part's field (``"evaluation",
        "task"``), then of keys inside that field's JSON value, taken as given (``"id"``); a
        field the model does not have is refused."""
        if not fields:
            raise KeyError("no field given")
        head, *rest = fields
        part = cls.NESTED.get(head)
        if part is None:
            return (cls.stored_key(head), *rest)
        if not rest:
            raise KeyError(f"{head!r} is stored flat: name one of its fields")
        return (part.stored_key(rest[0]), *rest[1:])


SessionConfig.NESTED = {"evaluation": EvaluationTrial, "replay": ReplayOrigin}


def json_path(*fields: str, alias: str = "c", text: bool = True) -> str:
    """The SQL that reads a configuration field from ``alias``'s ``session.created``
    payload: ``json_path("evaluation", "task", "id")`` is
    ``c.payload->'config'->'evaluation_task'->>'id'``; ``text=False`` keeps the last step
    JSON (``->``). Keys past a nested part's field (``id`` above) are inside a JSON value
    the model leaves untyped, and are taken as given."""
    keys = SessionConfig.stored_path(*fields)
    for key in keys:
        if "'" in key:
            raise ValueError(f"a key with a quote: {key!r}")
    steps = ["config", *keys]
    last = "->>" if text else "->"
    inner = "".join(f"->'{key}'" for key in steps[:-1])
    return f"{alias}.payload{inner}{last}'{steps[-1]}'"


def json_has(*fields: str, alias: str = "c") -> str:
    """The SQL that tests whether ``alias``'s ``session.created`` config holds a field's key:
    ``json_has("evaluation", "request")`` is ``c.payload->'config' ? 'evaluation_request'``."""
    keys = SessionConfig.stored_path(*fields)
    if len(keys) != 1:
        raise KeyError(f"{'.'.join(fields)!r} is not a key of the config itself")
    return f"{alias}.payload->'config' ? '{keys[0]}'"
