"""The end of a replay session: how a recorded session's replay went (see app/replay/)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from app.events.base import Event, Source


class ReplayResultEvent(Event):
    """Last event of a replay session: steps matched, the divergence that stopped it (its
    typed form from ``app.replay.divergence``, as JSON), the request differences a positional
    replay reported, the model calls made (0) and the time taken."""

    kind: Literal["replay.result"] = "replay.result"
    source: Source = "system"
    replay_of: UUID
    mode: Literal["strict", "positional"]
    matched: bool
    outcome: str | None = None
    recorded_outcome: str | None = None
    steps_recorded: int = Field(ge=0)
    steps_served: int = Field(ge=0)
    steps_matched: int = Field(ge=0)
    divergence: dict[str, Any] | None = None
    differences: list[dict[str, Any]] = Field(default_factory=list)
    model_calls: int = Field(ge=0)
    seconds: float = Field(ge=0)


class EnvironmentDivergenceEvent(Event):
    """In a fork: a copied sandbox action that, run again over the restored workspace,
    observed something else than the recording (``field``: kind, exit_code, error_type)."""

    kind: Literal["environment.divergence"] = "environment.divergence"
    source: Source = "environment"
    action_seq: int = Field(ge=1)
    field: str
    recorded: Any = None
    observed: Any = None


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    ReplayResultEvent,
    EnvironmentDivergenceEvent,
)
