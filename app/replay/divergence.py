"""The ways a replay can differ from its recording, as frozen models (JSON in ``replay.result``).

``step`` is the 1-based number of the model call in the recording the difference belongs to
(for an outcome: the number of calls served when it was found). ``recorded_seq`` points into
the recorded session. ``summary`` says it in one sentence for people.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MessageChange(Frozen):
    """The first prompt message that differs: its index in the prompt, its role on each side
    (None where that side has no message at that index) and a unified diff of the texts."""

    index: int
    recorded_role: str | None
    new_role: str | None
    diff: str


class ToolsChange(Frozen):
    """The tool lists differ: tools (by name) only recorded, only new, or with another schema
    (``diff``: a unified diff of each changed tool's schema, as indented JSON)."""

    removed: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    diff: str = ""


class ParamsChange(Frozen):
    """The model or its parameters differ (each side as ``{"model": ..., **params}``)."""

    recorded: dict[str, Any]
    new: dict[str, Any]


class RequestDivergence(Frozen):
    """The agent asked the model something else than recorded (another fingerprint)."""

    kind: Literal["request"] = "request"
    step: int
    recorded_seq: int
    recorded_fingerprint: str
    new_fingerprint: str
    message: MessageChange | None = None
    tools: ToolsChange | None = None
    params: ParamsChange | None = None
    summary: str


class FieldChange(Frozen):
    """One field of an action (canonical form) with its recorded and new value; a value is
    None where that side does not have the field."""

    field: str
    recorded: Any = None
    new: Any = None


class ActionDivergence(Frozen):
    """What the agent made of a recorded reply differs: an action (or the agent's message,
    or the error for a bad tool call) at ``index`` among the call's consequences, compared
    in canonical form field by field. ``recorded`` or ``new`` is None when that side has no
    consequence at ``index``; ``fields`` is empty when the action is the same but the
    recording holds no answer for it."""

    kind: Literal["action"] = "action"
    step: int
    recorded_seq: int
    index: int
    recorded: dict[str, Any] | None
    new: dict[str, Any] | None
    fields: list[FieldChange] = Field(default_factory=list)
    summary: str


class ExtraCall(Frozen):
    """The agent wanted a model call the recording does not have."""

    kind: Literal["extra_call"] = "extra_call"
    step: int
    summary: str


class MissingCall(Frozen):
    """The agent stopped (``outcome``) while the recording went on with more model calls."""

    kind: Literal["missing_call"] = "missing_call"
    step: int
    recorded_seq: int
    remaining: int
    outcome: str | None
    summary: str


class OutcomeDivergence(Frozen):
    """The run ended in another state than the recorded one."""

    kind: Literal["outcome"] = "outcome"
    step: int
    recorded_state: str | None
    recorded_reason: str
    new_state: str | None
    new_reason: str
    summary: str


class RedactedPart(Frozen):
    """A part of a recorded event that was redacted (``path``: a JSON Pointer into its
    payload, "" the whole payload), and why, as its ``redaction`` record says (None: no
    record says, which ``chronicle verify`` reports as tampering)."""

    seq: int
    path: str
    reason: str | None = None


class RedactedDivergence(Frozen):
    """The replay reached something it must serve or compare that was redacted from the
    recording (docs/replay.md, "Redacted sessions"): it cannot go on faithfully, in either
    mode. ``recorded_seq`` is the first recorded event concerned (the model call, an action
    it led to, an observation, a message of the user's), ``parts`` what went from it."""

    kind: Literal["redacted"] = "redacted"
    step: int
    recorded_seq: int
    parts: list[RedactedPart]
    summary: str


Divergence = Annotated[
    RequestDivergence
    | ActionDivergence
    | ExtraCall
    | MissingCall
    | OutcomeDivergence
    | RedactedDivergence,
    Field(discriminator="kind"),
]

#: Parts named in a summary; more are counted.
NAMED_PARTS = 3


def describe_parts(parts: list[RedactedPart]) -> str:
    """``seq 17 /response/content was redacted (a leaked key)``: the parts in words."""

    def where(part: RedactedPart) -> str:
        return f"seq {part.seq} {part.path or '(the whole event)'}"

    def why(part: RedactedPart) -> str:
        return f" ({part.reason})" if part.reason else ""

    if len(parts) == 1:
        return f"{where(parts[0])} was redacted{why(parts[0])}"
    named = [where(part) + why(part) for part in parts[:NAMED_PARTS]]
    if len(parts) > NAMED_PARTS:
        named.append(f"{len(parts) - NAMED_PARTS} more parts")
    return f"{', '.join(named[:-1])} and {named[-1]} were redacted"


def redacted(
    step: int, recorded_seq: int, parts: list[RedactedPart], lead: str
) -> RedactedDivergence:
    """The divergence at model call ``step``: ``lead`` (``model call 3 cannot be served``),
    then what was redacted."""
    return RedactedDivergence(
        step=step,
        recorded_seq=recorded_seq,
        parts=parts,
        summary=f"{lead}: {describe_parts(parts)}",
    )
