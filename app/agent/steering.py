"""Which steering applies to a session in which state: the one table the API refuses the rest
by (409, saying what the state is), the page disables buttons by, and a run reads to end at
once when the log asks nothing of it.

Steering an ended session used to rewrite what it meant: a stop after ``finished`` was
recorded, and a replay of that session then ended ``stopped`` where the recording ended
``finished``. The phase a session is in comes from the log as the controller
(``app.agent.controller``) reads it: the agent's last state, the user's last steering and
whether the agent answered it, a message it has not seen, and whether anything runs the
session (a claim or a requested run) or it was cut short with nobody to continue it.

=====================  =====  ====  ======  =========================================
phase                  pause  stop  resume  what it is
=====================  =====  ====  ======  =========================================
running                yes    yes   no      the agent works, or a run is on its way
interrupted            no     no    yes     cut short, and nothing runs it now
pausing                no     yes   yes     a pause was asked, not answered yet
paused                 no     yes   yes     paused by the user
stopping               no     no    yes     a stop was asked, not answered yet
stopped                no     no    yes     stopped by the user
error                  no     no    yes     the agent failed (a resume tries again)
limit                  no     no    no      at its iteration or cost limit
awaiting_user_input    no     no    no      the agent asked the user something
finished               no     no    no      the agent called finish
=====================  =====  ====  ======  =========================================

A message is not steering: it is taken in every phase, and continues a session that finished,
awaits the user or failed.
"""

from __future__ import annotations

from typing import Literal, get_args
from uuid import UUID

from pydantic import BaseModel

from app.projections.session_state import status_of


class StateMark(BaseModel):
    """An ``agent.state`` event: its seq, the state, its reason and the limit it names."""

    seq: int
    state: str
    reason: str = ""
    limit: str | None = None


class SteeringMarks(BaseModel):
    """The few events of a session its steering depends on, read in one query by
    ``app.sessions.sql.steering_marks`` (the log, the claims and the lease rows)."""

    #: the session's last seq (0: no such session); a steering is appended right after it
    last_seq: int
    #: the agent's last ``agent.state`` (source ``agent``); None before the agent said any
    state: StateMark | None = None
    #: the user's last ``agent.state`` (source ``user``: paused, running or stopped)
    request: StateMark | None = None
    #: seq of the user's last message
    message_seq: int | None = None
    #: a process holds the session's claim, or a worker was asked to run it
    running: bool = False


Steering = Literal["pause", "stop", "resume"]
Phase = Literal[
    "running",
    "interrupted",
    "pausing",
    "paused",
    "stopping",
    "stopped",
    "error",
    "limit",
    "awaiting_user_input",
    "finished",
]
#: What a run ends with, without doing anything, in a phase that asks nothing of it.
IdleOutcome = Literal["finished", "awaiting_user_input", "paused", "stopped"]

#: The controller's answers to the user's pause and stop (``app.agent.controller``).
PAUSED_BY_USER = "paused by the user"
STOPPED_BY_USER = "stopped by the user"

APPLIES: dict[Steering, frozenset[Phase]] = {
    "pause": frozenset({"running"}),
    "stop": frozenset({"running", "pausing", "paused"}),
    "resume": frozenset({"interrupted", "pausing", "paused", "stopping", "stopped", "error"}),
}
#: For the refusal's sentence: where each steering applies, in words.
APPLIES_TO: dict[Steering, str] = {
    "pause": "a running session",
    "stop": "a running or paused session",
    "resume": "a paused, stopped, interrupted or failed session",
}
#: For the refusal's sentence: what each phase is, in words.
DESCRIBED: dict[Phase, str] = {
    "running": "running",
    "interrupted": "interrupted (nothing runs it now)",
    "pausing": "pausing (a pause was asked already)",
    "paused": "paused",
    "stopping": "stopping (a stop was asked already)",
    "stopped": "stopped",
    "error": "ended in error",
    "limit": "stopped at its limit",
    "awaiting_user_input": "awaiting your input",
    "finished": "finished",
}
#: What to do instead, where there is something (for a resume; for any steering when cut short).
INSTEAD: dict[Phase, str] = {
    "interrupted": "resume it to let it go on",
    "limit": "resume it with a higher limit: chronicle resume {id} --max-iterations N "
    "(or --max-cost USD)",
    "awaiting_user_input": "send it a message to answer it",
    "finished": "send it a message to continue it",
}
_RUN_ASKED: frozenset[str] = frozenset({"paused", "stopped"})


def phase_of(marks: SteeringMarks) -> Phase:
    """The phase the session's marks put it in (see the module's table)."""
    state, request = marks.state, marks.request

    def unseen(seq: int | None) -> bool:
        """Whether the agent said nothing since ``seq`` (it has not answered it)."""
        return seq is not None and (state is None or seq > state.seq)

    if request is not None and request.state in _RUN_ASKED:
        if unseen(request.seq):
            return "pausing" if request.state == "paused" else "stopping"
        return "paused" if request.state == "paused" else "stopped"
    going_on: Phase = "running" if marks.running else "interrupted"
    if state is None:
        return going_on
    status = status_of(state.state, state.reason, state.limit)
    if status == "limit":
        return "limit"  # a message or a resume meets the same limit: only a higher one helps
    if status in ("working", "paused", "stopped"):  # cut short, not by the user's request
        return going_on
    resumed = request is not None and request.state == "running" and unseen(request.seq)
    if unseen(marks.message_seq) or (status == "error" and resumed):
        return going_on
    if status in ("finished", "awaiting_user_input"):
        return status  # type: ignore[return-value]
    return "error"


def phase_shown(state: str | None) -> Phase:
    """The phase of a session as the session list shows it (``SessionSummary.state``: no
    pending steering in it); None is a session whose agent has not started yet."""
    if state is None:
        return "running"
    return state if state in get_args(Phase) else "error"  # type: ignore[return-value]


def applicable(phase: Phase) -> list[Steering]:
    """The steering that applies in ``phase``, in the page's order."""
    return [steering for steering in get_args(Steering) if phase in APPLIES[steering]]


def refusal(session_id: UUID, steering: Steering, phase: Phase) -> str | None:
    """Why ``steering`` does not apply to the session in ``phase`` (None: it applies)."""
    if phase in APPLIES[steering]:
        return None
    sentence = (
        f"session {session_id} is {DESCRIBED[phase]}; {steering} applies only to "
        f"{APPLIES_TO[steering]}"
    )
    instead = INSTEAD.get(phase) if steering == "resume" or phase == "interrupted" else None
    return f"{sentence}; {instead.format(id=session_id)}" if instead else sentence


def needs_run(steering: Steering, phase: Phase) -> bool:
    """Whether the steering, recorded in ``phase``, must ask a worker to run the session: a
    resume always; a stop of a paused session, so that its stop is answered in the log (the
    run records it without starting anything: ``idle_answer``)."""
    return steering == "resume" or (steering == "stop" and phase == "paused")


def idle_answer(marks: SteeringMarks) -> tuple[Literal["paused", "stopped"], str] | None:
    """The state a run records, and nothing else, for a pause or stop the user asked while the
    agent was not working (a stop of a paused session): the controller's own answer."""
    phase = phase_of(marks)
    if phase not in ("pausing", "stopping") or marks.state is None:
        return None
    if status_of(marks.state.state, marks.state.reason, marks.state.limit) == "working":
        return None  # the agent is mid-run: its controller answers
    return ("paused", PAUSED_BY_USER) if phase == "pausing" else ("stopped", STOPPED_BY_USER)


def idle_outcome(marks: SteeringMarks, *, limits_as_recorded: bool) -> IdleOutcome | None:
    """How a run of the session ends when its log asks nothing of it (the agent ended and the
    user sent nothing it has not seen): a run then starts no sandbox and records nothing. None
    when the run has something to do. At a limit only a run with higher limits goes on."""
    phase = phase_of(marks)
    if phase == "limit":
        return "stopped" if limits_as_recorded else None
    if phase in ("finished", "awaiting_user_input", "paused", "stopped"):
        return phase  # type: ignore[return-value]
    return None
