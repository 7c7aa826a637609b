"""Reading replies of every shape, and sorting the ones that cannot be read (pure code)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import litellm
import pytest

from app.llm.gateway import native_by_default
from app.llm.reply import NO_CHOICES, read_reply
from app.llm.retry import classify, unreadable_reply

BASH = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


def body(message: dict, **extra: object) -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], **extra}


def test_no_choices_is_a_problem_with_the_usage_kept() -> None:
    # Before: response.choices[0] raised IndexError after the call was paid for.
    replies: list[dict[str, Any]] = [{"choices": []}, {"choices": None}, {}]
    for reply in replies:
        usage = {"prompt_tokens": 12, "completion_tokens": 0, "total_tokens": 12}
        read = read_reply({**reply, "usage": usage}, [], prompt_tools=False)
        assert read.problem == NO_CHOICES and read.content is None and read.tool_calls == []
        assert read.usage.prompt_tokens == 12


def test_native_calls_are_kept_when_tools_were_described_in_the_prompt() -> None:
    # Before: with tools in the prompt, native tool_calls were dropped for the text parse.
    native = {"id": "n1", "type": "function",
              "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}  # fmt: skip
    read = read_reply(body({"content": "On it.", "tool_calls": [native]}), [BASH],
                      prompt_tools=True)  # fmt: skip
    assert [(c.id, c.name) for c in read.tool_calls] == [("n1", "execute_bash")]
    assert read.content == "On it."
    text = "<function=execute_bash>\n<parameter=command>pwd</parameter>\n</function>"
    parsed = read_reply(body({"content": text}), [BASH], prompt_tools=True)
    assert [json.loads(c.arguments) for c in parsed.tool_calls] == [{"command": "pwd"}]


def test_odd_shapes_are_read_not_crashed_on() -> None:
    calls = [
        {"function": {"name": "execute_bash", "arguments": {"command": "ls"}}},  # no id, object
        {"id": "", "function": {"name": "think", "arguments": None}},  # empty id
        {"id": "x", "function": {"arguments": "{}"}},  # no name
        {"id": "x", "function": {"name": "finish", "arguments": "{}"}},  # repeated id
    ]
    usage = {"prompt_tokens": "10", "completion_tokens": 2.0, "total_tokens": "many"}
    read = read_reply(
        body({"content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}],
              "tool_calls": calls}, usage=usage),
        [], prompt_tools=False,
    )  # fmt: skip
    assert read.content == "hello"
    ids = [c.id for c in read.tool_calls]
    assert len(set(ids)) == 4 and all(ids)
    assert json.loads(read.tool_calls[0].arguments) == {"command": "ls"}
    assert read.tool_calls[1].arguments == "" and read.tool_calls[2].name == ""
    assert (read.usage.prompt_tokens, read.usage.completion_tokens) == (10, 2)
    assert read.usage.total_tokens is None  # "many" is no count: unknown, kept as sent
    assert read.usage.as_sent == usage


def test_text_with_lone_surrogates_and_nul_is_read_as_sent() -> None:
    raw = '{"choices": [{"message": {"content": "caf\\udce9 a\\u0000b"}}]}'
    read = read_reply(json.loads(raw), [], prompt_tools=False)
    assert read.content == "caf\udce9 a\x00b" and read.problem is None


def synthesized(message: str, cause: BaseException | None = None) -> Exception:
    """How litellm reports a 2xx reply it could not read: a made-up 500."""
    exc = litellm.InternalServerError(message=message, llm_provider="openai", model="m")
    exc.__cause__ = cause
    return exc


def test_an_html_page_with_status_200_is_a_bad_response_naming_the_url() -> None:
    html = synthesized(
        "OpenAIException - Empty or invalid response from LLM endpoint. Received: "
        "'<html><body>Welcome to nginx</body></html>'. Check the reverse proxy or model "
        "server configuration."
    )
    failure = classify(html, endpoint="http://models.local:8080")
    assert failure.kind == "bad_response" and not failure.retryable
    assert "http://models.local:8080" in failure.message
    assert "not JSON" in failure.message and "Welcome to nginx" in failure.message


def test_undecodable_and_malformed_replies_are_bad_responses() -> None:
    empty = synthesized("Expecting value", json.JSONDecodeError("Expecting value", "", 0))
    assert "not JSON" in (unreadable_reply(empty) or "")
    assert "an empty body" in (unreadable_reply(empty) or "")
    array = synthesized(
        "Empty or invalid response from LLM endpoint. Received: [1, 2]. Check the reverse"
    )
    assert "JSON, but not a chat completion" in (unreadable_reply(array) or "")
    shape = synthesized("litellm.APIError: LiteLLM: provider returned 'choices' that is not a list")
    assert classify(shape).kind == "bad_response"


def test_a_real_server_error_is_still_retried() -> None:
    request = httpx.Request("POST", "http://h/v1/chat/completions")
    response = httpx.Response(500, request=request, text="<html>oops</html>")
    status = httpx.HTTPStatusError("500", request=request, response=response)
    real = synthesized("Empty or invalid response from LLM endpoint. Received: 'x'. Check the")
    real.__context__ = status
    assert unreadable_reply(real) is None
    assert classify(real).kind == "unavailable" and classify(real).retryable


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("openai/my-local-model", True),  # unknown behind a base URL: vLLM, llama.cpp, Ollama
        ("hosted_vllm/qwen2.5-coder", True),
        ("openai/gpt-4o", True),
        ("deepseek/deepseek-reasoner", False),  # litellm's map: no function calling
    ],
)
def test_native_tool_calling_by_default(model: str, native: bool) -> None:
    # Before: a model unknown to litellm's map was given tools in the prompt.
    assert native_by_default(model) is native
