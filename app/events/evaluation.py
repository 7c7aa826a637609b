"""The result of scoring a recorded session (see app/evaluation/).

Its fields are those of the OpenTelemetry ``gen_ai.evaluation.result`` event, so an exporter
maps them one to one (``OTEL_ATTRIBUTES``): ``name`` is ``gen_ai.evaluation.name``,
``score_value`` is ``gen_ai.evaluation.score.value``, ``score_label`` is
``gen_ai.evaluation.score.label``, ``explanation`` is ``gen_ai.evaluation.explanation``.
A session may be scored many times: every score stays in the log, and the newest one per
scorer and version counts.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from app.events.base import Event, Source

#: payload field -> the OpenTelemetry attribute it carries.
OTEL_ATTRIBUTES: dict[str, str] = {
    "name": "gen_ai.evaluation.name",
    "score_value": "gen_ai.evaluation.score.value",
    "score_label": "gen_ai.evaluation.score.label",
    "explanation": "gen_ai.evaluation.explanation",
}


class EvalScore(Event):
    """One scorer's verdict on the session, as of ``scored_seq`` (the last event it read)."""

    kind: Literal["eval.score"] = "eval.score"
    source: Source = "system"
    #: the scorer (``gen_ai.evaluation.name``)
    name: str = Field(min_length=1)
    #: the scorer's version: a changed scorer gets a new one, so old scores stay comparable
    scorer_version: int = Field(ge=1)
    #: ``gen_ai.evaluation.score.value``: 1.0 / 0.0 for pass / fail, or a number (cost, steps)
    score_value: float | None = None
    #: ``gen_ai.evaluation.score.label``: low cardinality, ``pass`` / ``fail`` for verdicts
    score_label: str | None = None
    #: ``gen_ai.evaluation.explanation``: why, in words
    explanation: str = ""
    scored_seq: int = Field(ge=1)
    #: the evaluation run the session belongs to, when it was run as one
    evaluation_run: str | None = None

    @field_validator("score_value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("a score must be a finite number")
        return value

    def otel_attributes(self) -> dict[str, Any]:
        """The ``gen_ai.evaluation.result`` attributes this score carries (None left out)."""
        fields = self.model_dump(include=set(OTEL_ATTRIBUTES))
        return {OTEL_ATTRIBUTES[k]: v for k, v in fields.items() if v is not None and v != ""}


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (EvalScore,)
