"""The conversation kept up to date step by step is the one rebuilt from the whole log."""

from __future__ import annotations

import pytest

from app.agent.calls import consequences
from app.agent.history import PENDING, Conversation, to_messages
from app.agent.tools import BUILTIN_TOOLS
from app.events import (
    Condensation,
    ErrorObservation,
    LlmCall,
    LlmResponse,
    Message,
    RunOutput,
    RuntimeRestarted,
    ToolCall,
)
from app.store import RecordedEvent
from tests.support.event_log import HandMadeLog


def call(*calls: ToolCall, content: str | None = None, **fields: object) -> LlmCall:
    response = LlmResponse(content=content, tool_calls=list(calls), finish_reason="stop")
    return LlmCall.model_validate(
        {"model": "m", "fingerprint": "f", "response": response, **fields}
    )


def bash(call_id: str, command: str) -> ToolCall:
    return ToolCall(id=call_id, name="execute_bash", arguments=f'{{"command": "{command}"}}')


def step(log: HandMadeLog, llm_call: LlmCall) -> list[RecordedEvent]:
    [recorded] = log.add(llm_call)
    return log.add(*consequences(recorded.payload, recorded.seq, tools=BUILTIN_TOOLS, mcp_tools={}))


def test_each_step_gives_what_the_whole_log_gives() -> None:
    # Before the fix the agent rebuilt (and the model gateway rehashed) the whole history at
    # each step; the kept conversation must still equal the rebuilt one at every point,
    # pending tool results, late observations, unusable replies and restarts included.
    log = HandMadeLog()
    conversation = Conversation("system")
    seen: list[list[dict[str, object]]] = []

    def check() -> None:
        kept = conversation.messages(log.events)
        assert kept == to_messages("system", log.events)
        seen.append(kept)

    log.add(Message(content="Do it."))
    check()
    for n in range(3):
        first, second = step(log, call(bash(f"a{n}", "ls"), bash(f"b{n}", "pwd"), content="go"))
        check()  # both results pending
        assert PENDING in [m["content"] for m in seen[-1]]
        log.add(RunOutput(output="one", exit_code=0, cause=first.seq))
        check()  # one result in, one pending
        log.add(RunOutput(output="two", exit_code=1, cause=second.seq))
        check()
    bad = call(error="not JSON", error_kind="bad_response")
    [recorded_bad] = log.add(bad)
    check()  # an unusable reply whose error is not in yet
    log.add(ErrorObservation(message="not JSON", error_type="bad_response", cause=recorded_bad.seq))
    check()
    log.add(RuntimeRestarted(message="The sandbox was restarted.", restart=1, max_restarts=3))
    log.add(Message(content="And then?"))
    check()
    step(log, call(content="Which file?"))
    check()
    assert seen[-1][-1] == {"role": "assistant", "content": "Which file?"}


def test_a_condensed_or_another_log_is_rebuilt_whole() -> None:
    log = HandMadeLog()
    conversation = Conversation("system")
    log.add(Message(content="Do it."))
    calls = []
    for n in range(4):
        action, *_ = step(log, call(bash(f"c{n}", "ls")))
        log.add(RunOutput(output=f"out {n}", exit_code=0, cause=action.seq))
        calls.append(action.seq - 1)
        assert conversation.messages(log.events) == to_messages("system", log.events)
    log.add(Condensation(forget_before=calls[2], forgotten_calls=2))
    condensed = conversation.messages(log.events)
    assert condensed == to_messages("system", log.events)
    assert "2 earlier steps were condensed" in str(condensed)
    other = HandMadeLog()
    other.add(Message(content="Something else."))
    assert conversation.messages(other.events) == to_messages("system", other.events)


def test_given_only_recent_events_it_keeps_the_conversation_of_the_whole_log() -> None:
    # The controller keeps a window of the log, not the log, and gives the agent only events
    # from some point on. Before, the conversation followed the log only when given it whole
    # (from a window it started over, losing every earlier turn); now it takes in what is new
    # by seq and keeps the messages, condensation included, without the events.
    log = HandMadeLog()
    conversation = Conversation("system")
    log.add(Message(content="Do it."))
    calls = []
    for n in range(8):
        assert conversation.messages(log.events[-6:]) == to_messages("system", log.events)
        action, *_ = step(log, call(bash(f"c{n}", "ls"), content=f"turn {n}"))
        log.add(RunOutput(output=f"out {n}", exit_code=0, cause=action.seq))
        calls.append(action.seq - 1)
    assert conversation.messages(log.events[-3:]) == to_messages("system", log.events)
    assert conversation.last_call is not None and conversation.last_call["response"]["content"] == (
        "turn 7"
    )
    log.add(Condensation(forget_before=calls[4], forgotten_calls=4))
    log.add(Message(content="Go on."))
    assert conversation.messages(log.events[-2:]) == to_messages("system", log.events)
    for n in range(8, 10):
        action, *_ = step(log, call(bash(f"c{n}", "pwd")))
        log.add(RunOutput(output=f"out {n}", exit_code=0, cause=action.seq))
        condensed = conversation.messages(log.events[-3:])
        assert condensed == to_messages("system", log.events)
    assert "4 earlier steps were condensed" in str(condensed)
    assert "turn 3" not in str(condensed) and "turn 4" in str(condensed)
    log.add(Condensation(forget_before=calls[6], forgotten_calls=6))
    assert conversation.messages(log.events[-1:]) == to_messages("system", log.events)


def test_events_it_was_not_given_are_an_error_not_a_shorter_conversation() -> None:
    log = HandMadeLog()
    conversation = Conversation("system")
    log.add(Message(content="Do it."))
    conversation.messages(log.events)
    log.add(Message(content="one"), Message(content="two"))
    with pytest.raises(ValueError, match="every event must be given once"):
        conversation.messages(log.events[-1:])
    fresh = Conversation("system")
    with pytest.raises(ValueError, match="every event must be given once"):
        fresh.messages(log.events[1:])
