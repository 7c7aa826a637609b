"""LlmGateway: every model call goes through here and is recorded as one llm.call event.

It applies the retry policy (429 honouring Retry-After, 5xx, connection errors and timeouts;
never 400/401/403/404 or a context-window error), a concurrency limit per model, and stores
each prompt message once, by content hash, before appending the event.

A reply that came back but cannot be used (no choices, an HTML page with status 200, JSON
that is not a chat completion) is not an exception: it is returned, and recorded, as an
``llm.call`` with ``error`` and ``error_kind="bad_response"``, so the paid call is never
lost and the agent can tell the model and go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.events import LlmCall, LlmResponse, LlmUsage, ToolCall
from app.events.canonical import canonical_json
from app.events.llm import CUT
from app.llm.call_in_progress import CallInProgress
from app.llm.call_log import CallLog
from app.llm.config import LlmConfig
from app.llm.cost import litellm_cost
from app.llm.direct import Direct, call_directly
from app.llm.direct_stream import stream_directly
from app.llm.errors import LlmError
from app.llm.fingerprint import PromptDigest, content_hash, stable_hash
from app.llm.images import has_images, vision_by_default, without_images
from app.llm.litellm_logging import without_prompt_copies
from app.llm.reply import read_reply
from app.llm.retry import Failure, backoff, classify
from app.llm.stored_keys import StoredKeys
from app.llm.streaming import OnChunk, assembled, relayed
from app.llm.text_tools import to_prompt_messages
from app.llm.unread import quiet_odd_count_warnings, unconverted_reply
from app.llm.wire import for_the_wire
from app.store import RecordedEvent


class LlmReply(BaseModel):
    """What the agent gets back: the llm.call (recorded, or for the caller to append together
    with what it decides) and the parsed answer, or ``error`` when the reply was unusable."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    call: LlmCall
    event: RecordedEvent | None
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    error: str | None = None
    #: prompt messages (and the tool list) the unrecorded ``call`` names that may not be
    #: stored yet, sha256 hex -> canonical JSON: append them with the call
    #: (``store.append(..., messages=reply.messages)``), in the same transaction
    messages: dict[str, str] = {}


class PreparedRequest(NamedTuple):
    """A request as recorded (see ``LlmGateway.prepare``).

    ``messages``, ``prompt`` and ``wire`` are the gateway's own lists, which the next request
    of the same conversation extends in place (so a step does not copy the whole prompt):
    they hold this request's ``size`` messages first; read them up to it, never change them.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    #: content hashes of the messages, as the llm.call's ``prompt`` names them
    prompt: list[str]
    tools_hash: str
    fingerprint: str
    #: the messages as they are sent (``wire.for_the_wire`` of each of ``messages``)
    wire: list[dict[str, Any]]
    #: how many messages this request has (the lists above may have more: see the class)
    size: int
    #: how many of the first messages are stored already (by an earlier request)
    stored: int = 0
    #: how many messages of the previous llm.call's prompt this one begins with (None: the
    #: llm.call lists the whole prompt), as the llm.call's ``prompt_kept``
    kept: int | None = None

    def recorded_prompt(self) -> list[str]:
        """The llm.call's ``prompt``: the hashes after the ``kept`` ones (a list of its own)."""
        return self.prompt[self.kept or 0 : self.size]

    def sent(self) -> list[dict[str, Any]]:
        """The messages as sent, in a list of its own (the model client may change it)."""
        return self.wire[: self.size]


class _Prompt:
    """The last request's messages as given, masked, hashed and as sent, and its digest:
    what the next request of the same conversation starts from."""

    def __init__(
        self,
        messages: list[dict[str, Any]],
        masked: list[dict[str, Any]],
        wire: list[dict[str, Any]],
        content: list[str],
        digest: PromptDigest,
        stored: int = 0,
    ) -> None:
        self.messages = messages
        self.masked = masked
        self.wire = wire
        self.content = content
        self.digest = digest
        self.stored = stored
        #: what its llm.call records: fingerprint, prompt_kept and prompt
        self.recorded: tuple[str, int | None, list[str]] = ("", None, [])
        self.tools_hash = ""

    def recorded_as(self, previous: Mapping[str, Any] | None) -> bool:
        """Whether ``previous``, the payload of the log's last llm.call, is this request's."""
        return (
            previous is not None
            and (
                previous.get("fingerprint"),
                previous.get("prompt_kept"),
                previous.get("prompt"),
            )
            == self.recorded
        )

    def continued_by(self, messages: list[dict[str, Any]]) -> bool:
        """Whether ``messages`` begin with this prompt's messages; if so, its ``messages`` are
        extended to them (in place: the whole list is compared, not copied)."""
        count = len(self.messages)
        if len(messages) < count:
            return False
        self.messages += messages[count:]
        if self.messages == messages:  # identical items compare without being touched
            return True
        del self.messages[count:]
        return False

    def kept_by(self, content: list[str], previous: Mapping[str, Any] | None) -> int | None:
        """How many of its messages a prompt of ``content`` hashes begins with, when the
        ``previous`` llm.call of the log (its payload) is this request's; else None."""
        if not self.recorded_as(previous):
            return None
        count = len(self.content)
        if content[:count] == self.content:
            return count
        return next(
            (i for i, (a, b) in enumerate(zip(content, self.content, strict=False)) if a != b),
            min(len(content), count),
        )


#: Added to a refused request that offered tools natively and whose refusal mentions tools.
NATIVE_TOOLS_HINT = (
    "; if this model or server cannot call tools natively, set llm_native_tool_calling = false "
    "(CHRONICLE_LLM_NATIVE_TOOL_CALLING=false) to describe the tools in the prompt instead"
)


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price fetch at import
    import litellm

    litellm.suppress_debug_info = True
    quiet_odd_count_warnings()
    without_prompt_copies()
    return litellm


@functools.cache
def _openai_provider(model: str, base_url: str) -> bool:
    """Does litellm call this model at this URL through the OpenAI SDK?"""
    try:
        return _import_litellm().get_llm_provider(model=model, api_base=base_url)[1] == "openai"
    except Exception:  # a model litellm cannot place: its own call says why
        return False


def _openai_compatible_client(config: LlmConfig) -> Any:
    """The SDK client for an OpenAI-compatible server (``app.llm.openai_client``: its tool
    calls' arguments read as text), or None: litellm's own client."""
    if not (config.base_url and config.api_key and _openai_provider(config.model, config.base_url)):
        return None
    from app.llm.openai_client import client_for  # the SDK loads with litellm, not before

    return client_for(config.base_url, config.api_key.get_secret_value())


def preload_client() -> None:
    """Import litellm now, in the calling thread (seconds of CPU: call it in a thread of
    its own). A worker does so as it starts, so that a session it takes over from a dead
    worker does not wait for the import before its next model call."""
    _import_litellm()


def native_by_default(model: str) -> bool:
    """Native tool calling unless litellm's model map says this model cannot call tools.

    A model the map does not know (any name behind an OpenAI-compatible base URL: vLLM,
    llama.cpp, Ollama all serve ``tools``; a model newer than the map) is called natively;
    describing tools in the prompt is for models known to lack it, or by configuration.
    """
    litellm = _import_litellm()
    try:
        known = litellm.get_model_info(model=model)
    except Exception:  # not in litellm's map
        return True
    return known.get("supports_function_calling") is not False


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    """Whether two lists hold the same objects in the same order (not merely equal ones)."""
    return a is b or (len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)))


class LlmGateway:
    def __init__(self, store: CallLog, config: LlmConfig) -> None:
        self.store = store
        self.config = config
        self._limits: dict[str, asyncio.Semaphore] = {}
        self._native: bool | None = config.native_tool_calling
        self._vision: bool | None = config.vision
        # Messages of a conversation come back step after step as the same objects (the agent
        # keeps them): the last request (``_prompt``) keeps each one's masked form, hash and
        # wire form, and nothing else does (a cache per message would grow with the session).
        self._stored = StoredKeys()  # the recent ones: it is asked about those
        #: messages given to a caller to store (``unstored``): content hash -> message id
        self._handed: dict[str, int] = {}
        self._tools_masked: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._prompt: _Prompt | None = None
        self._texts: dict[int, tuple[dict[str, Any], str]] = {}
        self._tools_hash: tuple[list[dict[str, Any]], str] | None = None
        self._tools_wire: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._client_loaded = False
        #: streamed calls' recordings in flight (``_shielded``)
        self._recordings: set[asyncio.Future[Any]] = set()
        #: the answering models litellm has no price for (``app.llm.cost``)
        self._unpriced: set[str] = set()
        #: calls answered by the direct path (``app.llm.direct``), not through litellm
        self.direct_answers = 0

    async def load_client(self) -> None:
        """Import litellm in a thread, once: its import takes seconds of CPU, which on the
        event loop would stall every other task of the process (subscriptions, the executor,
        other sessions) for as long. A caller that wants a step's clock to exclude it calls
        this first."""
        if not self._client_loaded:
            await asyncio.to_thread(_import_litellm)
            self._client_loaded = True

    def _limit(self) -> asyncio.Semaphore:
        return self._limits.setdefault(
            self.config.model, asyncio.Semaphore(self.config.max_concurrency)
        )

    def native_tool_calling(self) -> bool:
        """Whether tools go to the model natively (``tools``) or are described in the prompt:
        as configured, else ``native_by_default``."""
        if self._native is None:
            self._native = native_by_default(self.config.model)
        return self._native

    def _endpoint(self) -> str | None:
        """The address the calls go to, for messages: the base URL or the provider's own."""
        if self.config.base_url:
            return self.config.base_url
        try:
            return _import_litellm().get_llm_provider(self.config.model)[3] or None
        except Exception:
            return None

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.config.temperature}
        if self.config.max_output_tokens:
            params["max_tokens"] = self.config.max_output_tokens
        return params

    def prepare(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        previous: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> PreparedRequest:
        """The request as it is recorded: messages and tools masked (images left out for a
        model that takes none), their hashes and the request's fingerprint. Replay prepares
        each request with this too, so its fingerprints are computed exactly as recorded.

        A conversation grows at the end: when ``messages`` begins with the previous request's
        messages, only the new ones are masked and hashed, and the fingerprint goes on from
        the previous one's (``PromptDigest``), so a step costs what it added. When
        ``previous`` (the payload of the log's last llm.call) is the previous request's, the
        llm.call names only the messages after those it keeps of it (``prompt_kept``).

        ``params`` are the request's parameters as a client sent them (the model gateway for
        external agents): they replace the configured ones (temperature, max_tokens)."""
        prompt = base = self._prompt
        recorded = base is not None and base.recorded_as(previous)
        if base is not None and recorded:
            self._recorded_with_messages(base)
        kept = len(prompt.messages) if prompt is not None else 0
        before = None  # a conversation that does not go on from the last request
        if prompt is None or not prompt.continued_by(messages):
            before, kept = prompt, 0
            prompt = _Prompt(list(messages), [], [], [], PromptDigest())
        # Only the new messages are masked, hashed and converted, and appended to the last
        # request's lists (not copied into new ones): a step's cost does not grow with the
        # session.
        masked, wire, content, stable = self._fresh(prompt.messages[kept:], before)
        prompt.digest.add(stable)
        prompt.masked += masked
        prompt.wire += wire
        prompt.content += content
        self._prompt = prompt
        tools = self._masked_tools(tools)
        params = self._params() if params is None else dict(params)
        if self._tools_hash is None or self._tools_hash[0] != tools:
            self._tools_hash = (tools, content_hash({"tools": tools}))
        tools_hash = self._tools_hash[1]
        request = PreparedRequest(
            messages=prompt.masked,
            tools=tools,
            params=params,
            prompt=prompt.content,
            tools_hash=tools_hash,
            fingerprint=prompt.digest.fingerprint(self.config.model, tools_hash, params),
            wire=prompt.wire,
            size=len(prompt.content),
            stored=prompt.stored,
            kept=self._kept(base, prompt, kept if recorded else None, previous),
        )
        prompt.recorded = (request.fingerprint, request.kept, request.recorded_prompt())
        prompt.tools_hash = tools_hash
        return request

    @staticmethod
    def _kept(
        base: _Prompt | None,
        prompt: _Prompt,
        continued: int | None,
        previous: Mapping[str, Any] | None,
    ) -> int | None:
        """The request's ``prompt_kept``: when it goes on from the last request (``base``,
        whose ``continued`` messages it begins with, when its llm.call is ``previous``),
        those; else what ``_Prompt.kept_by`` finds (a prompt that started over)."""
        if base is None:
            return None
        if base is prompt:
            return continued
        return base.kept_by(prompt.content, previous)

    def _fresh(
        self, messages: list[dict[str, Any]], before: _Prompt | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], list[str]]:
        """The messages masked, as sent, and their content and stable hashes. A conversation
        that starts over (condensed) holds messages of the last request (``before``) again:
        their masked form, hash and wire form are taken from it (their stable hash is made
        again, once per start-over)."""
        earlier = {id(message): i for i, message in enumerate(before.messages)} if before else {}
        masked: list[dict[str, Any]] = []
        wire: list[dict[str, Any]] = []
        content: list[str] = []
        stable: list[str] = []
        for message in messages:
            i = earlier.get(id(message))
            if before is not None and i is not None and before.messages[i] is message:
                masked.append(before.masked[i])
                wire.append(before.wire[i])
                content.append(before.content[i])
                stable.append(stable_hash(before.masked[i]))
                continue
            masked.append(self._masked(message))
            wire.append(for_the_wire(masked[-1]))
            content_of, stable_of = self._hash(masked[-1])
            content.append(content_of)
            stable.append(stable_of)
        return masked, wire, content, stable

    def _recorded_with_messages(self, prompt: _Prompt) -> None:
        """The log holds ``prompt``'s llm.call, so its messages and tool list are stored
        (they were appended with it, or before): they need not go with the next call."""
        if prompt.stored < len(prompt.content):
            self.stored_now(prompt.content[prompt.stored :])
            prompt.stored = len(prompt.content)
        self.stored_now([prompt.tools_hash])

    def unstored(self, request: PreparedRequest) -> dict[str, str]:
        """The messages and tool list ``request`` names that this gateway has not seen stored
        (sha256 hex -> canonical JSON), to append with its llm.call (``store.append``'s
        ``messages``). Only the messages after those stored by an earlier request are looked
        at, so this costs what the step added."""
        first, size = request.stored, request.size
        hashes = [*request.prompt[first:size], request.tools_hash]
        messages = [*request.messages[first:size], {"tools": request.tools}]
        unstored: dict[str, str] = {}
        for key, message in zip(hashes, messages, strict=True):
            if key not in self._stored:
                unstored[key] = self._text(message)
                earlier = self._handed.get(key)
                if earlier is not None and earlier != id(message):  # the same text, again
                    self._texts.pop(earlier, None)
                self._handed[key] = id(message)
            else:
                # stored already: its text (made to hash it) is not needed. A client of the
                # model gateway sends every message again as a new object: kept, their texts
                # (and the messages) were never let go
                self._texts.pop(id(message), None)
        return unstored

    def stored_now(self, keys: Iterable[str]) -> None:
        """Remember ``keys`` as stored; their texts are not needed any more."""
        for key in keys:
            self._stored.add(key)
            message_id = self._handed.pop(key, None)
            if message_id is not None:
                self._texts.pop(message_id, None)

    async def store_prompt(self, request: PreparedRequest) -> None:
        """Store the request's messages and tool list once each (an llm.call names them)."""
        first, size = request.stored, request.size
        await self._store_messages(
            [*request.messages[first:size], {"tools": request.tools}],
            [*request.prompt[first:size], request.tools_hash],
        )
        self.prompt_stored(request)

    def prompt_stored(self, request: PreparedRequest) -> None:
        """Every message of ``request`` is stored: the next request starts after them."""
        if self._prompt is not None and self._prompt.content is request.prompt:
            self._prompt.stored = max(self._prompt.stored, request.size)

    async def complete(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
        previous: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        on_chunk: OnChunk | None = None,
    ) -> LlmReply:
        """Call the model and record the call; raise ``LlmError`` when it failed for good.

        A reply that came back unusable is returned with ``error`` set, not raised. With
        ``record=False`` a reply (usable or not) is returned unrecorded, for the caller to
        append in one batch with its consequences (a failed call is always recorded here).
        ``on_retry(failure, wait)`` hears about each retryable failure before the wait.
        ``previous`` is the payload of the session's last llm.call (see ``prepare``).

        ``params`` (see ``prepare``) replace the configured parameters. With ``on_chunk`` the
        call is streamed (``app.llm.streaming``): each chunk is handed to it as it arrives,
        and the assembled reply is read and recorded as any other (``params`` record
        ``"stream": true``). A failure before the first chunk is retried as usual; after it,
        the call is recorded with what came and the error. A stream stopped by cancelling
        the call after its first chunk (its client went away) is recorded with what came,
        ``error_kind="cut"``.
        """
        await self.load_client()  # before the clock starts: not part of the call's latency
        call = self._begin(session_id, messages, tools, previous, params, cause, on_chunk)
        async with self._limit():
            response = await self._attempt(call, on_retry, on_chunk, record)
        if isinstance(response, LlmReply):  # unusable: recorded as it came back
            return response
        return await self._answered(call, response, record)

    def _begin(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        previous: Mapping[str, Any] | None,
        params: Mapping[str, Any] | None,
        cause: int | None,
        on_chunk: OnChunk | None,
    ) -> CallInProgress:
        """The request prepared (``prepare``) and put as it goes on the wire: the clock starts."""
        native = self.native_tool_calling()
        request = self.prepare(messages, tools, previous, params)
        wire_messages = request.sent()  # a list of its own: the client may change it
        offered = self._on_the_wire_tools(request.tools)
        native_or_none = native or not request.tools
        recorded_params = {**request.params, "base_url": self.config.base_url}
        if on_chunk is not None:
            recorded_params["stream"] = True
        return CallInProgress(
            gateway=self,
            session_id=session_id,
            request=request,
            native=native,
            cause=cause,
            streamed=on_chunk is not None,
            sent=wire_messages if native_or_none else to_prompt_messages(wire_messages, offered),
            offering=offered if native else [],
            unstored=self.unstored(request),  # appended with the llm.call, by us or the caller
            params=recorded_params,
        )

    async def _attempt(
        self,
        call: CallInProgress,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None,
        on_chunk: OnChunk | None,
        record: bool,
    ) -> Any:
        """The model's response, attempting again what may be retried; an unusable reply is
        returned as an ``LlmReply`` (recorded unless ``record`` is False); a failure for good,
        or a cancelled call, is recorded and raised."""
        params = call.request.params
        while True:
            call.attempts += 1
            call.chunks.clear()
            try:
                if on_chunk is None:
                    return await self._call(call.sent, call.offering, params)
                return await self._streamed(call.sent, call.offering, params, call.chunks, on_chunk)
            except asyncio.CancelledError as exc:  # the run was stopped: keep the call too
                why = exc.args[0] if exc.args else "the run was cancelled"
                if call.chunks:
                    stopped = f"the stream was cut after {len(call.chunks)} chunks ({why})"
                    stop = call.event(error=stopped, error_kind=CUT, **call.partial())
                else:
                    stopped = f"interrupted before the model answered ({why})"
                    stop = call.event(error=stopped, error_kind="interrupted")
                with contextlib.suppress(Exception):  # a lost database must not hide the stop
                    await call.recorded(stop, True)
                raise
            except Exception as exc:
                failure = self._failure(exc, native_tools=call.native and bool(call.request.tools))
                unconverted = unconverted_reply(exc) if failure.kind == "bad_response" else None
                if unconverted is not None:  # read as any reply: odd counts are unknown
                    return unconverted
                if failure.kind == "bad_response":
                    reply = call.unusable(failure.message, **call.partial())
                    event = await call.recorded(reply.call, record)
                    return reply.model_copy(
                        update={"event": event, "messages": call.handed(record)}
                    )
                if not failure.retryable or call.attempts > self.config.retries or call.chunks:
                    failed = call.event(
                        error=failure.message, error_kind=failure.kind, **call.partial()
                    )
                    await call.recorded(failed, True)
                    raise LlmError(failure.kind, failure.message, attempts=call.attempts) from exc
                wait = backoff(
                    call.attempts, self.config.retry_min_wait, self.config.retry_max_wait
                )
                if failure.retry_after is not None:
                    wait = min(
                        max(wait, failure.retry_after),
                        max(self.config.retry_max_wait, failure.retry_after),
                    )
                if on_retry is not None:
                    await on_retry(failure, wait)
                await asyncio.sleep(wait)

    async def _answered(self, call: CallInProgress, response: Any, record: bool) -> LlmReply:
        """The reply read from ``response`` and its llm.call recorded (unless ``record`` is
        False: the caller appends it with what it decides)."""
        read = read_reply(response, call.request.tools, prompt_tools=not call.native)
        usage = call.usage(read.usage)
        cost = self.cost(response, usage)
        if read.problem is not None:
            reply = call.unusable(
                read.problem,
                response=LlmResponse(
                    finish_reason=read.finish_reason, id=read.response_id, model=read.response_model
                ),
                usage=usage,
                cost_usd=cost,
            )
            event = await call.recorded(reply.call, record)
            return reply.model_copy(update={"event": event, "messages": call.handed(record)})
        answer = LlmResponse(
            content=read.content,
            tool_calls=read.tool_calls,
            finish_reason=read.finish_reason,
            reasoning_content=read.reasoning_content,
            id=read.response_id,
            model=read.response_model,
        )
        answered = call.event(response=answer, usage=usage, cost_usd=cost)
        recording: Awaitable[RecordedEvent | None] = call.recorded(answered, record)
        if call.streamed:  # a stream is cut while it streams, never while recorded
            recording = self._shielded(recording)
        return LlmReply(
            call=answered,
            event=await recording,
            content=read.content,
            tool_calls=read.tool_calls,
            finish_reason=read.finish_reason,
            messages=call.handed(record),
        )

    def _shielded(self, recording: Awaitable[RecordedEvent | None]) -> Awaitable[Any]:
        """``recording`` in a task that cancelling its caller does not stop (kept referenced
        until it ends): a streamed call the model finished is recorded whole, even when its
        client is gone by then."""
        task = asyncio.ensure_future(recording)
        self._recordings.add(task)
        task.add_done_callback(self._recordings.discard)
        return asyncio.shield(task)

    def _failure(self, exc: BaseException, *, native_tools: bool) -> Failure:
        """The classified failure, its message masked and, when a refusal is about the
        natively offered tools, saying how to describe them in the prompt instead."""
        failure = classify(exc, endpoint=self._endpoint())
        message = failure.message
        if failure.kind == "bad_request" and native_tools and "tool" in message.lower():
            message += NATIVE_TOOLS_HINT
        return failure._replace(message=self.store.masker.mask_text(message))

    async def _streamed(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        chunks: list[Any],
        on_chunk: OnChunk,
    ) -> Any:
        """The model's reply streamed into ``chunks`` through ``on_chunk``, assembled."""
        streaming = {**params, "stream": True, "stream_options": {"include_usage": True}}
        await relayed(await self._call(messages, tools, streaming), chunks, on_chunk)
        return assembled(chunks)

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
        client = _openai_compatible_client(config)
        direct = None
        if client is not None:
            extra["client"] = client
            if config.direct_calls:  # app.llm.direct, app.llm.direct_stream
                direct = await self._directly(messages, tools, params)
                if direct is not None and direct.response is not None:
                    self.direct_answers += 1
                    return direct.response
                if direct is not None:  # litellm reads the upstream's answer, not asked again
                    extra["client"] = direct.client
        try:
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
        except Exception as exc:
            if direct is not None:
                direct.retimed(exc)
            raise

    async def _directly(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
    ) -> Direct | None:
        """The call made without litellm (``app.llm.direct``; a streamed one:
        ``app.llm.direct_stream``), or None: not a plain one."""
        config = self.config
        assert config.base_url is not None and config.api_key is not None
        if params.get("stream"):
            return await stream_directly(
                config.model, config.base_url, config.api_key.get_secret_value(),
                messages, tools, params, config.timeout,
            )  # fmt: skip
        return await call_directly(
            config.model, config.base_url, config.api_key.get_secret_value(),
            messages, tools, params, config.timeout, self._unpriced,
        )  # fmt: skip

    def cost(self, response: Any, usage: LlmUsage) -> float | None:
        """What the call cost: by the configured prices, else litellm's (which prices cache
        reads and writes and reasoning tokens from the usage it read, where its model map
        knows their prices). Unknown when a count it rests on is, or litellm could not read
        the reply (``response`` is then the parsed JSON, not its response object)."""
        config = self.config
        if usage.prompt_tokens is None or usage.completion_tokens is None:
            return None
        if config.input_cost_per_token is not None or config.output_cost_per_token is not None:
            return usage.prompt_tokens * (config.input_cost_per_token or 0) + (
                usage.completion_tokens * (config.output_cost_per_token or 0)
            )
        if isinstance(response, dict):
            return None
        return litellm_cost(response, self._unpriced)

    def _masked(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message with known secrets masked (the same object when it holds none).

        Prompts are built from the log, which is masked already; this also covers what did
        not come from the log (system prompt, tool descriptions), so a secret reaches
        neither the model nor ``llm_messages``. Computed once per message of a conversation
        (the last request keeps it: ``_fresh``).
        """
        masker = self.store.masker
        masked = message
        if masker and masker.leaks_into_json(self._text(message)):
            masked = masker.mask_value(message)
        # Recorded as sent: the note, not the image. Asked only when there is an image, so a
        # prompt without one never waits for litellm's model map (a replay never imports it).
        if has_images(masked) and not self.takes_images():
            masked = without_images(masked, self.config.model)
        if masked is not message:  # the text of what is sent is made when it is needed
            self._texts.pop(id(message), None)
        return masked

    def takes_images(self) -> bool:
        """Whether image parts go to the model: as configured, else ``vision_by_default``."""
        if self._vision is None:
            litellm = _import_litellm()
            try:
                info = dict(litellm.get_model_info(model=self.config.model))
            except Exception:  # not in litellm's map
                info = None
            self._vision = vision_by_default(info)
        return self._vision

    def _masked_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools masked, as the same list while the tools are the same objects: an agent
        builds a new list of its tools each step, and a new masked list would make the tools'
        wire form (every schema walked, ~0.2 ms) be made again each step."""
        known = self._tools_masked
        if known is not None and _same_objects(known[0], tools):
            return known[1]
        masked = [self._masked(tool) for tool in tools]
        for tool in tools:  # its text was for the leak check; the list is hashed whole
            self._texts.pop(id(tool), None)
        self._tools_masked = (tools, masked)
        return masked

    def _on_the_wire_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``tools`` (masked, from ``_masked_tools``) as sent, converted once per list."""
        if self._tools_wire is None or self._tools_wire[0] is not tools:
            self._tools_wire = (tools, [for_the_wire(tool) for tool in tools])
        return self._tools_wire[1]

    def _hash(self, message: dict[str, Any]) -> tuple[str, str]:
        """(content hash, stable hash) of a message."""
        content = hashlib.sha256(self._text(message).encode()).hexdigest()  # = content_hash
        return content, stable_hash(message)

    def _text(self, message: dict[str, Any]) -> str:
        """The message's canonical JSON, made once for the leak check, its hash and its
        storing (and dropped once it is stored)."""
        known = self._texts.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        text = canonical_json(message)
        self._texts[id(message)] = (message, text)
        return text

    async def _store_messages(self, messages: list[dict[str, Any]], hashes: list[str]) -> None:
        """Store the messages this gateway has not stored yet (the store ignores repeats)."""
        new = [(h, m) for h, m in zip(hashes, messages, strict=True) if h not in self._stored]
        if not new:
            return
        await self.store.put_messages([h for h, _ in new], [self._text(m) for _, m in new])
        self.stored_now(h for h, _ in new)
        for _, message in new:
            self._texts.pop(id(message), None)
