"""LlmGateway: every model call goes through here and is recorded as one llm.call event.

It applies the retry policy (429 honouring Retry-After, 5xx, connection errors and timeouts;
never 400/401/403/404 or a context-window error), a concurrency limit per model, and stores
each prompt message once, by content hash, before appending the event.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.events import LlmCall, LlmResponse, LlmUsage, ToolCall
from app.events.canonical import canonical_json
from app.llm.config import LlmConfig
from app.llm.errors import LlmError
from app.llm.fingerprint import content_hash, fingerprint, stable_hash
from app.llm.retry import Failure, backoff, classify
from app.llm.text_tools import parse_tool_calls, to_prompt_messages
from app.store import EventStore, RecordedEvent


class LlmReply(BaseModel):
    """What the agent gets back: the llm.call (recorded, or for the caller to append together
    with what it decides) and the parsed answer."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    call: LlmCall
    event: RecordedEvent | None
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price fetch at import
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LlmGateway:
    def __init__(self, store: EventStore, config: LlmConfig) -> None:
        self.store = store
        self.config = config
        self._limits: dict[str, asyncio.Semaphore] = {}
        self._native: bool | None = config.native_tool_calling
        # Messages of a conversation come back step after step as the same objects (the agent
        # keeps them); hashing each only once keeps a step's cost flat as a session grows.
        self._hashes: dict[int, tuple[dict[str, Any], str, str]] = {}
        self._stored: set[str] = set()
        self._masks: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._tools_masked: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None

    def _limit(self) -> asyncio.Semaphore:
        return self._limits.setdefault(
            self.config.model, asyncio.Semaphore(self.config.max_concurrency)
        )

    def native_tool_calling(self) -> bool:
        if self._native is None:
            litellm = _import_litellm()
            try:
                self._native = bool(litellm.supports_function_calling(model=self.config.model))
            except Exception:  # unknown to litellm's map: describe tools in the prompt
                self._native = False
        return self._native

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.config.temperature}
        if self.config.max_output_tokens:
            params["max_tokens"] = self.config.max_output_tokens
        return params

    async def complete(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
    ) -> LlmReply:
        """Call the model and record the call; raise ``LlmError`` when it failed for good.

        ``on_retry(failure, wait)`` hears about each retryable failure before the wait. With
        ``record=False`` a successful call is returned unrecorded, for the caller to append in
        one batch with its consequences (a failed call is always recorded here).
        """
        native = self.native_tool_calling()
        messages = [self._masked(message) for message in messages]
        tools = self._masked_tools(tools)
        sent = messages if native or not tools else to_prompt_messages(messages, tools)
        params = self._params()
        hashed = [self._hash(message) for message in messages]
        tools_entry = {"tools": tools}
        tools_hash = content_hash(tools_entry)
        prompt_hashes = [content for content, _ in hashed]
        request_fingerprint = fingerprint(
            self.config.model, [stable for _, stable in hashed], tools_hash, params
        )
        storing = asyncio.create_task(
            self._store_messages([*messages, tools_entry], [*prompt_hashes, tools_hash])
        )
        started = time.monotonic()
        attempts = 0

        def call_event(**outcome: Any) -> LlmCall:
            """The llm.call for this request, with how it ended (a response, or an error)."""
            return LlmCall(
                model=self.config.model,
                params={**params, "base_url": self.config.base_url},
                fingerprint=request_fingerprint,
                prompt=prompt_hashes,
                tools=tools_hash,
                tool_calling="native" if native else "prompt",
                latency_ms=(time.monotonic() - started) * 1000,
                attempts=attempts,
                cause=cause,
                **outcome,
            )

        async with self._limit():
            while True:
                attempts += 1
                try:
                    response = await self._call(sent, tools if native else [], params)
                    break
                except Exception as exc:
                    failure = classify(exc)
                    failure = failure._replace(message=self.store.masker.mask_text(failure.message))
                    if not failure.retryable or attempts > self.config.retries:
                        await storing
                        await self.store.append(session_id, [call_event(error=failure.message)])
                        raise LlmError(failure.kind, failure.message, attempts=attempts) from exc
                    wait = backoff(attempts, self.config.retry_min_wait, self.config.retry_max_wait)
                    if failure.retry_after is not None:
                        wait = min(
                            max(wait, failure.retry_after),
                            max(self.config.retry_max_wait, failure.retry_after),
                        )
                    if on_retry is not None:
                        await on_retry(failure, wait)
                    await asyncio.sleep(wait)
        await storing  # stored before the event that names them
        content, tool_calls, finish, usage, cost = self._read(response, tools, native)
        answer = LlmResponse(content=content, tool_calls=tool_calls, finish_reason=finish)
        call = call_event(response=answer, usage=usage, cost_usd=cost)
        event = None
        if record:
            [event] = await self.store.append(session_id, [call])
        return LlmReply(
            call=call, event=event, content=content, tool_calls=tool_calls, finish_reason=finish
        )

    async def _call(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
    ) -> Any:
        litellm = _import_litellm()
        config = self.config
        extra: dict[str, Any] = {}
        if config.input_cost_per_token is not None:
            extra["input_cost_per_token"] = config.input_cost_per_token
        if config.output_cost_per_token is not None:
            extra["output_cost_per_token"] = config.output_cost_per_token
        return await litellm.acompletion(
            model=config.model,
            messages=messages,
            tools=tools or None,
            api_base=config.base_url,
            api_key=config.api_key.get_secret_value() if config.api_key else None,
            api_version=config.api_version,
            timeout=config.timeout,
            num_retries=0,
            max_retries=0,
            **params,
            **extra,
        )

    def _read(
        self, response: Any, tools: list[dict[str, Any]], native: bool
    ) -> tuple[str | None, list[ToolCall], str | None, LlmUsage, float | None]:
        choice = response.choices[0]
        message = choice.message
        content = message.content
        calls = [
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
            for call in (getattr(message, "tool_calls", None) or [])
        ]
        if not native and tools and content:
            content, calls = parse_tool_calls(content, tools)
        raw_usage = getattr(response, "usage", None)
        details = getattr(raw_usage, "prompt_tokens_details", None)
        usage = LlmUsage(
            prompt_tokens=getattr(raw_usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(raw_usage, "completion_tokens", 0) or 0,
            total_tokens=getattr(raw_usage, "total_tokens", 0) or 0,
            cached_tokens=getattr(details, "cached_tokens", 0) or 0,
        )
        return content, calls, choice.finish_reason, usage, self._cost(response, usage)

    def _cost(self, response: Any, usage: LlmUsage) -> float | None:
        config = self.config
        if config.input_cost_per_token is not None or config.output_cost_per_token is not None:
            return usage.prompt_tokens * (config.input_cost_per_token or 0) + (
                usage.completion_tokens * (config.output_cost_per_token or 0)
            )
        try:
            return float(_import_litellm().completion_cost(completion_response=response))
        except Exception:  # a model litellm has no price for
            return None

    def _masked(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message with known secrets masked (the same object when it holds none).

        Prompts are built from the log, which is masked already; this also covers what did
        not come from the log (system prompt, tool descriptions), so a secret reaches
        neither the model nor ``llm_messages``. Computed once per message object.
        """
        known = self._masks.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        masker = self.store.masker
        masked = message
        if masker and masker.leaks_into_json(canonical_json(message)):
            masked = masker.mask_value(message)
        self._masks[id(message)] = (message, masked)
        return masked

    def _masked_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._tools_masked is not None and self._tools_masked[0] is tools:
            return self._tools_masked[1]
        masked = [self._masked(tool) for tool in tools]
        self._tools_masked = (tools, masked)
        return masked

    def _hash(self, message: dict[str, Any]) -> tuple[str, str]:
        """(content hash, stable hash) of a message, computed once per message object."""
        known = self._hashes.get(id(message))
        if known is not None and known[0] is message:
            return known[1], known[2]
        content, stable = content_hash(message), stable_hash(message)
        self._hashes[id(message)] = (message, content, stable)
        return content, stable

    async def _store_messages(self, messages: list[dict[str, Any]], hashes: list[str]) -> None:
        """Store the messages this gateway has not stored yet (the store ignores repeats)."""
        new = [(h, m) for h, m in zip(hashes, messages, strict=True) if h not in self._stored]
        if not new:
            return
        await self.store.put_messages([h for h, _ in new], [canonical_json(m) for _, m in new])
        self._stored.update(h for h, _ in new)
