"""A recorded session read for replay: its model calls in order, what each led to, the answer
to each action, and where the user came in.

A live session may run in several goes (``run``, then ``resume`` after the agent asked the
user, stopped or was interrupted). The user's events (messages, pause/resume/stop) split the
recording into segments: the replay feeds each segment's user events, runs the controller as
a resumed session would, and expects it to stop as the recording did before the next user
event. Model calls that were interrupted (the run was cancelled while the model thought)
answered nothing and are left out: the resumed run asked again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.events import OBSERVATION_KINDS
from app.llm.prompts import whole_prompt
from app.store import RecordedEvent

#: The states in which a controller returns (``app.agent.controller.Outcome``).
OUTCOME_STATES = frozenset({"finished", "awaiting_user_input", "stopped", "error", "paused"})
#: The user's events, fed to the replay where they were recorded.
USER_KINDS = frozenset({"message", "agent.state"})


class RecordingError(Exception):
    """The session cannot be replayed; the message says why."""


class Segment(BaseModel):
    """The user's events that start one go of the controller, and how that go ended: the
    agent's last state before the next user event (None: the recording says nothing), after
    ``calls`` model calls in all."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    feed: list[RecordedEvent]
    end_state: str | None
    end_reason: str = ""
    calls: int


class Recording(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    session_id: Any
    title: str
    config: dict[str, Any]
    calls: list[RecordedEvent]
    #: call seq -> the events it led to (actions, the agent's message, errors), in order
    consequences: dict[int, list[RecordedEvent]] = Field(default_factory=dict)
    #: action seq -> its observation
    answers: dict[int, RecordedEvent] = Field(default_factory=dict)
    #: ``runtime.restarted`` events: the model reads them, so the replay serves them too
    restarts: list[RecordedEvent] = Field(default_factory=list)
    segments: list[Segment]
    #: call seq -> its 1-based number among the calls
    steps: dict[int, int] = Field(default_factory=dict)
    #: every llm.call of the log, the interrupted ones too (a prompt may keep messages of one)
    all_calls: list[RecordedEvent] = Field(default_factory=list)

    @property
    def outcome(self) -> str | None:
        return self.segments[-1].end_state if self.segments else None

    def step_of(self, call_seq: int) -> int:
        """The 1-based number of the recorded call at ``call_seq``."""
        return self.steps[call_seq]

    def prompt_of(self, call_seq: int) -> list[str]:
        """The hashes of the whole prompt of the recorded call at ``call_seq`` (resolved from
        the last call before it that lists its whole prompt: ``app.llm.prompts``)."""
        upto = next(i for i, call in enumerate(self.all_calls) if call.seq == call_seq)
        start = next(
            (
                i
                for i in range(upto, -1, -1)
                if self.all_calls[i].payload.get("prompt_kept") is None
            ),
            0,
        )
        prompt: list[str] = []
        for call in self.all_calls[start : upto + 1]:
            prompt = whole_prompt(
                call.payload, prompt if call is not self.all_calls[start] else None
            )
        return prompt


def _answers_nothing(call: RecordedEvent) -> bool:
    return call.payload.get("error_kind") == "interrupted"


def read_recording(events: list[RecordedEvent]) -> Recording:
    """The recording of one session's events (in seq order); ``RecordingError`` when it was
    not started by a session run or when a user event came while the agent worked."""
    if not events or events[0].kind != "session.created":
        raise RecordingError(
            "this session has no session.created event, so nothing says how its agent was "
            "configured; only sessions started by `chronicle run` can be replayed"
        )
    created = events[0]
    if created.payload.get("replay_of"):
        raise RecordingError(
            "this session is itself a replay; replay the session it replays "
            f"({created.payload['replay_of']}) instead"
        )
    all_calls = [e for e in events if e.kind == "llm.call"]
    calls = [e for e in all_calls if not _answers_nothing(e)]
    call_seqs = {call.seq for call in calls}
    consequences: dict[int, list[RecordedEvent]] = {}
    answers: dict[int, RecordedEvent] = {}
    for event in events:
        if event.cause in call_seqs:
            consequences.setdefault(event.cause, []).append(event)
        elif event.cause is not None and event.kind in OBSERVATION_KINDS:
            answers[event.cause] = event
    # Built, not validated: pydantic would check every field of every event and copy each
    # RecordedEvent (a NamedTuple) — a second copy of the log, and a tenth of a 1,000-step
    # replay's time. What goes in is what this function made.
    return Recording.model_construct(
        session_id=created.session_id,
        title=str(created.payload.get("title", "")),
        config=dict(created.payload.get("config") or {}),
        calls=calls,
        consequences=consequences,
        answers=answers,
        restarts=[e for e in events if e.kind == "runtime.restarted"],
        segments=_segments(events, call_seqs),
        steps={call.seq: number for number, call in enumerate(calls, start=1)},
        all_calls=all_calls,
    )


def _segments(events: list[RecordedEvent], call_seqs: set[int]) -> list[Segment]:
    segments: list[Segment] = []
    feed: list[RecordedEvent] = []
    state: tuple[str | None, str] = (None, "")
    calls = 0
    agent_since_feed = False
    for event in events:
        if event.source == "user" and event.kind in USER_KINDS:
            if agent_since_feed:
                if state[0] not in OUTCOME_STATES:
                    raise RecordingError(
                        f"the user's {event.kind} at seq {event.seq} came while the agent was "
                        "working; replaying a session steered mid-run is not supported yet"
                    )
                segments.append(
                    Segment.model_construct(
                        feed=feed, end_state=state[0], end_reason=state[1], calls=calls
                    )
                )
                feed, agent_since_feed = [], False
            feed.append(event)
        elif event.kind == "agent.state" and event.source == "agent":
            state = (event.payload.get("state"), str(event.payload.get("reason", "")))
            agent_since_feed = True
        elif event.kind == "llm.call" and event.seq in call_seqs:
            calls += 1
            agent_since_feed = True
    ended = state[0] if state[0] in OUTCOME_STATES else None
    segments.append(
        Segment.model_construct(feed=feed, end_state=ended, end_reason=state[1], calls=calls)
    )
    return segments
