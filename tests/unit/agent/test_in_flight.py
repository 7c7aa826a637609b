"""What the log says a dead worker's run was doing: a model call in flight (recorded as
lost, its usage and cost unknown) only when its next step could be nothing else."""

from __future__ import annotations

import uuid

from app.agent.in_flight import lost_call
from app.events import (
    AgentState,
    ErrorObservation,
    Event,
    Finish,
    LlmCall,
    LlmResponse,
    Message,
    Run,
    RunOutput,
    SessionCreated,
    ToolCall,
)
from app.events.lifecycle import RuntimeStatus
from app.events.llm import LOST
from tests.support.event_log import HandMadeLog

CONFIG = {"agent": "codeact", "runtime": "local", "model": "openai/fake-model"}


def started(log: HandMadeLog, *, replay: bool = False) -> None:
    """A session that ran up to its first model call: created, asked, sandbox up, running."""
    created = SessionCreated(title="t", config=CONFIG, replay_of=uuid.uuid4() if replay else None)
    log.add(created, Message(content="task", source="user"))
    log.add(RuntimeStatus(kind="runtime.starting"), RuntimeStatus(kind="runtime.ready"))
    log.add(
        AgentState(state="loading", source="agent"), AgentState(state="running", source="agent")
    )


def step(log: HandMadeLog, *actions: Event) -> int:
    """A model call and what it asked for; its seq."""
    seq = log.next_seq
    calls = [ToolCall(id=f"c{i}", name="x", arguments="{}") for i in range(len(actions))]
    call = LlmCall(
        model="openai/fake-model", fingerprint="f", response=LlmResponse(tool_calls=calls)
    )
    log.add(call, *(a.model_copy(update={"cause": seq}) for a in actions))
    return seq


def test_a_run_killed_while_the_model_thinks_left_a_call_in_flight() -> None:
    log = HandMadeLog()
    started(log)
    call = lost_call(log.events, "worker-a")
    assert call is not None
    assert call.error_kind == LOST and "worker-a" in (call.error or "")
    assert call.model == "openai/fake-model"
    assert call.cost_usd is None and call.latency_ms is None
    assert call.usage.prompt_tokens is None and call.usage.completion_tokens is None

    # ... and after a command's answer came in: the model is asked next.
    log = HandMadeLog()
    started(log)
    run_seq = step(log, Run(command="ls")) + 1
    log.add(RunOutput(output="", exit_code=0, cause=run_seq))
    assert lost_call(log.events, "worker-a") is not None


def test_no_call_in_flight_while_a_command_runs_or_after_the_run_ended() -> None:
    log = HandMadeLog()
    started(log)
    step(log, Run(command="sleep 100"))
    assert lost_call(log.events, "w") is None  # the executor reports the command interrupted

    log = HandMadeLog()
    started(log)
    step(log, Finish(message="done"))
    assert lost_call(log.events, "w") is None  # killed before it said finished

    log = HandMadeLog()
    started(log)
    log.add(AgentState(state="awaiting_user_input", source="agent"))
    assert lost_call(log.events, "w") is None


def test_no_call_in_flight_before_the_sandbox_was_up() -> None:
    log = HandMadeLog()
    started(log)
    log.add(RuntimeStatus(kind="runtime.starting"))  # a new run, killed while it started
    assert lost_call(log.events, "w") is None


def test_a_lost_call_is_recorded_once() -> None:
    """The worker that records it may die before its sandbox is up: the next one finds
    nothing new in flight; once a run is up again, a new call can be lost."""
    log = HandMadeLog()
    started(log)
    first = lost_call(log.events, "worker-a")
    assert first is not None
    log.add(first)
    assert lost_call(log.events, "worker-b") is None
    log.add(RuntimeStatus(kind="runtime.starting"))
    assert lost_call(log.events, "worker-b") is None
    log.add(RuntimeStatus(kind="runtime.ready"))
    assert lost_call(log.events, "worker-b") is not None


def test_a_reply_not_yet_turned_into_actions_is_not_a_call_in_flight() -> None:
    log = HandMadeLog()
    started(log)
    step(log)  # the call recorded, its actions not (a log written before calls came in a batch)
    assert lost_call(log.events, "w") is None
    log.add(ErrorObservation(message="no action", error_type="internal", cause=log.next_seq - 1))
    assert lost_call(log.events, "w") is not None


def test_a_replay_pays_for_no_call() -> None:
    log = HandMadeLog()
    started(log, replay=True)
    assert lost_call(log.events, "w") is None
