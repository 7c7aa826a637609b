"""The controller's decisions as pure functions: what the log calls for next.

``AgentController`` (app/agent/controller.py) keeps, as events come in, what deciding needs
(the user's steering, the last model call and whether it led anywhere, the actions awaiting
an answer, the iterations and the cost spent); ``decide`` turns that ``Situation`` into one
``Decision``, and the controller carries it out (appends, a model call, a wait). Kept apart
so every branch (steering, limits, stuck detection, finish, a model's failure) is tested
on plain values, without a database or a model, and the controller is only the I/O around
it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from app.agent.steering import PAUSED_BY_USER, STOPPED_BY_USER
from app.agent.stuck import StuckConfig, detect
from app.events import (
    Condensation,
    ErrorObservation,
    Event,
    InvalidEventError,
    LlmCall,
    LlmResponse,
)
from app.events.conversation import AgentStateName, LimitName
from app.store import RecordedEvent

Outcome = Literal["finished", "awaiting_user_input", "stopped", "error", "paused"]

FINISHED = "the agent called finish"
ASKED_THE_USER = "the agent asked for your input"
CONTEXT_EXCEEDED = "the conversation exceeded the model's context window"


class Limits(BaseModel):
    max_iterations: int = 100
    max_cost_usd: float | None = None
    #: seconds an awaited action may stay unanswered beyond its own timeout
    pending_grace: float = 30.0
    default_action_timeout: float = 150.0


@dataclass(frozen=True)
class Situation:
    """What the controller knows of the log when it decides."""

    #: the user's latest steering (``paused`` / ``running`` / ``stopped``), if any
    request: str | None = None
    #: the last model call, when what it leads to was never appended
    unprocessed_call: RecordedEvent | None = None
    #: whether actions await their answer
    pending: bool = False
    #: whether the user has sent a message at all
    asked: bool = False
    #: whether the agent called finish after the user's last message
    finished_since_user: bool = False
    #: the events since the user's last message (the last ``STUCK_WINDOW`` at most)
    recent: Sequence[RecordedEvent] = ()
    #: model calls that answered something, and what all calls cost
    iterations: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class End:
    """Record ``state`` (with ``reason``) and end the run with ``outcome``."""

    state: AgentStateName
    reason: str
    outcome: Outcome
    #: which limit stopped the run, recorded as ``agent.state``'s ``limit``
    limit: LimitName | None = None
    #: stuck detection ended the run, recorded as ``agent.state``'s ``stuck``
    stuck: bool = False


@dataclass(frozen=True)
class Pause:
    """Record ``paused`` and wait for the user's next steering (the run goes on)."""

    reason: str = PAUSED_BY_USER


@dataclass(frozen=True)
class Continue:
    """Append what the recorded ``call`` leads to (its actions, or an error)."""

    call: RecordedEvent


@dataclass(frozen=True)
class AwaitActions:
    """Actions await their answers: give up the overdue ones, then wait for the log."""


@dataclass(frozen=True)
class Wait:
    """Nothing to do until the log moves on (nothing was asked yet)."""


@dataclass(frozen=True)
class AskModel:
    """Record ``running`` and take the agent's next step (a model call)."""


Decision = End | Pause | Continue | AwaitActions | Wait | AskModel


def decide(
    situation: Situation,
    limits: Limits,
    stuck: StuckConfig,
    *,
    stop_when_paused: bool = False,
) -> Decision:
    """The next thing the log calls for, in order of precedence: the user's steering, a call
    to finish, actions to wait for, an answer already given, then the limits and stuck
    detection before the next model call."""
    if situation.request == "stopped":
        return End("stopped", STOPPED_BY_USER, "stopped")
    if situation.request == "paused":
        return End("paused", PAUSED_BY_USER, "paused") if stop_when_paused else Pause()
    if situation.unprocessed_call is not None:
        return Continue(situation.unprocessed_call)
    if situation.pending:
        return AwaitActions()
    if not situation.asked:
        return Wait()
    if situation.finished_since_user:
        return End("finished", FINISHED, "finished")
    recent = list(situation.recent)
    if recent and recent[-1].kind == "message" and recent[-1].source == "agent":
        return End("awaiting_user_input", ASKED_THE_USER, "awaiting_user_input")
    if situation.iterations >= limits.max_iterations:
        return End(
            "stopped",
            f"reached the iteration limit ({limits.max_iterations}); raise "
            "--max-iterations and resume to continue",
            "stopped",
            limit="iterations",
        )
    if limits.max_cost_usd is not None and situation.cost >= limits.max_cost_usd:
        return End(
            "stopped",
            f"reached the cost limit (${limits.max_cost_usd:.2f}, spent "
            f"${situation.cost:.4f}); raise --max-cost and resume to continue",
            "stopped",
            limit="cost",
        )
    why = detect(recent, stuck)
    if why:
        return End("error", f"the agent looks stuck: {why}", "error", stuck=True)
    return AskModel()


def condensation(answered_calls: Sequence[int], last: RecordedEvent | None) -> Condensation | None:
    """What leaves the older half of the model turns since ``last`` (the last condensation)
    out of the prompt; None when fewer than two answered calls are left to halve."""
    since = last.payload["forget_before"] if last else 0
    calls = answered_calls[bisect.bisect_left(answered_calls, since) :]
    if len(calls) < 2:
        return None
    return Condensation(
        forget_before=calls[len(calls) // 2],
        forgotten_calls=len(calls) // 2 + (last.payload.get("forgotten_calls", 0) if last else 0),
        reason=CONTEXT_EXCEEDED,
    )


def after_model_error(kind: str, message: str, condense: Condensation | None) -> Condensation | End:
    """A model call failed for good: condense a conversation too long for the model when
    there is something left to drop, else end in ``error`` saying why."""
    if kind == "context_window" and condense is not None:
        return condense
    return End("error", f"the model call failed: {message}", "error")


def overdue(
    pending: Iterable[RecordedEvent], seen_at: Mapping[int, float], now: float, limits: Limits
) -> list[tuple[RecordedEvent, float]]:
    """The pending actions past their timeout and the grace, with how long each waited (an
    action not seen yet counts from ``now``)."""
    late = []
    for action in pending:
        limit = action.payload.get("timeout") or limits.default_action_timeout
        waited = now - seen_at.get(action.seq, now)
        if waited > limit + limits.pending_grace:
            late.append((action, waited))
    return late


def without_refused(call: LlmCall, seq: int, refused: InvalidEventError) -> list[Event]:
    """What to record of a model step the store refused: the call and an error saying why,
    without the actions (or, when the call itself was refused, without its response)."""
    if refused.kind == "llm.call":
        message = f"the model's reply could not be recorded ({refused})"
        call = call.model_copy(
            update={
                "response": LlmResponse(finish_reason=call.response.finish_reason),
                "error": message,
                "error_kind": "bad_response",
            }
        )
    else:
        message = f"what the model asked for could not be recorded ({refused})"
    return [call, ErrorObservation(message=message, error_type="unrecordable", cause=seq)]
