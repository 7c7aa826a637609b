"""Anthropic's Messages protocol, read into the OpenAI-shaped request the gateway sends on.

Claude Code and every agent built on Anthropic's SDK speak ``POST /v1/messages``; the gateway
calls models through litellm, which takes OpenAI's chat-completions shape (and turns it back
into Anthropic's for an Anthropic model, cache marks and thinking blocks included). So an
Anthropic request, once validated (``anthropic_models``), is rewritten here as the
chat-completions body the OpenAI route would have received; the reply goes back through
``anthropic_reply`` / ``anthropic_stream``; refusals in Anthropic's error shape are here
too. Pure: no I/O.

What has no OpenAI form is refused with a message (Anthropic's server tools, a document by
URL), never dropped silently, except a tool result's ``is_error`` flag (OpenAI's tool message
has no such field) and request fields only Anthropic's own service reads (``service_tier``,
``container``, ...), which are accepted and not sent on.
"""

from __future__ import annotations

import json
from typing import Any

from app.external.anthropic_models import (
    Base64Source,
    DocumentBlock,
    ImageBlock,
    MessagesRequest,
    PlainTextSource,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceTool,
    ToolParam,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
)
from app.external.calls import ChatRequest
from app.external.errors import invalid_request

# --- to chat completions ------------------------------------------------------------------


def _text_part(block: TextBlock) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": block.text}
    if block.cache_control is not None:
        part["cache_control"] = block.cache_control
    return part


def _image_part(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    url = source.url if isinstance(source, UrlSource) else _data_url(source)
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if block.cache_control is not None:
        part["cache_control"] = block.cache_control
    return part


def _data_url(source: Base64Source) -> str:
    return f"data:{source.media_type};base64,{source.data}"


def _document_part(block: DocumentBlock, where: str) -> dict[str, Any]:
    """A PDF as litellm's ``file`` part, a plain-text document as text."""
    source = block.source
    if isinstance(source, PlainTextSource):
        part: dict[str, Any] = {"type": "text", "text": source.data}
    elif isinstance(source, Base64Source):
        part = {"type": "file", "file": {"file_data": _data_url(source)}}
        if block.title:
            part["file"]["filename"] = block.title
    else:
        raise invalid_request(
            f"{where}: a document given by URL is not supported by this gateway; "
            "send it as base64 data or as text"
        )
    if block.cache_control is not None:
        part["cache_control"] = block.cache_control
    return part


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One plain text part is sent as a string (how most clients write it); anything else
    as its list of parts."""
    if len(parts) == 1 and parts[0]["type"] == "text" and set(parts[0]) == {"type", "text"}:
        text: str = parts[0]["text"]
        return text
    return parts


def _system(system: str | list[TextBlock]) -> dict[str, Any]:
    if isinstance(system, str):
        return {"role": "system", "content": system}
    return {"role": "system", "content": _content([_text_part(b) for b in system])}


def _tool_result(block: ToolResultBlock, where: str) -> tuple[dict[str, Any], list[Any]]:
    """The tool message for a result, and its images (a tool message holds text only: they
    follow in the user message)."""
    if isinstance(block.content, str):
        return {"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content}, []
    texts: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for number, part in enumerate(block.content):
        if isinstance(part, ImageBlock):
            images.append(_image_part(part))
        elif isinstance(part, DocumentBlock):
            images.append(_document_part(part, f"{where}.content.{number}"))
        else:
            texts.append(_text_part(part))
    content: str | list[dict[str, Any]] = _content(texts) if texts else ""
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": content}, images


def _user(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """A user turn: its tool results first, as tool messages (they must follow the
    assistant's calls), then the rest as one user message."""
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for number, block in enumerate(blocks):
        here = f"{where}.content.{number}"
        if isinstance(block, ToolResultBlock):
            message, images = _tool_result(block, here)
            tools.append(message)
            parts += images
        elif isinstance(block, TextBlock):
            parts.append(_text_part(block))
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
        elif isinstance(block, DocumentBlock):
            parts.append(_document_part(block, here))
        else:
            raise invalid_request(f"{here}: a user message cannot hold a {block.type} block")
    if parts or not tools:
        tools.append({"role": "user", "content": _content(parts)})
    return tools


def arguments_text(tool_input: dict[str, Any]) -> str:
    """A tool_use block's input as the JSON text of a chat-completions tool call."""
    return json.dumps(tool_input, ensure_ascii=False)


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    """An assistant turn: its text as content, its tool uses as tool calls, its signed
    thinking as litellm's ``thinking_blocks`` (an Anthropic model checks the signature).
    Unsigned thinking (a model's ``reasoning_content`` that ``anthropic_reply`` sent as a
    thinking block) is left out: no model takes it back."""
    texts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    for number, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            texts.append(_text_part(block))
        elif isinstance(block, ToolUseBlock):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": arguments_text(block.input)},
                }
            )
        elif isinstance(block, ThinkingBlock):
            if not block.signature:  # a model's reasoning this gateway passed on: no use now
                continue
            thinking.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif isinstance(block, RedactedThinkingBlock):
            thinking.append({"type": "redacted_thinking", "data": block.data})
        else:
            raise invalid_request(
                f"{where}.content.{number}: an assistant message cannot hold a {block.type} block"
            )
    message: dict[str, Any] = {"role": "assistant", "content": _content(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["thinking_blocks"] = thinking
    if message["content"] is None and not calls:
        message["content"] = ""
    return message


def _messages(request: MessagesRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system is not None and request.system != []:
        messages.append(_system(request.system))
    for number, message in enumerate(request.messages):
        where = f"messages.{number}"
        blocks = message.content
        if isinstance(blocks, str):
            messages.append({"role": message.role, "content": blocks})
        elif message.role == "system":
            texts = [b for b in blocks if isinstance(b, TextBlock)]
            if len(texts) != len(blocks):
                raise invalid_request(f"{where}: a system message holds text blocks only")
            messages.append(_system(texts))
        elif message.role == "user":
            messages += _user(blocks, where)
        else:
            messages.append(_assistant(blocks, where))
    return messages


def _tool(tool: ToolParam) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description is not None:
        function["description"] = tool.description
    converted: dict[str, Any] = {"type": "function", "function": function}
    if tool.cache_control is not None:
        converted["cache_control"] = tool.cache_control
    return converted


def _tool_choice(choice: Any) -> str | dict[str, Any]:
    if isinstance(choice, ToolChoiceAuto):
        return "auto"
    if isinstance(choice, ToolChoiceAny):
        return "required"
    if isinstance(choice, ToolChoiceTool):
        return {"type": "function", "function": {"name": choice.name}}
    return "none"


def to_chat_request(request: MessagesRequest) -> dict[str, Any]:
    """The chat-completions body that asks what ``request`` asks (see the module's doc)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request),
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    choice = request.tool_choice
    if choice is not None:
        body["tool_choice"] = _tool_choice(choice)
        if getattr(choice, "disable_parallel_tool_use", False):
            body["parallel_tool_calls"] = False
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    for name in ("temperature", "top_p", "top_k"):
        value = getattr(request, name)
        if value is not None:
            body[name] = value
    if request.metadata is not None and request.metadata.user_id is not None:
        body["user"] = request.metadata.user_id
    if request.thinking is not None:
        body["thinking"] = request.thinking.model_dump(exclude_none=True)
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def chat_request(request: MessagesRequest) -> ChatRequest:
    """The request as the gateway's core takes it (``app.external.calls``)."""
    body = to_chat_request(request)
    return ChatRequest(
        model=body.pop("model"),
        messages=body.pop("messages"),
        tools=body.pop("tools", []),
        stream=body.pop("stream", False),
        stream_usage=bool(body.pop("stream_options", None)),
        params=body,
    )


# --- errors -------------------------------------------------------------------------------

#: The statuses Anthropic's API answers each error type with.
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_BY_STATUS = {status: name for name, status in ERROR_STATUS.items()} | {
    503: "overloaded_error"  # the gateway's "down for now": what Anthropic says with 529
}


def error_type(status: int) -> str:
    """Anthropic's error type for a status the gateway answers with (an SDK picks its
    exception and whether to retry by the status; the type names it in the body)."""
    known = _BY_STATUS.get(status)
    if known is not None:
        return known
    return "api_error" if status >= 500 else "invalid_request_error"


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """The body Anthropic's API answers an error with (``code``, OpenAI's, has no place)."""
    return {"type": "error", "error": {"type": error_type(status), "message": message}}
