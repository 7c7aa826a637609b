"""The core of the gateway: one agent's request, sent upstream and recorded as an ``llm.call``.

Every protocol (``openai_protocol``, ``anthropic_protocol``) translates its request into a
``ChatRequest`` (OpenAI's chat-completions shape: ``messages``, ``tools`` as OpenAI function
tools, the rest of the parameters in ``params``), and calls ``ExternalCalls``:

- ``await calls.complete(session_id, request) -> LlmReply``: the recorded call (``reply.call``
  is the ``llm.call``: response, usage, cost) and the parsed answer (content, tool calls,
  finish reason); raises ``GatewayError`` when the model failed for good or answered nothing
  usable;
- ``calls.stream(session_id, request) -> CallStream``: the call runs in a task of its own; the
  stream yields each chunk as an OpenAI ``chat.completion.chunk`` dict as it arrives, then
  ends with ``stream.reply`` (the recorded call) or ``stream.error`` (a ``GatewayError``) set.
  ``stream.cut(why)`` stops it (the client went away): the call is still recorded, with what
  came, as ``error_kind="cut"``.

Both go through ``app.llm.LlmGateway`` (retries, masking, the prompt stored once per message,
the same ``llm.call`` Chronicle's own agent records), one per upstream model, so verify, the
analytics views and the page's model-call view read these calls unchanged.

Parameters: those of OpenAI's chat completions (``PASSED``) go to litellm as they came; any
other key goes in ``extra_body`` (the provider gets it in the request's JSON), so nothing a
client sends can steer litellm itself (``api_base``, ``api_key``, ``mock_response``, ...).
They are the call's recorded ``params`` and part of its fingerprint (``stream`` is not: a
streamed call records ``"stream": true`` beside them), so a replay fingerprints a request
as recorded with ``LlmGateway.prepare(request.messages, request.tools,
params=upstream_params(request.params))`` of a gateway of the same upstream model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from app.config import Settings
from app.external.errors import ErrorKind, GatewayError
from app.external.limit_guard import LimitGuard
from app.external.models import ModelRoutes
from app.llm import LlmError, LlmGateway, LlmReply
from app.store import EventStore

log = logging.getLogger(__name__)

#: OpenAI chat-completion parameters handed to litellm by name.
PASSED = frozenset(
    {
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "reasoning_effort",
        "response_format",
        "seed",
        "service_tier",
        "stop",
        "store",
        "temperature",
        "tool_choice",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)

#: Status the agent gets for a model failure of each kind (``app.llm.errors``).
_UPSTREAM_STATUS = {
    "rate_limited": 429,
    "quota": 429,
    "context_window": 400,
    "bad_request": 400,
    "unavailable": 503,
    "not_configured": 503,
}


#: OpenAI's ``code`` for a model failure of each kind (others keep Chronicle's kind).
_OPENAI_CODES = {
    "context_window": "context_length_exceeded",
    "rate_limited": "rate_limit_exceeded",
    "quota": "insufficient_quota",
}


@dataclass(frozen=True)
class ChatRequest:
    """A chat request in OpenAI's shape, whatever protocol it came in (not copied: the
    lists are the parsed body's)."""

    #: the model the agent named (``ModelRoutes`` decides what answers it)
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    #: every other parameter the client sent (``stream`` and ``stream_options`` excepted)
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    #: the client wants the stream's usage chunk (OpenAI's ``stream_options.include_usage``)
    stream_usage: bool = False


def upstream_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters as litellm gets them: ``PASSED`` ones by name, the rest in
    ``extra_body`` (see the module's docstring)."""
    passed = {key: value for key, value in params.items() if key in PASSED}
    extra = {key: value for key, value in params.items() if key not in PASSED}
    if extra:
        passed["extra_body"] = extra
    return passed


def upstream_error(exc: LlmError) -> GatewayError:
    """A model failure (after the gateway's retries) as the agent is told it: OpenAI's code
    where it has one, which agents act on (``context_length_exceeded``: condense, retry)."""
    status = _UPSTREAM_STATUS.get(exc.kind, 502)
    kind: ErrorKind = "invalid_request"
    if status == 502:
        kind = "upstream"
    elif status == 429:
        kind = "rate_limited"
    elif status == 503:
        kind = "unavailable"
    message = f"the model failed: {exc.message}"
    if exc.kind == "context_window":  # the words clients (litellm among them) look for
        message += " (maximum context length exceeded)"
    return GatewayError(status, kind, message, code=_OPENAI_CODES.get(exc.kind, exc.kind))


def one_answer(params: dict[str, Any]) -> None:
    """``GatewayError`` 400 unless the parameters ask for one answer (``n`` 1 or none)."""
    n = params.get("n")
    if n is not None and n != 1:
        raise GatewayError(
            400,
            "invalid_request",
            "the gateway records one answer per call: n must be 1 (send n requests)",
            code="unsupported_parameter",
        )


def unusable(reply: LlmReply) -> GatewayError:
    return GatewayError(
        502, "upstream", f"the model's reply could not be used: {reply.error}", code="bad_response"
    )


class ExternalCalls:
    """The gateway's calls in one process: an ``LlmGateway`` per upstream model."""

    def __init__(self, store: EventStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.routes = ModelRoutes.of(settings)
        #: the limits each call is checked against first (app/external/limits.py)
        self.limits = LimitGuard(store, settings.gateway.limits)
        self._gateways: dict[str, LlmGateway] = {}
        from app.external.replay_serving import ReplayServing  # it imports this module

        #: replay sessions' calls, served from their recordings (``chronicle record --replay``)
        self.replays = ReplayServing(store, settings)
        #: calls streaming in tasks of their own (kept referenced until they end)
        self._running: set[asyncio.Task[Any]] = set()

    def gateway(self, model: str) -> LlmGateway:
        found = self._gateways.get(model)
        if found is None:
            config = self.settings.llm.config(
                model=model, max_concurrency=self.settings.gateway.max_concurrency
            )
            found = self._gateways[model] = LlmGateway(self.store, config)
        return found

    def _checked(self, request: ChatRequest) -> LlmGateway:
        one_answer(request.params)
        return self.gateway(self.routes.upstream(request.model))

    async def complete(self, session_id: UUID, request: ChatRequest) -> LlmReply:
        """Call the model and record the call (see the module's docstring)."""
        gateway = self._checked(request)
        served = await self.replays.serve(session_id, request, gateway.config.model)
        if served is not None:
            return served
        return await self.call_model(session_id, gateway, request)

    async def call_model(
        self, session_id: UUID, gateway: LlmGateway, request: ChatRequest
    ) -> LlmReply:
        """Send ``request`` upstream through ``gateway`` within the session's and its owner's
        limits, and record it (a failure too); ``GatewayError`` when the model failed for good
        or answered nothing usable. ``complete`` without the routing and the replays: the
        playground (``app.external.playground``) names its model as a session does."""
        params = upstream_params(request.params)
        admission = await self.limits.admit(
            session_id, gateway, request.messages, request.tools, params, stream=False
        )
        try:
            reply = await gateway.complete(
                session_id, request.messages, request.tools, params=params
            )
        except LlmError as exc:
            raise upstream_error(exc) from None
        await admission.spent(reply.call.cost_usd)
        if reply.error is not None:
            raise unusable(reply)
        return reply

    def stream(self, session_id: UUID, request: ChatRequest) -> CallStream:
        """Start the call, streamed (see the module's docstring)."""
        gateway = self._checked(request)
        params = upstream_params(request.params)

        async def call(on_chunk: Callable[[Any], Awaitable[None]]) -> LlmReply:
            served = await self.replays.serve(session_id, request, gateway.config.model, on_chunk)
            if served is not None:
                return served
            admission = await self.limits.admit(
                session_id, gateway, request.messages, request.tools, params, stream=True
            )
            reply = await gateway.complete(
                session_id, request.messages, request.tools, params=params, on_chunk=on_chunk
            )
            await admission.spent(reply.call.cost_usd)
            return reply

        stream = CallStream()
        task = asyncio.create_task(stream.run(call))
        stream.task = task
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return stream

    async def close(self) -> None:
        """Let the streams in flight end (their calls are recorded) at shutdown, and the
        replays' served calls be written."""
        for task in list(self._running):
            task.cancel("the server is shutting down")
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        await self.replays.close()


_END = object()


class CallStream:
    """A streamed call in flight (see ``ExternalCalls.stream``)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task: asyncio.Task[Any] | None = None
        self.reply: LlmReply | None = None
        self.error: GatewayError | None = None
        #: chunks handed on so far
        self.chunks = 0

    async def run(
        self, call: Callable[[Callable[[Any], Awaitable[None]]], Awaitable[LlmReply]]
    ) -> None:
        try:
            reply = await call(self._on_chunk)
            if reply.error is not None:
                self.error = unusable(reply)
            else:
                self.reply = reply
        except LlmError as exc:
            self.error = upstream_error(exc)
        except GatewayError as exc:  # refused (a replay that diverged, a limit)
            self.error = exc
        except asyncio.CancelledError:
            self.error = GatewayError(499, "server", "the call was cut")
        except Exception:
            log.exception("a streamed gateway call failed")
            self.error = GatewayError(500, "server", "the gateway failed; see the server's log")
        finally:
            self._queue.put_nowait(_END)

    async def _on_chunk(self, chunk: Any) -> None:
        self.chunks += 1
        self._queue.put_nowait(chunk_dict(chunk))

    def cut(self, why: str) -> None:
        """Stop the call (its client went away): while the model streams, it is recorded
        with what came (``cut``); once the model has finished, it is recorded whole."""
        if self.task is not None and not self.task.done():
            self.task.cancel(why)

    async def ended(self) -> None:
        """Until the call is recorded (or failed)."""
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            item = await self._queue.get()
            if item is _END:
                self._queue.put_nowait(_END)  # a second reader ends too
                return
            yield item


def chunk_dict(chunk: Any) -> dict[str, Any]:
    """A litellm stream chunk as the OpenAI ``chat.completion.chunk`` it stands for."""
    raw = chunk.model_dump(exclude_none=True) if hasattr(chunk, "model_dump") else dict(chunk)
    choices = []
    for choice in raw.get("choices") or []:
        delta = {
            key: value
            for key, value in (choice.get("delta") or {}).items()
            if key in ("role", "content", "tool_calls", "reasoning_content", "refusal")
        }
        choices.append(
            {
                "index": choice.get("index", 0),
                "delta": delta,
                "finish_reason": choice.get("finish_reason"),
                **({"logprobs": choice["logprobs"]} if choice.get("logprobs") else {}),
            }
        )
    shaped: dict[str, Any] = {
        "id": raw.get("id"),
        "object": "chat.completion.chunk",
        "created": raw.get("created"),
        "model": raw.get("model"),
        "choices": choices,
    }
    if raw.get("usage"):
        shaped["usage"] = raw["usage"]
    if raw.get("system_fingerprint"):
        shaped["system_fingerprint"] = raw["system_fingerprint"]
    return shaped
