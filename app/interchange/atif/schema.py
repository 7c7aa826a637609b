"""The Agent Trajectory Interchange Format (ATIF) as pydantic models, and its rules.

ATIF is defined by Harbor (harbor-framework/harbor: ``rfcs/0001-trajectory-format.md`` and
its models, ``harbor.models.trajectories``); these models follow harbor 0.26.0, which reads
``ATIF-v1.0`` to ``ATIF-v1.8``. Every object refuses keys it does not define, as Harbor's do:
what a producer wants to add goes in an ``extra`` object. Reading is lenient on the version
(any ``ATIF-v1.N``, or none) and strict on the structure: the types below, and the rules
Harbor's validators add and a JSON Schema cannot say (``rule_problems``).

Chronicle writes ``ATIF-v1.7`` (``WRITTEN_VERSION``): v1.8 only adds audio content, which
Chronicle never holds, and some readers (``nvidia-nat-atif``) stop at v1.7.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The version Chronicle writes (see the module).
WRITTEN_VERSION = "ATIF-v1.7"
#: The versions Harbor 0.26.0 defines; a later ``ATIF-v1.N`` is read too (an addition).
KNOWN_VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(9))
_VERSION = re.compile(r"ATIF-v1\.\d{1,3}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MediaSource(_Strict):
    media_type: str
    path: str
    duration_sec: float | None = Field(default=None, ge=0)


class ContentPart(_Strict):
    """A part of a multimodal message (v1.6): text, or an image or audio file by path."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: MediaSource | None = None


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Strict):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart]
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Trajectory(_Strict):
    schema_version: str | None = None
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @field_validator("schema_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not _VERSION.fullmatch(value):
            raise ValueError(
                f"{value!r} is no ATIF version this reader takes (ATIF-v1.0 to ATIF-v1.8)"
            )
        return value


#: Fields only an agent's step may have (Harbor's Step validator).
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def rule_problems(trajectory: Trajectory, where: str = "") -> Iterator[tuple[str, str]]:
    """(where, what) for each of Harbor's rules beyond the types that ``trajectory`` breaks."""
    for index, step in enumerate(trajectory.steps):
        at = f"{where}steps[{index}]"
        if step.step_id != index + 1:
            yield (
                f"{at}.step_id",
                f"is {step.step_id}, expected {index + 1} (step ids run 1, 2, 3, ... in order)",
            )
        if step.source != "agent":
            for name in AGENT_ONLY:
                if getattr(step, name) is not None:
                    yield f"{at}.{name}", f"only an agent's step may have it (source {step.source})"
        if step.llm_call_count == 0 and (step.metrics or step.reasoning_content is not None):
            yield (
                f"{at}.llm_call_count",
                "is 0 (no model call), yet the step has metrics or reasoning",
            )
        yield from _part_problems(step.message, f"{at}.message")
        calls = [call.tool_call_id for call in step.tool_calls or []]
        if len(set(calls)) != len(calls):
            yield f"{at}.tool_calls", "two tool calls have the same tool_call_id"
        for number, result in enumerate(step.observation.results if step.observation else []):
            place = f"{at}.observation.results[{number}]"
            if result.source_call_id is not None and result.source_call_id not in calls:
                yield (
                    f"{place}.source_call_id",
                    f"{result.source_call_id!r} is no tool_call_id of this step",
                )
            yield from _part_problems(result.content, f"{place}.content")
            for ref in result.subagent_trajectory_ref or []:
                if ref.trajectory_id is None and ref.trajectory_path is None:
                    yield f"{place}.subagent_trajectory_ref", "names no trajectory_id or path"
    seen: set[str] = set()
    for index, sub in enumerate(trajectory.subagent_trajectories or []):
        at = f"{where}subagent_trajectories[{index}]"
        if sub.trajectory_id is None:
            yield f"{at}.trajectory_id", "an embedded trajectory must have one"
        elif sub.trajectory_id in seen:
            yield f"{at}.trajectory_id", f"{sub.trajectory_id!r} is there twice"
        else:
            seen.add(sub.trajectory_id)
        yield from rule_problems(sub, f"{at}.")


def _part_problems(value: Any, at: str) -> Iterator[tuple[str, str]]:
    for number, part in enumerate(value if isinstance(value, list) else []):
        if (part.type == "text") != (part.text is not None):
            yield f"{at}[{number}].text", "a text part has text, and only a text part has it"
        if (part.type != "text") != (part.source is not None):
            yield f"{at}[{number}].source", "an image or audio part has a source, text has none"
