"""The direct path of a streamed call: one HTTP request, the stream read by litellm's reader.

Before a stream's first chunk, litellm's ``acompletion`` does the same ~9 ms of per-call
work as for any call (``app.llm.direct``), which is most of what the gateway added to the
time to the first token. A streamed request that ``direct_body`` sends as litellm would
(``stream: true`` and its ``stream_options`` after the rest, as litellm's OpenAI handler
adds them) is sent here, on the same HTTP client, and its events are read by exactly what
litellm's OpenAI handler reads them with: the SDK's ``AsyncStream`` of
``ChatCompletionChunk`` (on the same SDK client) inside litellm's ``CustomStreamWrapper``.
So each chunk handed on is the ``ModelResponseStream`` litellm would have handed on (its
role, its held-back finish reason, its usage chunk), and a stream that fails part-way, before
or after its first chunk, fails with the error litellm's wrapper raises, from the same code.
Only litellm's logging of the call is left out (its success and failure handlers: no
callbacks are registered, see ``app.llm.litellm_logging``), as on the non-streamed direct
path.

An answer that is not a stream of events (an HTTP error, a connection that failed, a 200
whose body is not ``text/event-stream``) is read whole and handed to litellm through
``replayed_client``, as the non-streamed direct path does: its error, or its reading of that
body, is litellm's own, and the upstream is not asked twice.
"""

from __future__ import annotations

import datetime
import functools
import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from app.llm.direct import (
    Direct,
    completions_url,
    direct_body,
    direct_model,
    headers,
    http_client,
    replayed_client,
)

#: An SSE body's media type (``text/event-stream; charset=utf-8`` too).
_EVENTS = "text/event-stream"


async def open_stream(
    base_url: str, api_key: str, body: bytes, seconds: float
) -> httpx.Response | BaseException:
    """The upstream's streaming response (its headers read, its events not yet) when it is
    a 200 stream of events; else its whole answer (read and closed), or the exception the
    request raised."""
    client = http_client(base_url, api_key)
    try:
        request = client.build_request(
            "POST", completions_url(base_url), content=body, headers=headers(api_key),
            timeout=seconds,
        )  # fmt: skip
        response = await client.send(request, stream=True)
    except Exception as exc:  # handed to the SDK and litellm, which say what it was
        return exc
    if response.status_code == 200 and response.headers.get("content-type", "").startswith(_EVENTS):
        return response
    try:
        await response.aread()
    except Exception as exc:  # cut while its body was read: litellm says what it was
        return exc
    finally:
        await response.aclose()
    return response


@functools.cache
def _unlogged() -> type:
    """litellm's ``Logging`` (what its stream reader keeps the call's details in) without
    the handlers it runs as a stream ends or fails: they log to callbacks none of which are
    registered, and pricing the call again there cost ~1-10 ms of CPU per stream."""
    from litellm.litellm_core_utils.litellm_logging import Logging

    class Unlogged(Logging):  # type: ignore[misc]
        async def dispatch_success_handlers(self, *args: Any, **kwargs: Any) -> None:
            return None

        async def dispatch_attempt_failure_handlers(self, *args: Any, **kwargs: Any) -> None:
            return None

    return Unlogged


def litellm_stream(
    response: httpx.Response,
    model: str,
    base_url: str,
    api_key: str,
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
) -> Any:
    """litellm's stream of ``ModelResponseStream`` chunks over ``response``, as its OpenAI
    handler makes it of the SDK's stream (``async_streaming``)."""
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk

    from app.llm.openai_client import client_for

    options = params.get("stream_options")
    logging = _unlogged()(
        model=model, messages=messages, stream=True, call_type="acompletion",
        start_time=datetime.datetime.now(), litellm_call_id=str(uuid.uuid4()),
        function_id="direct",
    )  # fmt: skip
    logging.update_environment_variables(
        litellm_params={"api_base": base_url, "custom_llm_provider": "openai",
                        "acompletion": True},
        optional_params={key: value for key, value in params.items() if key != "extra_body"},
        model=model, custom_llm_provider="openai", stream_options=options,
    )  # fmt: skip
    read: Any = response  # (the SDK's type names its own httpx, as litellm's client is)
    events = AsyncStream(
        cast_to=ChatCompletionChunk, response=read, client=client_for(base_url, api_key)
    )
    return CustomStreamWrapper(
        completion_stream=events, model=model, custom_llm_provider="openai",
        logging_obj=logging, stream_options=options, _response_headers=dict(response.headers),
    )  # fmt: skip


async def stream_directly(
    model: str,
    base_url: str,
    api_key: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    params: Mapping[str, Any],
    seconds: float,
) -> Direct | None:
    """The streamed call made directly (see the module's docstring): its ``response`` is
    litellm's stream, to read as ``acompletion``'s; None when the request is not a plain one
    (litellm makes it, as it always did)."""
    name = direct_model(model, base_url)
    body = None if name is None else direct_body(name, messages, tools, params)
    if name is None or body is None:
        return None
    started = time.time()  # as litellm times an attempt
    answer = await open_stream(base_url, api_key, body, seconds)
    if isinstance(answer, httpx.Response) and not answer.is_closed:
        return Direct(response=litellm_stream(answer, name, base_url, api_key, messages, params))
    took = time.time() - started
    return Direct(client=replayed_client(base_url, api_key, answer), took=took)
