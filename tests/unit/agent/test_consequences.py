"""What a recorded model call leads to, and how the conversation shows it (pure code)."""

from __future__ import annotations

import json

from app.agent.calls import consequences
from app.agent.history import to_messages
from app.agent.tools import BUILTIN_TOOLS
from app.events import (
    ErrorObservation,
    FileEdit,
    LlmCall,
    LlmResponse,
    Message,
    Run,
    RunOutput,
    ToolCall,
)
from tests.support.event_log import HandMadeLog


def call(content: str | None = None, *calls: ToolCall, **fields: object) -> LlmCall:
    response = LlmResponse(content=content, tool_calls=list(calls), finish_reason="stop")
    values: dict[str, object] = {"model": "m", "fingerprint": "f", "response": response}
    values.update(fields)
    return LlmCall.model_validate(values)


def step(log: HandMadeLog, llm_call: LlmCall) -> list:
    """Record the call and what it leads to, as the controller does in one batch."""
    [recorded] = log.add(llm_call)
    events = consequences(recorded.payload, recorded.seq, tools=BUILTIN_TOOLS, mcp_tools={})
    return log.add(*events)


def test_an_empty_reply_is_an_error_the_model_reads_not_a_question() -> None:
    # Before: an empty reply became an empty agent message, and the controller stopped with
    # "the agent asked for your input".
    log = HandMadeLog()
    log.add(Message(content="Do it."))
    for content in (None, "", "  \n"):
        [error] = step(log, call(content))
        assert error.kind == "error" and error.cause == error.seq - 1
        assert error.payload["error_type"] == "empty_reply"
        assert error.payload["message"].startswith("the model sent an empty reply")
    messages = to_messages("system", log.events)
    assert [m["role"] for m in messages] == ["system", "user", "user", "user", "user"]
    assert all("the model sent an empty reply" in m["content"] for m in messages[2:])


def test_an_empty_reply_cut_at_the_token_limit_says_so() -> None:
    empty = call(None).model_copy(update={"response": LlmResponse(finish_reason="length")})
    [error] = consequences(empty.payload(), 1, tools=BUILTIN_TOOLS, mcp_tools={})
    assert isinstance(error, ErrorObservation) and "output token limit" in error.message


def test_an_unusable_reply_is_an_error_the_model_reads() -> None:
    log = HandMadeLog()
    log.add(Message(content="Do it."))
    failed = call(None, error="the model returned no choices", error_kind="bad_response")
    [error] = step(log, failed)
    assert error.payload["message"] == "the model returned no choices"
    assert error.payload["error_type"] == "bad_response"
    messages = to_messages("system", log.events)
    assert messages[-1] == {"role": "user", "content": "ERROR: the model returned no choices"}
    assert not any(m["role"] == "assistant" for m in messages)  # no empty assistant turn


def test_a_call_that_failed_for_good_is_not_in_the_conversation() -> None:
    log = HandMadeLog()
    log.add(Message(content="Do it."), call(None, error="refused credentials", error_kind="auth"))
    assert to_messages("system", log.events) == [
        {"role": "system", "content": "system"},
        {"role": "user", "content": "Do it."},
    ]


def test_text_is_a_message_and_tool_calls_are_actions() -> None:
    log = HandMadeLog()
    [message] = step(log, call("Which file?"))
    assert message.kind == "message" and message.source == "agent"
    bash = ToolCall(id="a", name="execute_bash", arguments='{"command": "ls", "is_input": "false"}')
    edit = ToolCall(id="b", name="str_replace_editor", arguments='{"command": "view"}')
    run, error = step(log, call("Looking.", bash, edit))
    assert run.kind == "run" and run.payload["is_input"] is False and run.cause == run.seq - 1
    assert error.kind == "error" and "missing path" in error.payload["message"]
    assert error.payload["tool_call_id"] == "b"
    log.add(RunOutput(output="a.py\n", exit_code=0, cause=run.seq))
    turn = to_messages("system", log.events)[-3:]
    assert turn[0]["role"] == "assistant" and len(turn[0]["tool_calls"]) == 2
    assert turn[1] == {"role": "tool", "tool_call_id": "a", "name": "execute_bash",
                       "content": "a.py\n\n[exit code 0]"}  # fmt: skip
    assert "missing path" in turn[2]["content"]


def test_replies_recorded_before_this_change_read_as_before() -> None:
    # An llm.call recorded without error_kind, and an empty reply that became a message.
    log = HandMadeLog()
    log.add(Message(content="hi"))
    [old] = log.add(call(""))
    log.add(Message(content="", source="agent", cause=old.seq))
    assert to_messages("system", log.events)[-1] == {"role": "assistant", "content": ""}


def test_actions_of_a_recorded_call_are_deterministic() -> None:
    # decide() on resume must give the same actions as the live step did.
    create = ToolCall(
        id="c",
        name="str_replace_editor",
        arguments=json.dumps({"command": "create", "path": "x.py", "file_text": "x" * 10}),
    )
    payload = call(None, create).payload()
    first = consequences(payload, 4, tools=BUILTIN_TOOLS, mcp_tools={})
    second = consequences(payload, 4, tools=BUILTIN_TOOLS, mcp_tools={})
    assert [e.payload() for e in first] == [e.payload() for e in second]
    assert isinstance(first[0], FileEdit) and first[0].cause == 4
    assert not isinstance(first[0], Run)


def test_the_same_tool_call_id_in_two_replies_keeps_each_result_with_its_call() -> None:
    # Some servers number calls per reply ("call_0" every time). Before, the later action
    # took the id over, and the first turn showed the second command's output.
    log = HandMadeLog()
    log.add(Message(content="Go."))
    outputs = []
    for word in ("first", "second"):
        bash = ToolCall(id="call_0", name="execute_bash", arguments=f'{{"command": "echo {word}"}}')
        [run] = step(log, call(None, bash))
        log.add(RunOutput(output=f"{word}\n", exit_code=0, cause=run.seq))
        outputs.append(f"{word}\n\n[exit code 0]")
    tool_messages = [m["content"] for m in to_messages("system", log.events) if m["role"] == "tool"]
    assert tool_messages == outputs


def test_arguments_nested_too_deeply_are_an_error_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    bash = ToolCall(id="a", name="execute_bash", arguments=f'{{"command": "ls", "x": {deep}}}')
    [error] = consequences(call(None, bash).payload(), 1, tools=BUILTIN_TOOLS, mcp_tools={})
    assert isinstance(error, ErrorObservation) and "not valid JSON" in error.message
