"""The OpenAI SDK client litellm calls an OpenAI-compatible server with: tool-call arguments
sent as a JSON object are read as the JSON text the protocol says they are.

Some servers behind an OpenAI-compatible URL (vLLM, llama.cpp, Ollama versions) send
``"arguments": {"command": "ls"}`` where the protocol has a string. The SDK builds its typed
response without validating it, so the object sat in a ``str`` field, and litellm's dump of
that response printed pydantic's five-line serializer warning on every such reply. Here the
reply's JSON is made to fit its type before the SDK builds it: each object becomes its JSON
text, what ``app.llm.reply`` made of it anyway, so the recorded call is the same.

This overrides the SDK's ``_process_response_data`` (every response it parses passes there);
tests/system/agent/test_model_output.py drives litellm and the SDK against the fake model
server with such a reply, so an upgrade that moves it fails there.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from weakref import WeakKeyDictionary

from openai import AsyncOpenAI


def _as_text(holder: Any) -> None:
    """``holder["arguments"]`` as JSON text when it is anything else (but absent)."""
    if isinstance(holder, dict):
        arguments = holder.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            holder["arguments"] = json.dumps(arguments, ensure_ascii=False, default=str)


def arguments_as_text(data: object) -> object:
    """A chat completion's JSON, each tool call's (and a legacy ``function_call``'s)
    ``arguments`` written as JSON text where it was sent as another JSON value."""
    choices = data.get("choices") if isinstance(data, dict) else None
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            _as_text(call.get("function") if isinstance(call, dict) else None)
        _as_text(message.get("function_call"))
    return data


class ArgumentsAsText(AsyncOpenAI):
    """``AsyncOpenAI`` whose chat completions hold tool-call arguments as text (see above)."""

    def _process_response_data(self, *, data: object, **kwargs: Any) -> Any:
        return super()._process_response_data(data=arguments_as_text(data), **kwargs)


#: The clients of each event loop: a client's connections belong to the loop that opened them.
_CLIENTS: WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], ArgumentsAsText]] = (
    WeakKeyDictionary()
)


def _http_client() -> Any:
    """The HTTP client litellm gives the SDK itself (its TLS and proxy settings, and the
    response type its errors read ``Retry-After`` from)."""
    from litellm.llms.openai.common_utils import BaseOpenAILLM

    return BaseOpenAILLM._get_async_http_client()


def client_for(base_url: str, api_key: str) -> ArgumentsAsText:
    """The running loop's client for this server and key, kept as litellm keeps its own, on
    litellm's HTTP client; no retries (the gateway's policy retries), litellm's timeout."""
    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    client = clients.get((base_url, api_key))
    if client is None:
        client = clients[base_url, api_key] = ArgumentsAsText(
            base_url=base_url, api_key=api_key, max_retries=0, http_client=_http_client()
        )
    return client
