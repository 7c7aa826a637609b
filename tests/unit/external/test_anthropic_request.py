"""An Anthropic Messages request read into the chat-completions body the gateway sends on:
every kind of block, tools and tool choice, parameters, and the refusals in Anthropic's
words (the error JSON checked with the anthropic SDK's own model)."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types.shared import ErrorResponse

from app.external.anthropic_models import parse_request
from app.external.anthropic_protocol import (
    ERROR_STATUS,
    error_body,
    error_type,
    to_chat_request,
)
from app.external.errors import GatewayError

PNG = "iVBORw0KGgo="


def chat(body: dict[str, Any]) -> dict[str, Any]:
    return to_chat_request(parse_request(body))


def test_a_conversation_with_tools_becomes_the_chat_completions_body() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [
            {"type": "text", "text": "You are a coder."},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {"role": "user", "content": "Fix the test."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "sig1"},
                    {"type": "thinking", "thinking": "unsigned", "signature": ""},
                    {"type": "text", "text": "Reading it."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "read",
                        "input": {"path": "a.py"},
                    },
                    {"type": "tool_use", "id": "toolu_2", "name": "shot", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1 é"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "the screen"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": PNG,
                                },
                            },
                        ],
                    },
                    {"type": "text", "text": "Go on."},
                ],
            },
        ],
        "tools": [
            {
                "name": "read",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
            {
                "name": "shot",
                "input_schema": {"type": "object"},
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
        "metadata": {"user_id": "u-1"},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "stream": True,
        "service_tier": "auto",  # Anthropic's own: accepted, not sent on
    }
    assert chat(body) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "You are a coder."},
                    {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "user", "content": "Fix the test."},
            {
                "role": "assistant",
                "content": "Reading it.",
                "tool_calls": [
                    {
                        "id": "toolu_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                    },
                    {
                        "id": "toolu_2",
                        "type": "function",
                        "function": {"name": "shot", "arguments": "{}"},
                    },
                ],
                "thinking_blocks": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "sig1"}
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": "x = 1 é"},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "the screen"},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    {"type": "text", "text": "Go on."},
                ],
            },
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                    "description": "Read a file",
                },
            },
            {
                "type": "function",
                "function": {"name": "shot", "parameters": {"type": "object"}},
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "stop": ["END"],
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
        "user": "u-1",
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "read"}, {"type": "function", "function": {"name": "read"}}),
    ],
)
def test_tool_choice(choice: dict[str, Any], sent: Any) -> None:
    body = chat({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
                 "tool_choice": choice})  # fmt: skip
    assert body["tool_choice"] == sent
    assert "parallel_tool_calls" not in body


def test_images_by_url_documents_and_system_messages() -> None:
    body = chat(
        {
            "model": "m",
            "max_tokens": 5,
            "system": "Be kind.",
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "And short."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                        {
                            "type": "document",
                            "title": "spec.pdf",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": "JVBE",
                            },
                        },
                        {"type": "document", "source": {"type": "text", "data": "plain words"}},
                    ],
                },
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
            ],
        }
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be kind."},
        {"role": "system", "content": "And short."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBE",
                        "filename": "spec.pdf",
                    },
                },
                {"type": "text", "text": "plain words"},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "thinking_blocks": [{"type": "redacted_thinking", "data": "xyz"}],
        },
    ]
    assert "stream" not in body


def refusal(body: dict[str, Any]) -> GatewayError:
    with pytest.raises(GatewayError) as caught:
        chat(body)
    assert caught.value.status == 400
    body = error_body(caught.value.status, caught.value.message)
    assert ErrorResponse.model_validate(body).error.type == "invalid_request_error"
    return caught.value


def hello(**fields: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "hi"}],
        **fields,
    }


def test_refusals_say_which_field_is_wrong() -> None:
    assert refusal({"model": "m", "messages": []}).message.startswith("max_tokens: Field required")
    assert "messages: List should have at least 1 item" in refusal(hello(messages=[])).message
    odd = refusal(hello(messages=[{"role": "user", "content": [{"type": "video", "url": "v"}]}]))
    assert odd.message.startswith("messages.0.content.0: Input tag 'video' found")
    assert "'video'" in odd.message
    missing = refusal(hello(messages=[{"role": "user", "content": [{"type": "text"}]}]))
    assert missing.message == "messages.0.content.0.text: Field required"
    server = refusal(hello(tools=[{"type": "web_search_20250305", "name": "web_search"}]))
    assert "web_search_20250305" in server.message and "server tools" in server.message
    assert "temperature" in refusal(hello(temperature=1.5)).message
    assert (
        "input_schema"
        in refusal(hello(tools=[{"name": "t", "input_schema": "not a schema"}])).message
    )


def test_blocks_in_the_wrong_turn_are_refused() -> None:
    tool_use = {"type": "tool_use", "id": "t", "name": "n", "input": {}}
    wrong = refusal(hello(messages=[{"role": "user", "content": [tool_use]}]))
    assert wrong.message == "messages.0.content.0: a user message cannot hold a tool_use block"
    result = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    wrong = refusal(hello(messages=[{"role": "assistant", "content": [result]}]))
    assert (
        wrong.message
        == "messages.0.content.0: an assistant message cannot hold a tool_result block"
    )
    by_url = {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}
    assert "base64" in refusal(hello(messages=[{"role": "user", "content": [by_url]}])).message


@pytest.mark.parametrize(
    ("kind", "status", "anthropic_type"),
    [
        ("invalid_request", 400, "invalid_request_error"),
        ("authentication", 401, "authentication_error"),
        ("permission", 403, "permission_error"),
        ("model_not_found", 404, "not_found_error"),
        ("too_large", 413, "request_too_large"),
        ("rate_limited", 429, "rate_limit_error"),
        ("upstream", 502, "api_error"),
        ("unavailable", 503, "overloaded_error"),
        ("server", 500, "api_error"),
    ],
)
def test_gateway_refusals_in_anthropic_words(kind: Any, status: int, anthropic_type: str) -> None:
    error = GatewayError(status, kind, "what to do")
    body = error_body(error.status, error.message, error.code)
    assert body == {"type": "error", "error": {"type": anthropic_type, "message": "what to do"}}
    if anthropic_type != "request_too_large":  # a type the SDK's model does not list
        parsed = ErrorResponse.model_validate(body)  # the SDK's own model of the error
        assert parsed.error.type == anthropic_type


def test_other_statuses() -> None:
    assert error_type(402) == "billing_error"
    assert error_type(418) == "invalid_request_error"
    assert error_type(599) == "api_error"
    assert error_type(ERROR_STATUS["overloaded_error"]) == "overloaded_error"


def test_nul_and_lone_surrogates_are_kept_as_sent() -> None:
    text = "a\x00b caf\udce9"
    body = chat(
        hello(system=text, messages=[{"role": "user", "content": [{"type": "text", "text": text}]}])
    )
    assert body["messages"] == [
        {"role": "system", "content": text},
        {"role": "user", "content": text},
    ]
