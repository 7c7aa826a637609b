"""A chat completion written back as Anthropic's Message: content blocks, stop reasons and
usage, each checked with the anthropic SDK's own model of a Message."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message

from app.external.anthropic_reply import UNPARSED_ARGUMENTS, to_message


def completion(
    message: dict[str, Any], finish: str | None = "stop", **usage: Any
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": usage or {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def message(reply: dict[str, Any]) -> Message:
    return Message.model_validate(to_message(reply, model="claude-sonnet-4-5"))


def test_text_and_tool_calls_become_blocks_with_parsed_input() -> None:
    reply = completion(
        {
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read", "arguments": '{"path": "a.py", "n": 2}'}},
                {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": ""}},
            ],
        },
        finish="tool_calls",
    )  # fmt: skip
    answer = message(reply)
    assert answer.id == "msg_chatcmpl-7"
    assert answer.model == "gpt-4o-mini"
    assert answer.stop_reason == "tool_use"
    assert [block.model_dump(exclude_none=True) for block in answer.content] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.py", "n": 2}},
        {"type": "tool_use", "id": "call_2", "name": "ls", "input": {}},
    ]
    assert answer.usage.input_tokens == 12 and answer.usage.output_tokens == 3


@pytest.mark.parametrize(
    ("finish", "tools", "reason"),
    [
        ("stop", False, "end_turn"),
        (None, False, "end_turn"),
        ("length", False, "max_tokens"),
        ("content_filter", False, "refusal"),
        # some servers say stop with tool calls: the agent must run them
        ("stop", True, "tool_use"),
        # a call cut short is not one to run
        ("length", True, "max_tokens"),
    ],
)
def test_stop_reasons(finish: str | None, tools: bool, reason: str) -> None:
    calls = [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}]
    reply = completion({"content": "x", "tool_calls": calls if tools else None}, finish=finish)
    assert message(reply).stop_reason == reason


def test_a_stop_reason_litellm_kept_from_an_anthropic_model_is_sent_as_it_was() -> None:
    reply = completion({"content": "done"})
    reply["choices"][0]["provider_specific_fields"] = {
        "stop_reason": "stop_sequence",
        "stop_sequence": "END",
    }
    answer = message(reply)
    assert (answer.stop_reason, answer.stop_sequence) == ("stop_sequence", "END")


def test_cache_reads_and_writes_are_left_out_of_input_tokens() -> None:
    reply = completion(
        {"content": "ok"},
        prompt_tokens=1000,
        completion_tokens=7,
        prompt_tokens_details={"cached_tokens": 600},
        cache_creation_input_tokens=300,
    )
    usage = message(reply).usage
    assert (
        usage.input_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
    ) == (100, 600, 300)
    assert usage.output_tokens == 7


def test_odd_usage_and_odd_arguments_still_make_a_message() -> None:
    reply = completion(
        {"content": None, "tool_calls": [{"function": {"name": "t", "arguments": "[1, 2"}}]},
        finish="tool_calls",
        prompt_tokens="abc",
        completion_tokens=1e999,
    )
    answer = message(reply)
    block = answer.content[0]
    assert block.type == "tool_use"
    assert block.input == {UNPARSED_ARGUMENTS: "[1, 2"}
    assert block.id.startswith("toolu_")
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (0, 0)


def test_thinking_comes_first_signed_or_redacted() -> None:
    reply = completion(
        {
            "content": "42",
            "reasoning_content": "hmm",
            "thinking_blocks": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
        }
    )
    assert [block.type for block in message(reply).content] == [
        "thinking",
        "redacted_thinking",
        "text",
    ]
    plain = completion({"content": "42", "reasoning_content": "hmm"})
    first = message(plain).content[0]
    assert first.type == "thinking" and first.thinking == "hmm"


def test_no_choices_is_an_empty_message_not_a_crash() -> None:
    answer = message({"id": "msg_x", "choices": []})
    assert (answer.id, answer.model, answer.content, answer.stop_reason) == (
        "msg_x",
        "claude-sonnet-4-5",
        [],
        "end_turn",
    )
