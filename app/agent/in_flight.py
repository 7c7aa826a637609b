"""A model call a dead worker left in flight, read from the log.

A worker killed while the model thinks (kill -9, a lost machine) never appends the call's
``llm.call``: the call may have been sent and paid, and the log would not say so. Nothing is
written per step to know it: the worker that takes the session over reads the log as the dead
worker left it. The controller always calls the model next when the run had its sandbox up,
the agent was ``running`` (or waiting on a rate limit), every action it asked for was
answered, the last call's reply was turned into what it asked for, and that reply neither
finished nor handed the turn to the user. Then a call was in flight, or about to be (the
worker died in the milliseconds between an append and the request): recorded as an
``llm.call`` with ``error_kind`` ``lost``, its answer, usage and cost unknown.

A lost call recorded, or a run that starts its sandbox, ends that reading: a worker that
dies again before its sandbox is up left nothing new in flight.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from app.events import AWAITED_KINDS, LlmCall, LlmUsage
from app.events.llm import ANSWERED_NOTHING, LOST
from app.events.session_config import SessionConfig
from app.store import RecordedEvent

#: The agent's states in which its next step is a model call.
CALLING_STATES = frozenset({"running", "rate_limited"})
#: Usage nobody knows: every count None (the views read them as NULL, the call as
#: ``usage_unknown``).
UNKNOWN_USAGE = LlmUsage(prompt_tokens=None, completion_tokens=None, cached_tokens=None,
                         total_tokens=None)  # fmt: skip


class _Reading:
    """What the run that last held the session was doing, folded over its log."""

    def __init__(self) -> None:
        self.replay = False
        self.sandbox_up = False
        self.state: str | None = None
        self.awaiting: set[int] = set()
        self.last_call: RecordedEvent | None = None
        self.call_led = False
        self.turn_ended = False
        self.model: str | None = None

    def take(self, event: RecordedEvent) -> None:
        kind, payload = event.kind, event.payload
        if event.cause is not None:
            self.awaiting.discard(event.cause)
            if self.last_call is not None and event.cause == self.last_call.seq:
                self.call_led = True
        if kind == "session.created":
            self.replay = bool(payload.get("replay_of"))
            try:
                recorded = SessionConfig.of_payload(payload).model
            except ValidationError:  # the fold goes on: the model stays as configured
                recorded = None
            self.model = recorded or self.model
        elif kind in ("runtime.starting", "runtime.failed"):
            self.sandbox_up = False
        elif kind == "runtime.ready":
            self.sandbox_up = True
        elif kind == "agent.state" and event.source == "agent":
            self.state = payload.get("state")
        elif kind == "llm.call":
            self.model = payload.get("model") or self.model
            if payload.get("error_kind") == LOST:
                self.sandbox_up = False  # recorded: only a new run's call can be lost now
            if payload.get("error_kind") not in ANSWERED_NOTHING:
                self.last_call, self.call_led, self.turn_ended = event, False, False
        elif kind == "message":
            self.turn_ended = event.source == "agent"
        elif kind == "finish":
            self.turn_ended = True
        elif kind in AWAITED_KINDS:
            self.awaiting.add(event.seq)

    def call_unprocessed(self) -> bool:
        """The last call's reply is still to be turned into actions (the controller's next
        step, not a model call)."""
        call = self.last_call
        if call is None or self.call_led:
            return False
        return not call.payload.get("error") or call.payload.get("error_kind") == "bad_response"

    def calls_model_next(self) -> bool:
        return (
            not self.replay
            and self.sandbox_up
            and self.state in CALLING_STATES
            and not self.awaiting
            and not self.turn_ended
            and not self.call_unprocessed()
        )


def lost_call(events: Iterable[RecordedEvent], holder: str) -> LlmCall | None:
    """The ``llm.call`` to record for the call the run of ``holder`` (a worker whose lease
    expired) had in flight when it stopped, given the session's log as it left it; None when
    its next step was not a model call (a command was running, the run had ended, its sandbox
    was not up yet) or a replay (served from a recording, nothing was paid)."""
    reading = _Reading()
    for event in events:
        reading.take(event)
    if not reading.calls_model_next():
        return None
    return LlmCall(
        model=reading.model or "unknown",
        fingerprint="",
        usage=UNKNOWN_USAGE,
        cost_usd=None,
        latency_ms=None,
        error=(
            f"the worker running the session ({holder}) stopped while this model call was in "
            "flight and never recorded it: whether the model answered, and what the call "
            "cost, is unknown"
        ),
        error_kind=LOST,
    )
