"""What the model reads of MCP results and of a sandbox restart, from hand-made logs."""

from __future__ import annotations

from typing import Any

from app.agent.history import observation_text, to_messages
from app.events import (
    LlmCall,
    LlmResponse,
    McpCall,
    McpResult,
    Message,
    RunOutput,
    RuntimeRestarted,
    ToolCall,
)
from app.events import Run as RunAction
from tests.support.event_log import HandMadeLog

PNG = "iVBORw0KGgo="


def call_with(log: HandMadeLog, *calls: tuple[str, str]) -> int:
    """An llm.call asking for ``calls`` (id, tool name); its seq."""
    response = LlmResponse(
        tool_calls=[ToolCall(id=id_, name=name, arguments="{}") for id_, name in calls]
    )
    [call] = log.add(LlmCall(model="m", fingerprint="f", response=response))
    return call.seq


def test_an_image_result_is_text_in_the_tool_message_and_an_image_after_the_turn() -> None:
    log = HandMadeLog()
    log.add(Message(content="look"))
    seq = call_with(log, ("c1", "echo__picture"), ("c2", "echo__echo"))
    [picture, echo] = log.add(
        McpCall(server="echo", tool="picture", tool_call_id="c1", cause=seq),
        McpCall(server="echo", tool="echo", tool_call_id="c2", cause=seq),
    )
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    log.add(
        McpResult(content=[{"type": "text", "text": "a red dot:"}, image], cause=picture.seq),
        McpResult(content=[{"type": "text", "text": "echo: hi"}], cause=echo.seq),
    )
    messages = to_messages("system", log.events)
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert messages[3]["content"] == "a red dot:\n[image (image/png): shown below]"
    assert PNG not in str(messages[3:5])
    assert messages[5]["content"][1:] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    ]


def test_blocks_without_text_are_named_not_dumped() -> None:
    log = HandMadeLog()
    content: list[dict[str, Any]] = [
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "the file"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA"}},
        {"type": "resource_link", "uri": "file:///c", "name": "c"},
    ]
    [result] = log.add(McpResult(content=content, cause=1))
    text = observation_text(result)
    assert text.splitlines() == [
        "[audio (audio/wav): not shown]",
        "the file",
        "[resource file:///b.bin: not shown]",
        "[resource: file:///c]",
    ]
    assert "AAAA" not in text


def test_structured_content_is_shown_when_there_is_no_text() -> None:
    log = HandMadeLog()
    [result] = log.add(McpResult(structured_content={"celsius": 21.5}, cause=1))
    assert observation_text(result) == '{"celsius": 21.5}'


def test_a_restart_is_told_at_its_place_in_the_conversation() -> None:
    log = HandMadeLog()
    log.add(Message(content="go"))
    seq = call_with(log, ("c1", "execute_bash"))
    [run] = log.add(RunAction(command="sleep 100 &", tool_call_id="c1", cause=seq))
    log.add(
        RunOutput(output="", exit_code=0, cause=run.seq),
        RuntimeRestarted(reason="killed", message="The sandbox died (killed); processes gone."),
    )
    messages = to_messages("system", log.events)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[-1]["content"] == "[The sandbox died (killed); processes gone.]"
